import Foundation
import TestEnvironment
import Testing

@testable import Database

@Suite(.requires(.database)) struct TransactionIntegrationTests {
    private func withNotesTable(_ body: (PostgresConnection, PostgresConnection) throws -> Void) throws {
        try TestDatabase.withSchema { configuration, _ in
            let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            let observer = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            try connection.query("CREATE TABLE notes (id text PRIMARY KEY)")
            try body(connection, observer)
        }
    }

    private func count(_ connection: PostgresConnection) throws -> Int64? {
        try connection.query("SELECT count(*) AS n FROM notes").rows.first?.int("n")
    }

    @Test func commitMakesTheBodysWritesVisible() throws {
        try withNotesTable { connection, observer in
            let value = try connection.transaction { connection in
                try connection.query("INSERT INTO notes (id) VALUES ($1)", [.text("a")])
                #expect(try count(observer) == 0)  // not committed yet
                return 42
            }
            #expect(value == 42)
            #expect(try count(observer) == 1)
        }
    }

    @Test func errorInBodyRollsBackAndCarriesTheBodysError() throws {
        try withNotesTable { connection, observer in
            do {
                try connection.transaction { connection in
                    try connection.query("INSERT INTO notes (id) VALUES ($1)", [.text("a")])
                    throw ExpectedTestError(marker: "body failed")
                }
                Issue.record("transaction did not throw")
            } catch let error as PostgresTransactionError {
                #expect(error.closureError as? ExpectedTestError == ExpectedTestError(marker: "body failed"))
                #expect(error.beginError == nil)
                #expect(error.rollbackError == nil)
                #expect(error.commitError == nil)
            }
            #expect(try count(observer) == 0)
            // The session is back to idle: another transaction works.
            try connection.transaction { try $0.query("INSERT INTO notes (id) VALUES ('b')") }
            #expect(try count(observer) == 1)
        }
    }

    @Test func failingStatementInBodyIsTheClosureError() throws {
        try withNotesTable { connection, observer in
            do {
                try connection.transaction { connection in
                    try connection.query("INSERT INTO notes (id) VALUES ('a')")
                    try connection.query("INSERT INTO notes (id) VALUES ('a')")
                }
                Issue.record("transaction did not throw")
            } catch let error as PostgresTransactionError {
                let closureError = try #require(error.closureError as? DatabaseError)
                #expect(closureError.sqlState == .uniqueViolation)
                #expect(error.sqlState == .uniqueViolation)
                #expect(!error.isTransient)
            }
            #expect(try count(observer) == 0)
        }
    }

    @Test func commitAfterASwallowedErrorIsReportedAsACommitError() throws {
        try withNotesTable { connection, observer in
            do {
                try connection.transaction { connection in
                    try connection.query("INSERT INTO notes (id) VALUES ('a')")
                    _ = try? connection.query("INSERT INTO notes (id) VALUES ('a')")  // error swallowed
                }
                Issue.record("transaction did not throw")
            } catch let error as PostgresTransactionError {
                #expect(error.commitError?.code == .transactionCommit)
                #expect(error.closureError == nil)
            }
            #expect(try count(observer) == 0)
            #expect(connection.isHealthy)
        }
    }

    @Test func nestedTransactionIsABeginError() throws {
        try withNotesTable { connection, observer in
            do {
                try connection.transaction { connection in
                    try connection.query("INSERT INTO notes (id) VALUES ('outer')")
                    try connection.transaction { try $0.query("INSERT INTO notes (id) VALUES ('inner')") }
                }
                Issue.record("nested transaction did not throw")
            } catch let error as PostgresTransactionError {
                let inner = try #require(error.closureError as? PostgresTransactionError)
                #expect(inner.beginError?.code == .transactionBegin)
            }
            #expect(try count(observer) == 0)
        }
    }

    @Test func lostConnectionInBodyNeedsNoRollback() throws {
        try withNotesTable { connection, observer in
            do {
                try connection.transaction { connection in
                    try connection.query("INSERT INTO notes (id) VALUES ('a')")
                    try TestDatabase.terminateBackend(connection.backendProcessID)
                    try connection.query("INSERT INTO notes (id) VALUES ('b')")
                }
                Issue.record("transaction on a terminated backend did not throw")
            } catch let error as PostgresTransactionError {
                let closureError = try #require(error.closureError as? DatabaseError)
                #expect(closureError.code == .connectionLost)
                #expect(error.isTransient)
                #expect(error.rollbackError == nil)
            }
            #expect(!connection.isHealthy)
            #expect(try count(observer) == 0)
        }
    }
}
