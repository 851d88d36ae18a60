import Database
import Foundation

/// The user's publication lock (`UserPublication`; docs/ARCHITECTURE.md §3): one user's publications, repairs and
/// forgets run one at a time across the fleet.
extension UserPublication {
    /// The advisory lock's first key: "avat".
    static let lockNamespace: Int64 = 0x6176_6174

    /// The lock's second key: the user id folded to 32 bits (a collision only serialises two users).
    static func lockKey(_ userID: UUID) -> Int64 {
        let bytes = withUnsafeBytes(of: userID.uuid) { Array($0) }
        var folded: UInt32 = 0
        for chunk in stride(from: 0, to: 16, by: 4) {
            folded ^=
                UInt32(bytes[chunk]) << 24 | UInt32(bytes[chunk + 1]) << 16 | UInt32(bytes[chunk + 2]) << 8
                | UInt32(bytes[chunk + 3])
        }
        return Int64(Int32(bitPattern: folded))
    }

    /// Takes the user's lock in one call (`avatar_lock_user`, migration 0005: lock_timeout for that call only),
    /// runs `body`, and unlocks. `UserForgetting` takes the same lock.
    func withUserLock<T>(_ connection: PostgresConnection, userID: UUID, _ body: () throws -> T) throws -> T {
        let key = Self.lockKey(userID)
        let milliseconds = Int64(max(1, min(Int(Int32.max), Int(lockTimeout.components.seconds * 1000))))
        do {
            try connection.query(
                "SELECT avatar_lock_user($1::int4, $2::int4, $3::int4)",
                [.int(Self.lockNamespace), .int(key), .int(milliseconds)])
        } catch {
            guard error.sqlState == .lockNotAvailable else { throw error }
            throw JobFailure(
                .databaseUnavailable, errorClass: .transient,
                detail: "the user's lock was not free within \(milliseconds) ms")
        }
        let value: Result<T, any Error>
        do {
            value = .success(try body())
        } catch {
            value = .failure(error)
        }
        if connection.isHealthy {
            do {
                try connection.query(
                    "SELECT pg_advisory_unlock($1::int4, $2::int4)", [.int(Self.lockNamespace), .int(key)])
            } catch {
                _ = try? connection.query("SELECT pg_advisory_unlock_all()")
            }
        }
        return try value.get()
    }
}
