import Database
import Foundation
import Metrics

/// Forgets that have not completed yet (`avatar_pending_forgets`, migration 0011; docs/DATA.md, windows 3 and 4): a
/// forget is recorded before it takes the user's lock and is done once its last look is, so one that fails — a lock
/// timeout, a database or storage outage longer than its retries, a crash — stays, and the workers'
/// `ForgetSweeper` runs it again when due until it completes. The DLQ record of a failed forget request is then only
/// a copy; nothing waits for an operator to replay it. A completed forget keeps its row as a last look, due once the
/// store's late writes are bounded (`ObjectStore.lateWriteHorizon`; at once on a store without them).
public struct PendingForgets: Sendable {
    public let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// How long a claimed or newly recorded forget waits before a sweep may run it (again); the n-th failed attempt
    /// waits n times this, at most `maxBackoff` times.
    public static let retryAfter = Duration.seconds(60)
    static let maxBackoff = 10
    /// Forgets one sweep claims at most.
    static let sweepBatch = 10

    /// One pending forget.
    public struct Pending: Equatable, Sendable {
        public var userID: UUID
        public var requestedAt: Date
        /// The forget itself completed; only its last look for late writes is left.
        public var lastLook: Bool
    }

    /// Records the forget of `userID` as pending (again), due `retryAfter` from now: long enough for the run that
    /// records it to finish first.
    func record(userID: UUID, requestedAt: Date) throws {
        try client.withConnection { connection in
            _ = try connection.query(
                """
                INSERT INTO avatar_pending_forgets AS p (user_id, requested_at, due_at)
                VALUES ($1, $2, now() + make_interval(secs => $3::float8))
                ON CONFLICT (user_id) DO UPDATE
                   SET requested_at = greatest(p.requested_at, EXCLUDED.requested_at),
                       due_at = greatest(p.due_at, EXCLUDED.due_at), last_look = false
                """, [.uuid(userID), .timestamp(requestedAt), Self.seconds(Self.retryAfter)])
        }
    }

    /// The forget of `userID` requested at `requestedAt` completed: its row stays as the last look, due after
    /// `lastLookAfter` (zero: at the next sweep), when the workers delete what a write held up after its fence
    /// landed since and write the results topic's null record for the user again (`ForgetSweeper`). A later forget
    /// of the user recorded meanwhile stays as it is.
    func complete(userID: UUID, requestedAt: Date, lastLookAfter: Duration) throws {
        try client.withConnection { connection in
            _ = try connection.query(
                """
                UPDATE avatar_pending_forgets
                   SET last_look = true, attempts = 0, due_at = now() + make_interval(secs => $3::float8)
                 WHERE user_id = $1 AND requested_at <= $2
                """, [.uuid(userID), .timestamp(requestedAt), Self.seconds(lastLookAfter)])
        }
    }

    /// The last look of `userID`'s forget is done: its row goes.
    func finishLastLook(userID: UUID, requestedAt: Date) throws {
        try client.withConnection { connection in
            _ = try connection.query(
                "DELETE FROM avatar_pending_forgets WHERE user_id = $1 AND requested_at <= $2",
                [.uuid(userID), .timestamp(requestedAt)])
        }
    }

    /// Whether a forget of `userID` is pending: recorded and not completed (a last look still to come counts).
    public func isPending(userID: UUID) throws -> Bool {
        try client.withConnection { connection in
            try connection.query(
                "SELECT EXISTS (SELECT FROM avatar_pending_forgets WHERE user_id = $1) AS pending", [.uuid(userID)]
            ).rows.first?.bool("pending") ?? false
        }
    }

    /// Claims up to `sweepBatch` due forgets and last looks: each is pushed out by `retryAfter` times its attempts
    /// (at most `maxBackoff`), so the workers of a fleet never run one twice at once and a forget that keeps
    /// failing is tried less often. The claimed ones, oldest due first.
    func claim() throws -> [Pending] {
        try client.withConnection { connection in
            try connection.query(
                """
                UPDATE avatar_pending_forgets AS p
                   SET attempts = p.attempts + 1,
                       due_at = now() + make_interval(secs => $2::float8 * least(p.attempts + 1, $3::int4))
                  FROM (SELECT user_id FROM avatar_pending_forgets WHERE due_at <= now()
                         ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED) AS due
                 WHERE p.user_id = due.user_id
                RETURNING p.user_id, p.requested_at, p.last_look
                """,
                [.int(Int64(Self.sweepBatch)), Self.seconds(Self.retryAfter), .int(Int64(Self.maxBackoff))]
            ).rows.compactMap { row in
                guard let userID = try row.uuid("user_id"), let requestedAt = try row.timestamp("requested_at") else {
                    return nil
                }
                return Pending(userID: userID, requestedAt: requestedAt, lastLook: try row.bool("last_look") ?? false)
            }
        }
    }

    /// How many forgets are pending, and how long the oldest has been overdue: a forget not completed counts from
    /// when it was recorded, a last look only once its time has come.
    public struct Backlog: Equatable, Sendable {
        public var count: Int
        public var oldest: Duration
    }

    public func backlog() throws -> Backlog {
        try client.withConnection { connection in
            let row = try connection.query(
                """
                SELECT count(*) AS n,
                       coalesce(extract(epoch FROM now() - min(CASE WHEN last_look THEN due_at ELSE pending_since END)),
                                0)::float8 AS oldest
                  FROM avatar_pending_forgets WHERE NOT last_look OR due_at <= now()
                """
            ).rows.first
            return Backlog(
                count: Int(try row?.int("n") ?? 0),
                oldest: .milliseconds(Int64((try row?.double("oldest") ?? 0) * 1000)))
        }
    }

    /// Shows `backlog` on the gauges `avatar_forgets_pending` and `avatar_forget_pending_oldest_seconds` (the
    /// fleet's, as every worker sees the one table).
    static func show(_ backlog: Backlog) {
        Gauge(label: MetricName.forgetsPending).record(backlog.count)
        Gauge(label: MetricName.forgetPendingOldest).record(
            Double(backlog.oldest.components.seconds) + Double(backlog.oldest.components.attoseconds) / 1e18)
    }

    private static func seconds(_ duration: Duration) -> PostgresValue {
        .double(Double(duration.components.seconds))
    }
}
