import Clibpq

/// The one owner of a `PGresult`; `PQclear` on deinit.
final class PQResult {
    private let handle: OpaquePointer

    init(_ handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        PQclear(handle)
    }

    enum Status {
        case commandOK, tuplesOK, emptyQuery
        /// COPY or pipeline states this module never starts; the connection is left in a state it cannot use.
        case unsupported(String)
        case failed
    }

    var status: Status {
        let status = PQresultStatus(handle)
        switch status {
        case PGRES_COMMAND_OK: return .commandOK
        case PGRES_TUPLES_OK, PGRES_SINGLE_TUPLE: return .tuplesOK
        case PGRES_EMPTY_QUERY: return .emptyQuery
        case PGRES_BAD_RESPONSE, PGRES_NONFATAL_ERROR, PGRES_FATAL_ERROR: return .failed
        default: return .unsupported(String(cString: PQresStatus(status)))
        }
    }

    /// The command tag (`INSERT 0 1`, `COMMIT`, `ROLLBACK`).
    var commandStatus: String {
        String(cString: PQcmdStatus(handle))
    }

    func errorField(_ code: Unicode.Scalar) -> String? {
        guard let value = PQresultErrorField(handle, Int32(code.value)) else { return nil }
        let string = String(cString: value)
        return string.isEmpty ? nil : string
    }

    /// `PQresultErrorMessage`, trimmed; used when the server sent no primary message field (client-side errors).
    var errorMessage: String? {
        let message = String(cString: PQresultErrorMessage(handle)).trimmingNewlines()
        return message.isEmpty ? nil : message
    }

    /// Copies the rows out of libpq's memory (text format).
    func postgresResult() -> PostgresResult {
        let rowCount = Int(PQntuples(handle))
        let columnCount = Int(PQnfields(handle))
        var names: [String] = []
        var types: [UInt32] = []
        names.reserveCapacity(columnCount)
        types.reserveCapacity(columnCount)
        for column in 0..<Int32(columnCount) {
            names.append(PQfname(handle, column).map { String(cString: $0) } ?? "")
            types.append(UInt32(PQftype(handle, column)))
        }
        let columns = PostgresColumns(names: names, typeOIDs: types)
        var rows: [PostgresRow] = []
        rows.reserveCapacity(rowCount)
        for row in 0..<Int32(rowCount) {
            var values: [String?] = []
            values.reserveCapacity(columnCount)
            for column in 0..<Int32(columnCount) {
                if PQgetisnull(handle, row, column) != 0 {
                    values.append(nil)
                } else {
                    let length = Int(PQgetlength(handle, row, column))
                    let bytes = UnsafeRawPointer(PQgetvalue(handle, row, column)!)
                    let buffer = UnsafeRawBufferPointer(start: bytes, count: length)
                    values.append(String(decoding: buffer, as: UTF8.self))
                }
            }
            rows.append(PostgresRow(columns: columns, values: values))
        }
        let affected = Int(String(cString: PQcmdTuples(handle))) ?? 0
        return PostgresResult(rows: rows, affectedRows: affected, columnNames: names, commandTag: commandStatus)
    }
}

extension String {
    func trimmingNewlines() -> String {
        var result = Substring(self)
        while let last = result.last, last.isWhitespace { result.removeLast() }
        while let first = result.first, first.isWhitespace { result.removeFirst() }
        return String(result)
    }
}
