import CropProtocol
import Database
import Foundation
import Logging
import Storage

/// A publication's storage writes (`UserPublication`): each fenced and retried, and the sweep that leaves a user's
/// prefix holding what it keeps.
extension UserPublication {
    /// Deletes every object under the user's prefix but `keep`, each after the fence; returns the writes made and
    /// adds the objects deleted to `deleted`.
    func deleteAllBut(
        _ keep: Set<String>, _ connection: PostgresConnection, userID: UUID, version: Int64,
        deleted: inout Int
    ) throws -> StorageWrites {
        var writes = StorageWrites()
        for key in try listed(AvatarKeys.userPrefix(userID)) where !keep.contains(key) {
            deleted += 1
            writes += try store(
                .delete(key),
                fence: { try fence(connection, userID: userID, version: version) })
        }
        // On a bucket that keeps versions, what was deleted or replaced stays readable by version: the user's old
        // versions and delete markers go too, counted as deleted (docs/DATA.md, window 1; nothing current is
        // touched, so no fence; on any other bucket this lists nothing).
        do {
            deleted += try uploadRetry.run({ _ throws(StorageError) in
                try avatars.deleteNoncurrentVersions(withPrefix: AvatarKeys.userPrefix(userID))
            }).value
        } catch {
            throw JobFailure(upload: error)
        }
        return writes
    }

    /// One storage write.
    enum Write {
        case put(String, [UInt8], String)
        case copy(String, String, String)
        case delete(String)
    }

    /// The keys under `prefix`, with the upload retries.
    private func listed(_ prefix: String) throws -> [String] {
        do {
            return try uploadRetry.run({ _ throws(StorageError) in try avatars.keys(withPrefix: prefix) }).value
        } catch {
            throw JobFailure(upload: error)
        }
    }

    /// Runs a write with the upload retries; returns the attempts made. `fence` runs before every attempt (a retry
    /// after the lock was lost is stopped by it too).
    func store(_ write: Write, fence: () throws -> Void) throws -> Int {
        var made = 0
        do {
            return try uploadRetry.run(
                { attempt throws(any Error) in
                    made = attempt
                    // Taken before the fence, so before the lock was last proven held: the store refuses the write
                    // once this is too long past (`PutOptions.decidedAt`, docs/DATA.md, window 3).
                    let decided = Date()
                    try fence()
                    let options = { (contentType: String) in
                        PutOptions(contentType: contentType, cacheControl: cacheControl, decidedAt: decided)
                    }
                    switch write {
                    case .put(let key, let data, let contentType):
                        try avatars.put(key, data: data, options: options(contentType))
                    case .copy(let source, let destination, let contentType):
                        try avatars.copy(from: source, to: destination, options: options(contentType))
                    case .delete(let key):
                        try avatars.delete(key)
                    }
                },
                isTransient: { ($0 as? StorageError)?.isTransient ?? false },
                onRetry: { error, attempt, delay in
                    logger.warning(
                        "storage write failed, retrying",
                        metadata: [LogKey.error: "\(error)", LogKey.attempt: "\(attempt)", LogKey.delay: "\(delay)"])
                }
            ).attempts
        } catch var error as StorageError {
            error.attempts = made
            throw JobFailure(upload: error)
        }
    }
}
