extension PostgresConnection {
    /// Runs `body` between `BEGIN` and `COMMIT`. When `body` throws, the transaction is rolled back.
    ///
    /// Every failure is a `PostgresTransactionError` with the stage that failed: `beginError` (the body did not run),
    /// `closureError` (the body's own error, unchanged, plus `rollbackError` if ROLLBACK failed too) or `commitError`
    /// (nothing was committed; this includes a COMMIT the server turned into a rollback because a statement in the
    /// transaction failed and the body swallowed that error). Must not be called inside another transaction.
    @discardableResult
    public func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        guard pq.transactionStatus == .idle else {
            throw PostgresTransactionError(
                beginError: DatabaseError(
                    code: .transactionBegin,
                    message: "transaction() called while a transaction is already open"
                )
            )
        }
        do {
            try query("BEGIN")
        } catch {
            throw PostgresTransactionError(beginError: error.recoded(.transactionBegin, "BEGIN failed"))
        }

        let value: T
        do {
            value = try body(self)
        } catch {
            throw PostgresTransactionError(closureError: error, rollbackError: rollbackAfterFailure())
        }

        let commit: PostgresResult
        do {
            commit = try query("COMMIT")
        } catch {
            throw PostgresTransactionError(commitError: error.recoded(.transactionCommit, "COMMIT failed"))
        }
        // COMMIT of a transaction in the failed state succeeds with the tag ROLLBACK.
        if pq.transactionStatus != .idle || commit.commandTag == "ROLLBACK" {
            throw PostgresTransactionError(
                commitError: DatabaseError(
                    code: .transactionCommit,
                    message: "the server rolled the transaction back at COMMIT: a statement in it had failed",
                    sqlState: .inFailedSQLTransaction
                )
            )
        }
        return value
    }

    /// Rolls back after the body failed; a lost connection needs no rollback (the server discards the transaction).
    private func rollbackAfterFailure() -> DatabaseError? {
        guard isHealthy else { return nil }
        guard pq.transactionStatus != .idle else { return nil }
        do {
            try query("ROLLBACK")
            return nil
        } catch {
            logger.warning("ROLLBACK failed", metadata: [DatabaseLogKey.error: "\(error)"])
            return error.recoded(.transactionRollback, "ROLLBACK failed")
        }
    }
}

extension DatabaseError {
    /// The same error under a transaction-stage code; transience is kept (a lost connection stays transient).
    func recoded(_ code: Code, _ message: String) -> DatabaseError {
        var error = self
        error.code = code
        error.message = "\(message): \(self.message)"
        return error
    }
}
