import Testing

@testable import Database

@Suite struct SQLStateTests {
    @Test(arguments: [
        "08000", "08001", "08003", "08006", "40001", "40P01", "57P01", "57P02", "57P03", "53000", "53100", "53200",
        "53300",
    ])
    func transientStates(_ code: String) {
        #expect(SQLState(rawValue: code).isTransient)
    }

    @Test(arguments: [
        "23505", "23503", "23514", "42501", "42P01", "42601", "22P02", "57014", "40002", "40003", "25P02", "28P01",
        "XX000",
    ])
    func permanentStates(_ code: String) {
        #expect(!SQLState(rawValue: code).isTransient)
    }

    @Test func namedConstants() {
        #expect(SQLState.uniqueViolation.rawValue == "23505")
        #expect(SQLState.serializationFailure.rawValue == "40001")
        #expect(SQLState.deadlockDetected.rawValue == "40P01")
        #expect(SQLState.undefinedTable.rawValue == "42P01")
        #expect(SQLState.insufficientPrivilege.rawValue == "42501")
        #expect(SQLState.adminShutdown.rawValue == "57P01")
        #expect(SQLState.cannotConnectNow.rawValue == "57P03")
        #expect(SQLState.queryCanceled.rawValue == "57014")
        #expect(SQLState.uniqueViolation.errorClass == "23")
    }

    @Test func errorTransienceFollowsCodeAndState() {
        #expect(DatabaseError(code: .connectionFailed, message: "x").isTransient)
        #expect(DatabaseError(code: .connectionLost, message: "x").isTransient)
        #expect(DatabaseError(code: .queryFailed, message: "x", sqlState: .serializationFailure).isTransient)
        #expect(!DatabaseError(code: .queryFailed, message: "x", sqlState: .uniqueViolation).isTransient)
        #expect(!DatabaseError(code: .queryFailed, message: "x").isTransient)
        #expect(!DatabaseError(code: .decoding, message: "x").isTransient)
    }
}
