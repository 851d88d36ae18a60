import Database
import Foundation
import Logging

/// Ledger retention (`avatar-cropper prune`, and a worker's `LedgerPruner`; docs/ARCHITECTURE.md §4).
///
/// Rows last written more than `retention` ago are deleted in batches of `batchSize` (`avatar_prune`, migration
/// 0009, walking the index of migration 0008), oldest first. Kept whatever their age: the succeeded row behind each
/// profile's current version, rows being rendered, and every forget tombstone younger than the maximum request age
/// (all of them when `worker.max-request-age-hours` is 0; docs/ARCHITECTURE.md §4). Source deletions still refused
/// that long after they were due go too. The guarantees hold without the
/// pruned rows, whatever the retention:
///
/// - a redelivery of the *current* version's job finds its row, kept: a duplicate;
/// - any other applied job is before the current one in the order of (`requested_at`, job id) that
///   `avatar_publish` keeps (migration 0009; the current row names its job): superseded, never bumped again, never
///   over the newer avatar, even with the same `requested_at`;
/// - a pruned failed or superseded job runs as it would have before (it never applied).
///
/// One prune at a time per schema: the batches run on one connection holding a session advisory lock; another
/// prune of the same schema finds it taken and skips its turn.
public struct LedgerRetention: Sendable {
    public let client: PostgresClient
    public let retention: Duration
    public let batchSize: Int

    public init(client: PostgresClient, retention: Duration, batchSize: Int) {
        self.client = client
        self.retention = retention
        self.batchSize = batchSize
    }

    /// The session setting (`DatabaseConfiguration.sessionSettings`) holding `worker.max-request-age-hours` as an
    /// interval, which migration 0011's `avatar_forgotten` reads (as `avatar.max_request_age`) and the prune of
    /// tombstones uses.
    public static let maxRequestAgeSetting = "avatar.max_request_age"

    /// The advisory lock of the prune: (`UserPublication.lockNamespace`, a hash of "prune" and the current schema),
    /// so deployments in other schemas of the database prune on their own, as the migrator's lock does. (A fixed
    /// key let one schema's prune make another's skip its turn.)
    static let lockKey = "hashtext('prune ' || coalesce(current_schema(), ''))"

    /// Prunes until a batch comes back short. Returns the ledger rows deleted, or nil when another prune holds the
    /// lock.
    public func prune() throws -> Int? {
        try client.withConnection { connection in
            let locked = try connection.query(
                "SELECT pg_try_advisory_lock($1::int4, \(Self.lockKey)) AS locked",
                [.int(UserPublication.lockNamespace)]
            ).rows.first?.bool("locked")
            guard locked == true else { return nil }
            defer {
                _ = try? connection.query(
                    "SELECT pg_advisory_unlock($1::int4, \(Self.lockKey))", [.int(UserPublication.lockNamespace)])
            }
            var total = 0
            while true {
                // The cutoff is the database's clock, as finished_at is.
                let pruned = Int(
                    try connection.query(
                        "SELECT avatar_prune(now() - make_interval(secs => $1::float8), $2::int4) AS pruned",
                        [.double(Double(retention.components.seconds)), .int(Int64(batchSize))]
                    ).rows.first?.int("pruned") ?? 0)
                total += pruned
                if pruned < batchSize { break }
            }
            // Tombstones older than the maximum request age (worker.max-request-age-hours, a session setting; none
            // when unset): every request they could cover is too old to publish anyway (migration 0011).
            try connection.query(
                """
                DELETE FROM avatar_forgotten_users
                 WHERE forgotten_at < now() - nullif(current_setting($1, true), '')::interval
                """, [.text(Self.maxRequestAgeSetting)])
            // Source deletions the store has refused for the retention since they were due: the row names the user
            // and the upload, and is kept no longer than a ledger row (docs/DATA.md, window 8); the upload is then the
            // app's, or a bucket lifecycle rule's, to delete.
            try connection.query(
                "DELETE FROM avatar_source_deletions WHERE due_at < now() - make_interval(secs => $1::float8)",
                [.double(Double(retention.components.seconds))])
            return total
        }
    }
}
