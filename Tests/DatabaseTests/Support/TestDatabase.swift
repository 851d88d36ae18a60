import Database
import Foundation
import Logging
import TestEnvironment
import Testing

/// Postgres for the integration suites (`.requires(.database)`: `TestService.database`, from
/// AVATAR_TEST_DATABASE_URL), with a schema of its own per test.
enum TestDatabase {
    static let logger: Logger = {
        var logger = Logger(label: "DatabaseTests")
        logger.logLevel = .warning
        return logger
    }()

    /// The server's default search_path: for creating and dropping test schemas. Carries the tests' tombstone key
    /// as the worker's connections carry theirs (migration 0012's `avatar.tombstone_key`, hex).
    static func adminConfiguration() throws -> DatabaseConfiguration {
        var configuration = DatabaseConfiguration(url: try TestService.database.require())
        configuration.startupSettings["avatar.tombstone_key"] = TestService.tombstoneKey.utf8
            .map { String(format: "%02x", $0) }.joined()
        return configuration
    }

    static func connectAdmin() throws -> PostgresConnection {
        try PostgresConnection.connect(adminConfiguration(), logger: logger)
    }

    /// Creates a schema `t_<random>`, runs `body` with a configuration whose search_path is that schema only, and
    /// drops the schema (with everything in it) afterwards.
    static func withSchema<T>(
        _ body: (_ configuration: DatabaseConfiguration, _ schema: String) throws -> T
    ) throws -> T {
        let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        let admin = try connectAdmin()
        // The name is generated above (hex only); identifiers cannot be bind parameters.
        try admin.query("CREATE SCHEMA \(schema)")
        defer { _ = try? admin.query("DROP SCHEMA IF EXISTS \(schema) CASCADE") }
        var configuration = try adminConfiguration()
        configuration.searchPath = schema
        return try body(configuration, schema)
    }

    /// Terminates a backend from another session and waits until the server has removed it.
    static func terminateBackend(_ processID: Int32) throws {
        let admin = try connectAdmin()
        let terminated = try admin.query("SELECT pg_terminate_backend($1::int4) AS ok", [.int(Int64(processID))])
        #expect(try terminated.rows.first?.bool("ok") == true)
        for _ in 0..<1000 {
            let alive = try admin.query(
                "SELECT count(*) AS n FROM pg_stat_activity WHERE pid = $1::int4",
                [.int(Int64(processID))]
            )
            if try alive.rows.first?.int("n") == 0 { return }
            Thread.sleep(forTimeInterval: 0.01)
        }
        Issue.record("backend \(processID) still alive after pg_terminate_backend")
    }

    /// The repository's `migrations/` directory.
    static var migrationsDirectory: URL { TestFiles.url("migrations") }

    static func migrator() throws -> Migrator {
        try Migrator(migrations: Migrator.load(directory: migrationsDirectory), logger: logger)
    }
}

/// Runs `count` copies of `body` at once on Dispatch threads (the blocking API must stay off the cooperative pool)
/// and returns their results in index order.
func concurrently<T: Sendable>(_ count: Int, _ body: @Sendable (Int) throws -> T) throws -> [T] {
    let results = ResultBox<T>(count: count)
    DispatchQueue.concurrentPerform(iterations: count) { index in
        results.set(index, Result { try body(index) })
    }
    return try results.values.map { try $0!.get() }
}

/// `@unchecked Sendable`: `slots` is only touched under `lock`.
private final class ResultBox<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [Result<T, any Error>?]

    init(count: Int) { slots = Array(repeating: nil, count: count) }

    func set(_ index: Int, _ result: Result<T, any Error>) {
        lock.lock()
        slots[index] = result
        lock.unlock()
    }

    var values: [Result<T, any Error>?] {
        lock.lock()
        defer { lock.unlock() }
        return slots
    }
}

struct ExpectedTestError: Error, Equatable {
    var marker: String
}
