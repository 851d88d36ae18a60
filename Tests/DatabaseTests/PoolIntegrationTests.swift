import Foundation
import TestEnvironment
import Testing

@testable import Database

@Suite(.requires(.database)) struct PoolIntegrationTests {
    private func backendPID(_ connection: PostgresConnection) throws -> Int64 {
        try #require(try connection.query("SELECT pg_backend_pid() AS pid").rows.first?.int("pid"))
    }

    @Test func queryOnATerminatedBackendIsATransientConnectionLoss() throws {
        let connection = try TestDatabase.connectAdmin()
        try TestDatabase.terminateBackend(connection.backendProcessID)
        do {
            try connection.query("SELECT 1")
            Issue.record("query on a terminated backend succeeded")
        } catch {
            #expect(error.code == .connectionLost)
            #expect(error.isTransient)
        }
        #expect(!connection.isHealthy)
    }

    @Test func terminatedIdleConnectionIsReplaced() throws {
        let client = PostgresClient(
            configuration: try TestDatabase.adminConfiguration(),
            maxConnections: 1,
            logger: TestDatabase.logger
        )
        defer { client.shutdown() }
        let first = try client.withConnection { try backendPID($0) }
        try TestDatabase.terminateBackend(Int32(first))
        var runs = 0
        let second = try client.withConnection { connection in
            runs += 1
            return try backendPID(connection)
        }
        #expect(second != first)
        // The dead connection was noticed before the body ran (its FATAL message), not by the retry.
        #expect(runs == 1)
        try client.ping()
    }

    @Test func lostConnectionBeforeTheFirstStatementIsRetriedOnce() throws {
        // Idle connections are handed out unchecked, so the body itself meets the dead connection.
        let client = PostgresClient(
            configuration: try TestDatabase.adminConfiguration(),
            maxConnections: 1,
            logger: TestDatabase.logger,
            validatesIdleConnections: false
        )
        defer { client.shutdown() }
        let first = try client.withConnection { try backendPID($0) }
        try TestDatabase.terminateBackend(Int32(first))
        var runs = 0
        let second = try client.withConnection { connection in
            runs += 1
            return try backendPID(connection)
        }
        #expect(runs == 2)
        #expect(second != first)
    }

    @Test func lostConnectionAfterAnAnsweredStatementIsNotRetried() throws {
        let client = PostgresClient(
            configuration: try TestDatabase.adminConfiguration(),
            maxConnections: 1,
            logger: TestDatabase.logger
        )
        defer { client.shutdown() }
        var runs = 0
        do {
            try client.withConnection { connection in
                runs += 1
                let pid = try backendPID(connection)
                try TestDatabase.terminateBackend(Int32(pid))
                try connection.query("SELECT 1")
            }
            Issue.record("withConnection did not throw")
        } catch let error as DatabaseError {
            #expect(error.code == .connectionLost)
        }
        #expect(runs == 1)
        // The broken connection was closed; the next borrower gets a new one.
        try client.ping()
    }

    @Test func concurrentBorrowersShareAtMostMaxConnections() throws {
        let client = PostgresClient(
            configuration: try TestDatabase.adminConfiguration(),
            maxConnections: 2,
            logger: TestDatabase.logger
        )
        defer { client.shutdown() }
        let pids = try concurrently(12) { _ in
            try client.withConnection { connection in
                try connection.query("SELECT pg_sleep(0.01)")
                return try #require(try connection.query("SELECT pg_backend_pid() AS pid").rows.first?.int("pid"))
            }
        }
        #expect(pids.count == 12)
        #expect(Set(pids).count <= 2)
    }

    @Test func transactionLeftOpenIsRolledBackWhenTheConnectionReturns() throws {
        try TestDatabase.withSchema { configuration, _ in
            let client = PostgresClient(configuration: configuration, maxConnections: 1, logger: TestDatabase.logger)
            defer { client.shutdown() }
            try client.withConnection { try $0.query("CREATE TABLE notes (id text)") }
            let pid = try client.withConnection { connection in
                try connection.query("BEGIN")
                try connection.query("INSERT INTO notes VALUES ('left open')")
                return try backendPID(connection)
            }
            let (count, samePID) = try client.withConnection { connection in
                (
                    try connection.query("SELECT count(*) AS n FROM notes").rows.first?.int("n"),
                    try backendPID(connection) == pid
                )
            }
            #expect(samePID)
            #expect(count == 0)
        }
    }

    @Test func shutdownWakesBorrowersWaitingForAConnection() throws {
        let client = PostgresClient(
            configuration: try TestDatabase.adminConfiguration(),
            maxConnections: 1,
            logger: TestDatabase.logger
        )
        let holderHasConnection = DispatchSemaphore(value: 0)
        let releaseHolder = DispatchSemaphore(value: 0)
        let waiterDone = DispatchSemaphore(value: 0)
        let waiterError = ErrorSlot()
        DispatchQueue.global().async {
            try? client.withConnection { _ in
                holderHasConnection.signal()
                releaseHolder.wait()
            }
        }
        holderHasConnection.wait()
        DispatchQueue.global().async {
            do {
                try client.withConnection { _ in }
            } catch {
                waiterError.set(error)
            }
            waiterDone.signal()
        }
        for _ in 0..<1000 where client.waitingBorrowers == 0 {
            Thread.sleep(forTimeInterval: 0.01)
        }
        #expect(client.waitingBorrowers == 1)
        client.shutdown()
        // The holder still has its connection: only shutdown() can have woken the waiter.
        let woke = waiterDone.wait(timeout: .now() + 60) == .success
        releaseHolder.signal()
        #expect(woke)
        if !woke { waiterDone.wait() }
        #expect((waiterError.value as? DatabaseError)?.code == .clientShutdown)
    }

    @Test func shutdownClosesIdleConnectionsAndRefusesNewBorrowers() throws {
        let client = PostgresClient(
            configuration: try TestDatabase.adminConfiguration(),
            maxConnections: 1,
            logger: TestDatabase.logger
        )
        let pid = try client.withConnection { try backendPID($0) }
        client.shutdown()
        #expect {
            try client.ping()
        } throws: { error in
            (error as? DatabaseError)?.code == .clientShutdown
        }
        let admin = try TestDatabase.connectAdmin()
        var gone = false
        for _ in 0..<1000 where !gone {
            let rows = try admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1::int4", [.int(pid)]).rows
            gone = rows.isEmpty
            if !gone { Thread.sleep(forTimeInterval: 0.01) }
        }
        #expect(gone)
    }
}

/// `@unchecked Sendable`: `error` is only touched under `lock`.
private final class ErrorSlot: @unchecked Sendable {
    private let lock = NSLock()
    private var error: (any Error)?

    func set(_ error: any Error) {
        lock.lock()
        self.error = error
        lock.unlock()
    }

    var value: (any Error)? {
        lock.lock()
        defer { lock.unlock() }
        return error
    }
}
