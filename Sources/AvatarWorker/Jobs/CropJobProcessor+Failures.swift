import CropProtocol
import Database
import Foundation

/// What a job leaves of its failure in the ledger, and the database calls every step makes with their retries.
extension CropJobProcessor {
    /// Best effort: the ledger notes the failure (it never overwrites a success or another user's row) and
    /// says when the job first failed. When the database is what failed, the result event and the DLQ record
    /// still carry everything.
    func recordFailure(_ failure: JobFailure, of job: CropJob, trace: JobTrace) -> Date? {
        guard case .success(let request) = job.decoded else { return nil }
        let failedAt = Date()
        if failure.code != .databaseUnavailable {
            do {
                return try ledger.recordFailure(
                    jobID: request.jobID, userID: request.userID, requestedAt: request.requestedAt,
                    errorCode: failure.code.rawValue, attempts: failure.attempts, firstFailedAt: failedAt)
            } catch {
                dependencies.logger.debug(
                    "could not record the failure in the ledger", metadata: [LogKey.error: "\(error)"])
            }
        }
        // The row says `started`: unless it learns of this failure, the job's next attempt counts a crash.
        if let attempt = trace.renderAttempt {
            dependencies.unrecordedFailures.add(
                UnrecordedFailures.Note(
                    jobID: request.jobID, userID: request.userID, errorCode: failure.code.rawValue,
                    attempts: failure.attempts, failedAt: failedAt, renderAttempt: attempt))
        }
        return nil
    }

    /// Writes failures the ledger missed (`UnrecordedFailures`): `first`'s, then a few others. Stops at the
    /// first that cannot be written and keeps the rest for later.
    func writeUnrecordedFailures(first jobID: String) {
        let notes = dependencies.unrecordedFailures.take(jobID: jobID)
        for (index, note) in notes.enumerated() {
            do {
                try ledger.recordLateFailure(note)
            } catch {
                for unwritten in notes[index...] { dependencies.unrecordedFailures.add(unwritten) }
                dependencies.logger.debug(
                    "could not write missed failures to the ledger", metadata: [LogKey.error: "\(error)"])
                return
            }
        }
    }

    /// Runs a database step, retrying transient failures with `databaseRetry`; a failure says the attempts made. A
    /// `JobFailure` from the step (bare or as a transaction's body error) passes through.
    func databaseCall<T>(_ body: () throws -> T) throws -> T {
        var made = 0
        do {
            return try dependencies.databaseRetry.run(
                { attempt in
                    made = attempt
                    return try body()
                },
                isTransient: { Self.databaseTransience($0) ?? false },
                onRetry: { error, attempt, _ in
                    dependencies.logger.warning(
                        "database step failed, retrying",
                        metadata: [LogKey.error: "\(error)", LogKey.attempt: "\(attempt)"])
                }
            ).value
        } catch {
            // A transaction wraps its body's error; a JobFailure from the body passes through.
            if let failure = (error as? PostgresTransactionError)?.closureError as? JobFailure { throw failure }
            if let failure = error as? JobFailure { throw failure }
            guard let transient = Self.databaseTransience(error) else { throw error }
            throw JobFailure(database: error, transient: transient, attempts: made)
        }
    }

    /// Whether a database error may pass on a retry; nil for errors that are not the database's.
    static func databaseTransience(_ error: any Error) -> Bool? {
        (error as? DatabaseError)?.isTransient ?? (error as? PostgresTransactionError)?.isTransient
    }
}
