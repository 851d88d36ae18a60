import Crypto
import Foundation

/// One SQL file of `migrations/`: `NNNN_name.sql`. Its statements run in one transaction, so they must not contain
/// transaction control or statements that cannot run in a transaction (`CREATE INDEX CONCURRENTLY`) — unless its
/// first line is `-- avatar-cropper: no-transaction` (`runsInTransaction`). Tables are created unqualified, in the
/// current schema (the first schema of the `search_path`).
public struct Migration: Sendable, Hashable {
    public var version: Int
    public var name: String
    public var sql: String
    /// SHA-256 (hex) of `sql` with CRLF line endings normalised to LF: an applied migration whose file changed is
    /// detected by comparing this with the recorded checksum.
    public var checksum: String

    public init(version: Int, name: String, sql: String) {
        self.init(version: version, name: name, sql: sql, checksum: Migration.checksum(of: sql))
    }

    public init(version: Int, name: String, sql: String, checksum: String) {
        self.version = version
        self.name = name
        self.sql = sql
        self.checksum = checksum
    }

    public static func checksum(of sql: String) -> String {
        var normalized: [UInt8] = []
        normalized.reserveCapacity(sql.utf8.count)
        var previousWasCR = false
        for byte in sql.utf8 {
            if previousWasCR && byte != UInt8(ascii: "\n") { normalized.append(UInt8(ascii: "\n")) }
            previousWasCR = byte == UInt8(ascii: "\r")
            if !previousWasCR { normalized.append(byte) }
        }
        if previousWasCR { normalized.append(UInt8(ascii: "\n")) }
        // Lower-case hex of SHA-256, as recorded by every earlier version of the migrator.
        return SHA256.hash(data: normalized).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// The first line that makes a migration run outside a transaction.
    public static let noTransactionMarker = "-- avatar-cropper: no-transaction"

    /// False for a migration marked `noTransactionMarker`: its statements run one by one, each on its own, so that
    /// one may be `CREATE INDEX CONCURRENTLY` (docs/ARCHITECTURE.md §4). Each statement must end with `;` at the
    /// end of a line and hold no `$$` body; make each safe to run again (a failed run is retried from the start).
    public var runsInTransaction: Bool { !sql.hasPrefix(Self.noTransactionMarker) }

    /// The statements of a migration that runs outside a transaction, comment lines dropped.
    public var statements: [String] {
        var statements: [String] = []
        var current = ""
        for line in sql.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("--") { continue }
            current += (current.isEmpty ? "" : "\n") + line
            if trimmed.hasSuffix(";") {
                statements.append(current)
                current = ""
            }
        }
        if !current.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { statements.append(current) }
        return statements
    }

    /// `0003_worker_role.sql` → version 3, name `worker_role`. At least four digits, then `_`, then letters, digits,
    /// `_` or `-`.
    static func parseFileName(_ fileName: String) -> (version: Int, name: String)? {
        guard fileName.hasSuffix(".sql") else { return nil }
        let stem = fileName.dropLast(4)
        guard let underscore = stem.firstIndex(of: "_") else { return nil }
        let digits = stem[..<underscore]
        let name = stem[stem.index(after: underscore)...]
        guard digits.count >= 4, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let version = Int(digits),
            !name.isEmpty,
            name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") })
        else { return nil }
        return (version, String(name))
    }
}
