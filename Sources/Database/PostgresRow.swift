import Foundation

/// The rows of one statement plus the number of rows it inserted, updated, deleted or returned.
public struct PostgresResult: Sendable {
    public var rows: [PostgresRow]
    /// `PQcmdTuples`: rows affected by INSERT/UPDATE/DELETE/MERGE, rows returned by SELECT; 0 otherwise.
    public var affectedRows: Int
    /// The column names, in order (empty for statements that return no rows).
    public var columnNames: [String]
    /// The server's command tag: `SELECT 1`, `INSERT 0 1`, `COMMIT`, `ROLLBACK`.
    public var commandTag: String

    init(rows: [PostgresRow], affectedRows: Int, columnNames: [String], commandTag: String) {
        self.rows = rows
        self.affectedRows = affectedRows
        self.columnNames = columnNames
        self.commandTag = commandTag
    }
}

/// The columns of a result, shared by all its rows.
final class PostgresColumns: Sendable {
    let names: [String]
    let typeOIDs: [UInt32]
    private let indexByName: [String: Int]

    init(names: [String], typeOIDs: [UInt32]) {
        self.names = names
        self.typeOIDs = typeOIDs
        var indexByName: [String: Int] = [:]
        for (index, name) in names.enumerated() where indexByName[name] == nil {
            indexByName[name] = index
        }
        self.indexByName = indexByName
    }

    func index(of name: String) -> Int? { indexByName[name] }
}

/// One row, decoded on access from the server's text format. Every accessor returns `nil` for SQL NULL and throws
/// a `decoding` error for a missing column or a value of another type. A column name that appears twice resolves to
/// the first occurrence; use the index accessors for the others.
public struct PostgresRow: Sendable {
    let columns: PostgresColumns
    let values: [String?]

    init(columns: PostgresColumns, values: [String?]) {
        self.columns = columns
        self.values = values
    }

    public var columnNames: [String] { columns.names }
    public var count: Int { values.count }

    public func isNull(_ column: String) throws(DatabaseError) -> Bool { try raw(column) == nil }
    public func isNull(_ index: Int) throws(DatabaseError) -> Bool { try raw(index) == nil }

    /// The server's text representation of any column type.
    public func text(_ column: String) throws(DatabaseError) -> String? { try raw(column) }
    public func text(_ index: Int) throws(DatabaseError) -> String? { try raw(index) }

    public func int(_ column: String) throws(DatabaseError) -> Int64? { try int(at: position(column)) }
    public func int(_ index: Int) throws(DatabaseError) -> Int64? { try int(at: checked(index)) }

    public func double(_ column: String) throws(DatabaseError) -> Double? { try double(at: position(column)) }
    public func double(_ index: Int) throws(DatabaseError) -> Double? { try double(at: checked(index)) }

    public func bool(_ column: String) throws(DatabaseError) -> Bool? { try bool(at: position(column)) }
    public func bool(_ index: Int) throws(DatabaseError) -> Bool? { try bool(at: checked(index)) }

    public func uuid(_ column: String) throws(DatabaseError) -> UUID? { try uuid(at: position(column)) }
    public func uuid(_ index: Int) throws(DatabaseError) -> UUID? { try uuid(at: checked(index)) }

    public func timestamp(_ column: String) throws(DatabaseError) -> Date? { try timestamp(at: position(column)) }
    public func timestamp(_ index: Int) throws(DatabaseError) -> Date? { try timestamp(at: checked(index)) }

    /// `bytea` columns are decoded from hex; other columns give the UTF-8 bytes of their text.
    public func bytes(_ column: String) throws(DatabaseError) -> [UInt8]? { try bytes(at: position(column)) }
    public func bytes(_ index: Int) throws(DatabaseError) -> [UInt8]? { try bytes(at: checked(index)) }

    // MARK: Decoding

    private func raw(_ column: String) throws(DatabaseError) -> String? { values[try position(column)] }
    private func raw(_ index: Int) throws(DatabaseError) -> String? { values[try checked(index)] }

    private func position(_ column: String) throws(DatabaseError) -> Int {
        guard let index = columns.index(of: column) else {
            throw DatabaseError(code: .decoding, message: "no column named \(column) in the result")
        }
        return index
    }

    private func checked(_ index: Int) throws(DatabaseError) -> Int {
        guard values.indices.contains(index) else {
            throw DatabaseError(code: .decoding, message: "column index \(index) out of range 0..<\(values.count)")
        }
        return index
    }

    private func mismatch(_ index: Int, _ type: String) -> DatabaseError {
        DatabaseError(
            code: .decoding,
            message: "column \(columns.names[index]) (type oid \(columns.typeOIDs[index])) does not hold a \(type)"
        )
    }

    private func int(at index: Int) throws(DatabaseError) -> Int64? {
        guard let text = values[index] else { return nil }
        guard let value = Int64(text) else { throw mismatch(index, "64-bit integer") }
        return value
    }

    private func double(at index: Int) throws(DatabaseError) -> Double? {
        guard let text = values[index] else { return nil }
        switch text {
        case "NaN": return .nan
        case "Infinity": return .infinity
        case "-Infinity": return -.infinity
        default:
            guard let value = Double(text), value.isFinite else { throw mismatch(index, "double") }
            return value
        }
    }

    private func bool(at index: Int) throws(DatabaseError) -> Bool? {
        guard let text = values[index] else { return nil }
        switch text {
        case "t", "true": return true
        case "f", "false": return false
        default: throw mismatch(index, "boolean")
        }
    }

    private func uuid(at index: Int) throws(DatabaseError) -> UUID? {
        guard let text = values[index] else { return nil }
        guard let value = UUID(uuidString: text) else { throw mismatch(index, "uuid") }
        return value
    }

    private func timestamp(at index: Int) throws(DatabaseError) -> Date? {
        guard let text = values[index] else { return nil }
        guard let value = PostgresTimestamp.parse(text) else { throw mismatch(index, "timestamp") }
        return value
    }

    private func bytes(at index: Int) throws(DatabaseError) -> [UInt8]? {
        guard let text = values[index] else { return nil }
        guard columns.typeOIDs[index] == PostgresOID.bytea else { return Array(text.utf8) }
        guard let value = Self.decodeHex(text) else { throw mismatch(index, "hex-encoded bytea") }
        return value
    }

    static func decodeHex(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else {
            return nil
        }
        func nibble(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity((utf8.count - 2) / 2)
        var index = 2
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }
}
