import Foundation
import Logging

/// A small thread-safe pool of `PostgresConnection`s with reconnect. Synchronous: `withConnection` blocks the
/// calling thread (a Dispatch worker, never Swift's cooperative pool) until a connection is free.
///
/// Connections are opened lazily up to `maxConnections`. An idle connection is checked without a round trip
/// before it is handed out (libpq reads what the server sent while it sat idle); one the server closed is replaced
/// by a new connection. A connection that breaks while borrowed is closed when it comes back.
public final class PostgresClient: Sendable {
    private let configuration: DatabaseConfiguration
    private let logger: Logger
    private let maxConnections: Int
    private let validatesIdleConnections: Bool
    private let state = PoolState()

    /// Borrowers blocked waiting for a connection (for tests).
    var waitingBorrowers: Int { state.waitingBorrowers }

    public convenience init(configuration: DatabaseConfiguration, maxConnections: Int, logger: Logger) {
        self.init(
            configuration: configuration,
            maxConnections: maxConnections,
            logger: logger,
            validatesIdleConnections: true
        )
    }

    /// `validatesIdleConnections: false` hands idle connections out unchecked (tests use it to exercise the retry).
    init(configuration: DatabaseConfiguration, maxConnections: Int, logger: Logger, validatesIdleConnections: Bool) {
        precondition(maxConnections >= 1, "a PostgresClient needs at least one connection")
        self.configuration = configuration
        self.maxConnections = maxConnections
        self.logger = logger
        self.validatesIdleConnections = validatesIdleConnections
    }

    /// Lends a connection to `body` on the calling thread and takes it back afterwards.
    ///
    /// When `body` fails because the connection was lost before the server answered any of its statements (a
    /// connection that went stale while idle, a server restart), `body` runs once more on a new connection. A body
    /// may therefore run twice: keep side effects other than its statements out of it. Errors are rethrown unchanged.
    /// Do not nest calls on one client: with all connections borrowed, the inner call waits forever.
    /// Throws `connectionFailed` when no connection can be opened and `clientShutdown` after `shutdown()`.
    @discardableResult
    public func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        var retried = false
        while true {
            let connection = try checkout()
            let answeredBefore = connection.answeredStatements
            do {
                let value = try body(connection)
                checkin(connection)
                return value
            } catch {
                let lostBeforeAnswer = !connection.isHealthy && connection.answeredStatements == answeredBefore
                checkin(connection)
                if lostBeforeAnswer && !retried {
                    retried = true
                    logger.warning("database connection lost before its first statement; retrying on a new connection")
                    continue
                }
                throw error
            }
        }
    }

    /// Runs `SELECT 1` on a pooled connection: for `/readyz`.
    public func ping() throws {
        try withConnection { connection in
            _ = try connection.query("SELECT 1")
        }
    }

    /// Closes the idle connections, fails waiting and future borrowers with `clientShutdown`, and closes borrowed
    /// connections when they come back.
    public func shutdown() {
        let closing = state.shutDown()
        // The idle connections close (PQfinish) when `closing` goes away, outside the lock.
        logger.debug("database pool shut down", metadata: [DatabaseLogKey.poolSize: "\(closing.count)"])
    }

    // MARK: Borrowing

    private func checkout() throws(DatabaseError) -> PostgresConnection {
        while true {
            switch try state.reserve(limit: maxConnections) {
            case .idle(let connection):
                if !validatesIdleConnections || connection.pq.pollIdle() {
                    return connection
                }
                logger.info("replacing a database connection the server closed while it was idle")
                state.releaseSlot()
            case .new:
                do {
                    return try PostgresConnection.connect(configuration, logger: logger)
                } catch {
                    state.releaseSlot()
                    throw error
                }
            }
        }
    }

    private func checkin(_ connection: PostgresConnection) {
        if connection.isHealthy, connection.pq.transactionStatus != .idle {
            // The body left a transaction open (its own BEGIN): roll it back before anyone else gets the session.
            _ = try? connection.query("ROLLBACK")
        }
        let reusable = connection.isHealthy && connection.pq.transactionStatus == .idle
        state.giveBack(reusable ? connection : nil)
    }
}

/// The pool's mutable state.
///
/// `@unchecked Sendable`: every stored property is read and written only while `condition` is locked, and a
/// connection in `idle` belongs to the pool alone until `reserve` hands it to exactly one borrower.
private final class PoolState: @unchecked Sendable {
    private let condition = NSCondition()
    var idle: [PostgresConnection] = []
    /// Connections that exist or are being opened: idle + borrowed + connecting.
    var open = 0
    var isShutdown = false

    enum Reservation {
        case idle(PostgresConnection)
        /// A slot was reserved; the caller opens the connection (outside the lock) or releases the slot.
        case new
    }

    /// Borrowers blocked in `reserve` (for tests).
    private(set) var waiting = 0

    var waitingBorrowers: Int {
        condition.lock()
        defer { condition.unlock() }
        return waiting
    }

    /// Marks the pool shut down, wakes every waiting borrower and returns the idle connections for closing.
    func shutDown() -> [PostgresConnection] {
        condition.lock()
        defer { condition.unlock() }
        isShutdown = true
        let closing = idle
        idle.removeAll()
        open -= closing.count
        condition.broadcast()
        return closing
    }

    func reserve(limit: Int) throws(DatabaseError) -> Reservation {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if isShutdown {
                throw DatabaseError(code: .clientShutdown, message: "the database client was shut down")
            }
            if let connection = idle.popLast() {
                return .idle(connection)
            }
            if open < limit {
                open += 1
                return .new
            }
            waiting += 1
            condition.wait()
            waiting -= 1
        }
    }

    /// Gives a slot back without a connection (it was closed or never opened).
    func releaseSlot() {
        condition.lock()
        open -= 1
        condition.signal()
        condition.unlock()
    }

    /// Returns a borrowed connection; `nil` when it must be closed instead (the borrower drops the last reference,
    /// outside the lock).
    func giveBack(_ connection: PostgresConnection?) {
        condition.lock()
        defer { condition.unlock() }
        if let connection, !isShutdown {
            idle.append(connection)
        } else {
            open -= 1
        }
        condition.signal()
    }
}
