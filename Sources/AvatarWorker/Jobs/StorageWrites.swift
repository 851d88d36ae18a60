/// A publication's object-storage writes (versioned uploads, public copies, deletes; `UserPublication`): how many,
/// how many needed a retry, and the attempts they took. What `avatar_upload_attempts_total` counts, by result, and
/// the metrics record's `attempts`.
public struct StorageWrites: Equatable, Sendable {
    /// Writes that succeeded.
    public var count = 0
    /// Of those, the ones that succeeded only after a retry.
    public var retried = 0
    /// Attempts of all of them, retries included.
    public var attempts = 0

    public init() {}

    /// One more write, which took `attempts` attempts.
    static func += (writes: inout StorageWrites, attempts: Int) {
        writes.count += 1
        writes.attempts += attempts
        if attempts > 1 { writes.retried += 1 }
    }

    static func += (writes: inout StorageWrites, more: StorageWrites) {
        writes.count += more.count
        writes.retried += more.retried
        writes.attempts += more.attempts
    }
}
