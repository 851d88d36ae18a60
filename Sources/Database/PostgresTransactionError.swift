/// Why `PostgresConnection.transaction` failed. Each stage keeps its own error so that a failed `ROLLBACK` never
/// hides the body's error and a failed `COMMIT` is told apart from a failed statement.
///
/// Exactly one of `beginError`, `closureError` and `commitError` is set; `rollbackError` only accompanies a
/// `closureError`.
public struct PostgresTransactionError: Error, CustomStringConvertible, CustomDebugStringConvertible {
    /// `BEGIN` failed (code `transactionBegin`); the body did not run.
    public var beginError: DatabaseError?
    /// The error the body threw, unchanged. The transaction was rolled back (or the connection was lost).
    public var closureError: (any Error)?
    /// `ROLLBACK` after the body's error failed (code `transactionRollback`). The server discards the
    /// transaction anyway when the connection closes.
    public var rollbackError: DatabaseError?
    /// `COMMIT` failed or the server answered it with a rollback (code `transactionCommit`); nothing was committed.
    public var commitError: DatabaseError?

    public init(
        beginError: DatabaseError? = nil,
        closureError: (any Error)? = nil,
        rollbackError: DatabaseError? = nil,
        commitError: DatabaseError? = nil
    ) {
        self.beginError = beginError
        self.closureError = closureError
        self.rollbackError = rollbackError
        self.commitError = commitError
    }

    /// The error that made the transaction fail: the body's, else BEGIN's or COMMIT's.
    public var underlyingError: any Error {
        if let closureError { return closureError }
        if let beginError { return beginError }
        if let commitError { return commitError }
        if let rollbackError { return rollbackError }
        return DatabaseError(code: .transactionCommit, message: "transaction failed")
    }

    /// The `DatabaseError` behind the failure, if it was one (the body's own errors may be of any type).
    public var databaseError: DatabaseError? {
        underlyingError as? DatabaseError
    }

    /// The SQLSTATE behind the failure, if the server reported one.
    public var sqlState: SQLState? { databaseError?.sqlState }

    /// Retrying the whole transaction later may succeed. False for the body's own (non-database) errors unless
    /// they are `PostgresTransactionError`s themselves.
    public var isTransient: Bool {
        switch underlyingError {
        case let error as DatabaseError: return error.isTransient
        case let error as PostgresTransactionError: return error.isTransient
        default: return false
        }
    }

    public var description: String {
        var parts: [String] = []
        if let beginError { parts.append("beginError: \(beginError)") }
        if let closureError { parts.append("closureError: \(closureError)") }
        if let commitError { parts.append("commitError: \(commitError)") }
        if let rollbackError { parts.append("rollbackError: \(rollbackError)") }
        return "PostgresTransactionError(\(parts.joined(separator: ", ")))"
    }

    public var debugDescription: String {
        var parts: [String] = []
        if let beginError { parts.append("beginError: \(beginError.debugDescription)") }
        if let closureError { parts.append("closureError: \(String(reflecting: closureError))") }
        if let commitError { parts.append("commitError: \(commitError.debugDescription)") }
        if let rollbackError { parts.append("rollbackError: \(rollbackError.debugDescription)") }
        return "PostgresTransactionError(\(parts.joined(separator: ", ")))"
    }
}
