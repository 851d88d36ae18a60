import Foundation
import Logging

/// One Postgres session. Synchronous and blocking: call it from Dispatch worker threads, never from Swift's
/// cooperative pool. Not thread-safe: one thread at a time (the pool hands it to one borrower at a time).
///
/// Values reach the server only as bind parameters (`query(_:_:)`); multi-statement scripts without parameters
/// are for migrations only (`execute(script:)`).
public final class PostgresConnection {
    let pq: PQConnection
    let logger: Logger
    /// The server process id of this session (`pg_backend_pid()`), kept after the connection is lost.
    public let backendProcessID: Int32
    /// Statements the server answered (with a result or an SQL error) while the connection stayed up. The pool
    /// compares it before and after a borrower's body to decide whether a lost connection may be retried.
    private(set) var answeredStatements = 0

    private init(pq: PQConnection, logger: Logger) {
        self.pq = pq
        self.logger = logger
        self.backendProcessID = pq.backendPID
    }

    /// Opens a connection and applies the session settings: `search_path`, `statement_timeout`, durable commits
    /// (`durableCommits`), and the formats this module decodes (`TimeZone=UTC`, `DateStyle=ISO`,
    /// `bytea_output=hex`). Throws `connectionFailed`.
    public static func connect(
        _ configuration: DatabaseConfiguration,
        logger: Logger
    ) throws(DatabaseError) -> PostgresConnection {
        var parameters: [(String, String)] = [("application_name", configuration.applicationName)]
        let timeout = configuration.connectTimeout.wholeSecondsRoundedUp
        if timeout > 0 { parameters.append(("connect_timeout", String(timeout))) }
        parameters += Self.deadPeerDetection
        parameters.append(("dbname", configuration.url))
        parameters.append(("client_encoding", "UTF8"))
        if let options = configuration.startupOptions() { parameters.append(("options", options)) }

        let pq = try PQConnection.connect(parameters: parameters, logger: logger)
        let connection = PostgresConnection(pq: pq, logger: logger)
        do {
            try connection.applySessionSettings(configuration)
        } catch {
            var wrapped = error
            wrapped.code = .connectionFailed
            wrapped.message = "could not apply session settings: \(error.message)"
            wrapped.isTransient = DatabaseError.defaultTransience(code: .connectionFailed, sqlState: error.sqlState)
            throw wrapped
        }
        logger.debug(
            "database connection opened",
            metadata: [DatabaseLogKey.backendPID: "\(connection.backendProcessID)"]
        )
        return connection
    }

    /// A server that vanishes without closing the connection (a network partition, a killed VM) would leave a
    /// call waiting for its reply until the kernel gives up on TCP, about 15 minutes: `statement_timeout` is
    /// enforced by that very server. Keepalives find a silent peer in about 25 s (10 s idle, then 3 probes 5 s
    /// apart) and `tcp_user_timeout` bounds unacknowledged sends to 30 s; the call then fails as a lost
    /// connection (transient). Settings in the URL win.
    static let deadPeerDetection: [(String, String)] = [
        ("keepalives", "1"), ("keepalives_idle", "10"), ("keepalives_interval", "5"), ("keepalives_count", "3"),
        ("tcp_user_timeout", "30000"),
    ]

    /// The value libpq uses for a connection option (tests).
    func connectionOption(_ keyword: String) -> String? { pq.option(keyword) }

    private func applySessionSettings(_ configuration: DatabaseConfiguration) throws(DatabaseError) {
        var settings: [(String, String)] = [
            ("TimeZone", "UTC"), ("DateStyle", "ISO, MDY"), ("IntervalStyle", "postgres"), ("bytea_output", "hex"),
        ]
        if let searchPath = configuration.searchPath {
            settings.append(("search_path", searchPath))
        }
        if let timeout = configuration.statementTimeout {
            settings.append(("statement_timeout", String(timeout.wholeMillisecondsRoundedUp)))
        }
        if let timeout = configuration.lockTimeout {
            settings.append(("lock_timeout", String(timeout.wholeMillisecondsRoundedUp)))
        }
        settings += configuration.sessionSettings.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        let calls = settings.indices.map { "set_config($\($0 * 2 + 1), $\($0 * 2 + 2), false)" }
        let parameters = settings.flatMap { [PostgresValue.text($0.0), .text($0.1)] }
        try query("SELECT " + (calls + [Self.durableCommits]).joined(separator: ", "), parameters)
    }

    /// A commit this module reports is durable: a server whose default is `synchronous_commit = off`
    /// acknowledges commits that a crash of Postgres then loses, so a version bump the worker reported as
    /// applied could vanish and be published again by the next job (docs/ARCHITECTURE.md §3, exactly once).
    /// Such a session gets `on`; any other value (`local`, `remote_write`, `remote_apply`) is kept.
    static let durableCommits = """
        set_config('synchronous_commit', CASE current_setting('synchronous_commit') WHEN 'off' THEN 'on' \
        ELSE current_setting('synchronous_commit') END, false)
        """

    /// True while libpq reports the connection as OK. A connection whose server went away is only noticed at the
    /// next statement (the pool also polls idle connections before handing them out).
    public var isHealthy: Bool { pq.isOK && !pq.isPoisoned }

    /// Runs one statement with `PQexecParams`. Values are sent only as bind parameters `$1…$n` (text format, typed;
    /// see `PostgresValue`); their buffers live for the whole call.
    ///
    /// Throws `invalidParameter` (nothing sent), `queryFailed` with the server's SQLSTATE, or `connectionLost`.
    @discardableResult
    public func query(_ sql: String, _ parameters: [PostgresValue] = []) throws(DatabaseError) -> PostgresResult {
        guard parameters.count <= Int(UInt16.max) else {
            throw DatabaseError(code: .invalidParameter, message: "more than 65535 bind parameters")
        }
        var encoded: [EncodedParameter] = []
        encoded.reserveCapacity(parameters.count)
        for parameter in parameters {
            encoded.append(try parameter.encoded())
        }
        let result = pq.execParams(sql, encoded)
        return try answered(result, sql: sql, message: "query failed").postgresResult()
    }

    /// Runs a script of several statements with `PQexec` and no parameters: for migrations only. Statements run
    /// until the first error; outside a transaction each statement commits on its own unless the script has
    /// BEGIN/COMMIT.
    public func execute(script sql: String) throws(DatabaseError) {
        _ = try answered(pq.exec(sql), sql: sql, message: "script failed")
    }

    /// Checks a result and counts the statement as answered unless the connection was lost on it.
    private func answered(_ result: PQResult?, sql: String, message: String) throws(DatabaseError) -> PQResult {
        do {
            let checked = try pq.check(result, query: sql, message: message)
            answeredStatements += 1
            return checked
        } catch {
            guard error.code == .connectionLost else {
                answeredStatements += 1
                throw error
            }
            logger.warning(
                "database connection lost",
                metadata: [
                    DatabaseLogKey.backendPID: "\(backendProcessID)",
                    DatabaseLogKey.sqlState: "\(error.sqlState?.rawValue ?? "-")",
                ]
            )
            throw error
        }
    }
}
