import Testing

@testable import Database

@Suite struct DatabaseErrorTests {
    @Test func descriptionLeavesOutDetailAndQuery() {
        var error = DatabaseError(
            code: .queryFailed,
            message: "query failed",
            sqlState: .uniqueViolation,
            serverMessage: "duplicate key value violates unique constraint \"notes_pkey\""
        )
        error.detail = "Key (id)=(user-secret-42) already exists."
        error.query = "INSERT INTO notes (id) VALUES ($1)"
        error.constraintName = "notes_pkey"

        #expect(error.description.contains("23505"))
        #expect(error.description.contains("queryFailed"))
        #expect(error.description.contains("notes_pkey"))
        #expect(!error.description.contains("user-secret-42"))
        #expect(!error.description.contains("INSERT INTO"))
        #expect(error.debugDescription.contains("user-secret-42"))
        #expect(error.debugDescription.contains("INSERT INTO notes"))
    }

    @Test func dataExceptionMessagesStayOutOfDescription() {
        // Class 22 messages quote the offending input.
        let error = DatabaseError(
            code: .queryFailed,
            message: "query failed",
            sqlState: .invalidTextRepresentation,
            serverMessage: "invalid input syntax for type uuid: \"user-secret-42\""
        )
        #expect(!error.description.contains("user-secret-42"))
        #expect(error.description.contains("22P02"))
        #expect(error.debugDescription.contains("user-secret-42"))
    }

    @Test func transactionErrorPicksTheCauseAndItsTransience() {
        let body = ExpectedTestError(marker: "body")
        let rollback = DatabaseError(code: .transactionRollback, message: "ROLLBACK failed")
        let error = PostgresTransactionError(closureError: body, rollbackError: rollback)
        #expect(error.underlyingError as? ExpectedTestError == body)
        #expect(error.rollbackError?.code == .transactionRollback)
        #expect(!error.isTransient)

        let commit = PostgresTransactionError(
            commitError: DatabaseError(
                code: .transactionCommit,
                message: "COMMIT failed",
                sqlState: .serializationFailure
            )
        )
        #expect(commit.isTransient)
        #expect(commit.sqlState == .serializationFailure)
    }

    @Test func configurationDescriptionHidesTheURL() {
        let configuration = DatabaseConfiguration(url: "postgresql://worker:pa55word@db:5432/app", searchPath: "tenant")
        #expect(!configuration.description.contains("pa55word"))
        #expect(configuration.description.contains("tenant"))
    }

    @Test func durationRounding() {
        #expect(Duration.seconds(5).wholeSecondsRoundedUp == 5)
        #expect(Duration.milliseconds(1500).wholeSecondsRoundedUp == 2)
        #expect(Duration.zero.wholeSecondsRoundedUp == 0)
        #expect(Duration.milliseconds(250).wholeMillisecondsRoundedUp == 250)
        #expect(Duration.microseconds(1).wholeMillisecondsRoundedUp == 1)
        #expect(Duration.seconds(2).wholeMillisecondsRoundedUp == 2000)
    }
}
