import Foundation
import Testing

@testable import Database

/// No service needed: nothing listens on port 1 of the loopback interface.
@Suite struct ConnectionFailureTests {
    private let closedPortURL = "postgresql://avatar:closed-port-secret@127.0.0.1:1/postgres"

    @Test func refusedConnectionIsATransientConnectionFailure() {
        do {
            _ = try PostgresConnection.connect(DatabaseConfiguration(url: closedPortURL), logger: TestDatabase.logger)
            Issue.record("connected to a closed port")
        } catch {
            #expect(error.code == .connectionFailed)
            #expect(error.isTransient)
            #expect(error.sqlState == nil)
            #expect(error.serverMessage != nil)
            #expect(!error.description.contains("closed-port-secret"))
            #expect(!error.debugDescription.contains("closed-port-secret"))
        }
    }

    @Test func poolReportsTheConnectionFailure() {
        let client = PostgresClient(
            configuration: DatabaseConfiguration(url: closedPortURL),
            maxConnections: 1,
            logger: TestDatabase.logger
        )
        #expect {
            try client.ping()
        } throws: { error in
            (error as? DatabaseError)?.code == .connectionFailed
        }
        // The failed attempt gave its slot back: a second attempt fails the same way instead of waiting forever.
        #expect {
            try client.withConnection { _ in }
        } throws: { error in
            (error as? DatabaseError)?.code == .connectionFailed
        }
    }

    @Test func shutDownClientRefusesBorrowers() {
        let client = PostgresClient(
            configuration: DatabaseConfiguration(url: closedPortURL),
            maxConnections: 1,
            logger: TestDatabase.logger
        )
        client.shutdown()
        #expect {
            try client.withConnection { _ in }
        } throws: { error in
            (error as? DatabaseError)?.code == .clientShutdown
        }
    }
}
