import Clibpq
import Foundation
import Logging

/// The one owner of a `PGconn`; `PQfinish` on deinit. Not thread-safe: libpq allows a connection on any thread,
/// but only one at a time, and `PostgresConnection` (its only user) is handed to one borrower at a time.
final class PQConnection {
    private let handle: OpaquePointer
    private let notices: PQNoticeSink

    private init(handle: OpaquePointer, notices: PQNoticeSink) {
        self.handle = handle
        self.notices = notices
        notices.install(on: handle)
    }

    deinit {
        PQfinish(handle)
    }

    /// Opens a connection with `PQconnectdbParams` (blocking). Parameters are applied in order; the first `dbname`
    /// is expanded when it is a conninfo string or URL, and later parameters override earlier ones.
    static func connect(parameters: [(String, String)], logger: Logger) throws(DatabaseError) -> PQConnection {
        let keywords = parameters.map { strdup($0.0) }
        let values = parameters.map { strdup($0.1) }
        defer {
            keywords.forEach { free($0) }
            values.forEach { free($0) }
        }
        let keywordPointers = keywords.map { UnsafePointer($0) } + [nil]
        let valuePointers = values.map { UnsafePointer($0) } + [nil]
        guard let handle = PQconnectdbParams(keywordPointers, valuePointers, 1) else {
            throw DatabaseError(code: .connectionFailed, message: "libpq could not allocate a connection")
        }
        // From here on the owner frees the handle on every path, including the throwing one.
        let connection = PQConnection(handle: handle, notices: PQNoticeSink(logger: logger))
        guard PQstatus(handle) == CONNECTION_OK else {
            throw DatabaseError(
                code: .connectionFailed,
                message: "could not connect to the database",
                serverMessage: connection.errorMessage
            )
        }
        return connection
    }

    var isOK: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Set when a statement left the connection in a protocol state this module does not drive (COPY) or ended with
    /// a FATAL error.
    private var isUnusable = false

    /// The connection must not be reused: it was left in COPY state, or the server announced it is closing it.
    var isPoisoned: Bool { isUnusable || notices.receivedFatal }

    var errorMessage: String? {
        let message = String(cString: PQerrorMessage(handle)).trimmingNewlines()
        return message.isEmpty ? nil : message
    }

    var backendPID: Int32 { PQbackendPID(handle) }

    /// The value libpq uses for a connection option (`PQconninfo`), nil if unset or unknown.
    func option(_ keyword: String) -> String? {
        guard let options = PQconninfo(handle) else { return nil }
        defer { PQconninfoFree(options) }
        var index = 0
        while let key = options[index].keyword {
            if String(cString: key) == keyword { return options[index].val.map { String(cString: $0) } }
            index += 1
        }
        return nil
    }

    var serverVersion: Int32 { PQserverVersion(handle) }

    enum TransactionStatus {
        case idle, active, inTransaction, inFailedTransaction, unknown
    }

    var transactionStatus: TransactionStatus {
        switch PQtransactionStatus(handle) {
        case PQTRANS_IDLE: return .idle
        case PQTRANS_ACTIVE: return .active
        case PQTRANS_INTRANS: return .inTransaction
        case PQTRANS_INERROR: return .inFailedTransaction
        default: return .unknown
        }
    }

    /// Reads and parses whatever the server sent while the connection sat idle, without waiting (libpq's socket is
    /// non-blocking) and without a round trip. A terminated backend sends a FATAL message, then closes the socket:
    /// either one marks the connection unusable. Returns whether it is still usable.
    func pollIdle() -> Bool {
        // The first read may stop after the FATAL message; the second one sees the end of the stream.
        for _ in 0..<2 {
            guard isOK, !isPoisoned, PQconsumeInput(handle) != 0 else { return false }
            _ = PQisBusy(handle)  // parses what arrived; an idle-time error goes to the notice receiver
        }
        return isOK && !isPoisoned
    }

    /// `PQexecParams`, text format in and out. Parameter texts are copied into one buffer that lives until the call
    /// returns. `nil` means libpq produced no result at all (out of memory or no connection).
    func execParams(_ sql: String, _ parameters: [EncodedParameter]) -> PQResult? {
        var offsets: [Int?] = []
        offsets.reserveCapacity(parameters.count)
        var storage: [CChar] = []
        for parameter in parameters {
            guard let text = parameter.text else {
                offsets.append(nil)
                continue
            }
            offsets.append(storage.count)
            storage.append(contentsOf: text.utf8.map { CChar(bitPattern: $0) })
            storage.append(0)
        }
        let types: [Oid] = parameters.map { Oid($0.oid) }
        return storage.withUnsafeBufferPointer { buffer -> PQResult? in
            let values: [UnsafePointer<CChar>?] = offsets.map { offset in
                offset.flatMap { offset in buffer.baseAddress.map { $0 + offset } }
            }
            let result = PQexecParams(handle, sql, Int32(parameters.count), types, values, nil, nil, 0)
            return result.map(PQResult.init)
        }
    }

    /// `PQexec`: may hold several statements; returns the last result (or the first error).
    func exec(_ sql: String) -> PQResult? {
        PQexec(handle, sql).map(PQResult.init)
    }

    /// The one place a libpq result becomes a `DatabaseError`. Returns the result when it succeeded.
    ///
    /// A failure after which the connection is no longer OK is `connectionLost` (keeping the server's SQLSTATE when
    /// it sent one, e.g. 57P01 from a terminated backend); other failures are `queryFailed`.
    func check(_ result: PQResult?, query: String, message: String) throws(DatabaseError) -> PQResult {
        guard let result else {
            var error = DatabaseError(
                code: isOK ? .queryFailed : .connectionLost,
                message: message,
                serverMessage: errorMessage
            )
            error.query = query
            throw error
        }
        switch result.status {
        case .commandOK, .tuplesOK, .emptyQuery:
            return result
        case .unsupported(let status):
            isUnusable = true
            var error = DatabaseError(code: .queryFailed, message: "\(message): unsupported result status \(status)")
            error.query = query
            throw error
        case .failed:
            let sqlState = result.errorField("C").map(SQLState.init(rawValue:))
            // FATAL and PANIC end the session even if libpq has not seen the socket close yet.
            let severity = result.errorField("V")
            let sessionEnded = !isOK || severity == "FATAL" || severity == "PANIC"
            if sessionEnded { isUnusable = true }
            var error = DatabaseError(
                code: sessionEnded ? .connectionLost : .queryFailed,
                message: message,
                sqlState: sqlState,
                serverMessage: result.errorField("M") ?? result.errorMessage ?? errorMessage
            )
            error.detail = result.errorField("D")
            error.hint = result.errorField("H")
            error.context = result.errorField("W")
            error.tableName = result.errorField("t")
            error.constraintName = result.errorField("n")
            error.query = query
            throw error
        }
    }
}
