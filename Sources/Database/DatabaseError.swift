/// Every failure of this module, except a transaction's, which is a `PostgresTransactionError` holding these.
///
/// `description` is safe to log: the code, the SQLSTATE, this module's own summary and the server's primary
/// message (left out for data exceptions, class 22, whose messages quote input values). It never contains
/// parameter values. `debugDescription` adds the server's detail, hint and context and the query text, which may
/// contain user data: keep it out of logs that leave the machine.
public struct DatabaseError: Error, CustomStringConvertible, CustomDebugStringConvertible {
    /// What went wrong, for callers to switch on. A struct with static members so new codes can be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case connectionFailed, connectionLost, queryFailed, invalidParameter, decoding
            case transactionBegin, transactionCommit, transactionRollback, migration, clientShutdown
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Could not open a connection (refused, timeout, authentication, unknown database, …). Transient.
        public static let connectionFailed = Code(.connectionFailed)
        /// The connection broke during or before a statement (server restart, terminated backend, network).
        /// Transient. Whether the statement took effect is unknown.
        public static let connectionLost = Code(.connectionLost)
        /// The server rejected a statement; see `sqlState`.
        public static let queryFailed = Code(.queryFailed)
        /// A bind parameter cannot be sent (a string with a NUL character, too many parameters). Nothing was sent.
        public static let invalidParameter = Code(.invalidParameter)
        /// A result column is missing or does not hold the requested type.
        public static let decoding = Code(.decoding)
        /// `BEGIN` failed, or `transaction` was called inside a transaction.
        public static let transactionBegin = Code(.transactionBegin)
        /// `COMMIT` failed or the server rolled the transaction back instead (a statement in it had failed).
        public static let transactionCommit = Code(.transactionCommit)
        /// `ROLLBACK` after a failed body failed.
        public static let transactionRollback = Code(.transactionRollback)
        /// Migration files are inconsistent (gap, duplicate, bad name) or an applied migration was edited.
        public static let migration = Code(.migration)
        /// `PostgresClient.shutdown()` was called.
        public static let clientShutdown = Code(.clientShutdown)

        public var description: String { base.rawValue }
    }

    public var code: Code
    /// The server's SQLSTATE when the server reported the error.
    public var sqlState: SQLState?
    /// Retrying the same work later may succeed (connection problems, serialization failures, deadlocks, …).
    public var isTransient: Bool
    /// This module's own summary, safe to log ("query failed", "duplicate migration version 3").
    public var message: String
    /// The server's (or libpq's) primary message.
    public var serverMessage: String?
    /// The server's detail line. May contain values (for example the duplicate key).
    public var detail: String?
    /// The server's hint.
    public var hint: String?
    /// The constraint the error is about (unique, check, foreign key), when the server names one.
    public var constraintName: String?
    /// The table the error is about, when the server names one.
    public var tableName: String?
    /// Where in the statement the error is (server context lines, PL/pgSQL call stack).
    public var context: String?
    /// The SQL text of the failing statement (never its parameter values).
    public var query: String?

    public init(
        code: Code,
        message: String,
        sqlState: SQLState? = nil,
        isTransient: Bool? = nil,
        serverMessage: String? = nil
    ) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.serverMessage = serverMessage
        self.isTransient = isTransient ?? DatabaseError.defaultTransience(code: code, sqlState: sqlState)
    }

    static func defaultTransience(code: Code, sqlState: SQLState?) -> Bool {
        if code == .connectionFailed || code == .connectionLost { return true }
        return sqlState?.isTransient ?? false
    }

    public var description: String {
        var parts = ["code: \(code)"]
        if let sqlState { parts.append("sqlState: \(sqlState)") }
        parts.append("message: \"\(message)\"")
        if let serverMessage, sqlState?.errorClass != "22" {
            parts.append("serverMessage: \"\(serverMessage)\"")
        }
        if let constraintName { parts.append("constraint: \(constraintName)") }
        if isTransient { parts.append("transient") }
        return "DatabaseError(\(parts.joined(separator: ", ")))"
    }

    public var debugDescription: String {
        var parts = ["code: \(code)"]
        if let sqlState { parts.append("sqlState: \(sqlState)") }
        parts.append("message: \"\(message)\"")
        if let serverMessage { parts.append("serverMessage: \"\(serverMessage)\"") }
        if let detail { parts.append("detail: \"\(detail)\"") }
        if let hint { parts.append("hint: \"\(hint)\"") }
        if let tableName { parts.append("table: \(tableName)") }
        if let constraintName { parts.append("constraint: \(constraintName)") }
        if let context { parts.append("context: \"\(context)\"") }
        if let query { parts.append("query: \"\(query)\"") }
        parts.append("isTransient: \(isTransient)")
        return "DatabaseError(\(parts.joined(separator: ", ")))"
    }
}
