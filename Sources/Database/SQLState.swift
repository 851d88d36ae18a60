/// A Postgres SQLSTATE (five characters), typed so callers can switch on the ones they handle.
///
/// https://www.postgresql.org/docs/15/errcodes-appendix.html
public struct SQLState: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The first two characters: `"23"` for integrity constraint violations.
    public var errorClass: String { String(rawValue.prefix(2)) }

    /// True when retrying the same work later may succeed: connection exceptions (class 08), serialization
    /// failures and deadlocks (40001, 40P01), operator intervention such as shutdowns and restarts (57P0x) and
    /// insufficient resources (class 53).
    public var isTransient: Bool {
        switch errorClass {
        case "08", "53":
            return true
        case "40":
            return self == .serializationFailure || self == .deadlockDetected
        case "57":
            return rawValue.hasPrefix("57P0")
        default:
            return false
        }
    }

    public var description: String { rawValue }

    // Class 08: connection exception
    public static let connectionException = SQLState(rawValue: "08000")
    public static let connectionDoesNotExist = SQLState(rawValue: "08003")
    public static let connectionFailure = SQLState(rawValue: "08006")
    // Class 22: data exception
    public static let invalidTextRepresentation = SQLState(rawValue: "22P02")
    public static let stringDataRightTruncation = SQLState(rawValue: "22001")
    // Class 23: integrity constraint violation
    public static let notNullViolation = SQLState(rawValue: "23502")
    public static let foreignKeyViolation = SQLState(rawValue: "23503")
    public static let uniqueViolation = SQLState(rawValue: "23505")
    public static let checkViolation = SQLState(rawValue: "23514")
    // Class 25: invalid transaction state
    public static let inFailedSQLTransaction = SQLState(rawValue: "25P02")
    // Class 28: invalid authorization specification
    public static let invalidPassword = SQLState(rawValue: "28P01")
    // Class 40: transaction rollback
    public static let serializationFailure = SQLState(rawValue: "40001")
    public static let deadlockDetected = SQLState(rawValue: "40P01")
    // Class 42: syntax error or access rule violation
    public static let syntaxError = SQLState(rawValue: "42601")
    public static let insufficientPrivilege = SQLState(rawValue: "42501")
    public static let undefinedColumn = SQLState(rawValue: "42703")
    public static let undefinedFunction = SQLState(rawValue: "42883")
    public static let undefinedTable = SQLState(rawValue: "42P01")
    public static let duplicateObject = SQLState(rawValue: "42710")
    public static let duplicateTable = SQLState(rawValue: "42P07")
    // Class 53: insufficient resources
    public static let insufficientResources = SQLState(rawValue: "53000")
    public static let tooManyConnections = SQLState(rawValue: "53300")
    // Class 55: object not in prerequisite state
    public static let lockNotAvailable = SQLState(rawValue: "55P03")
    // Class 57: operator intervention
    public static let queryCanceled = SQLState(rawValue: "57014")
    public static let adminShutdown = SQLState(rawValue: "57P01")
    public static let crashShutdown = SQLState(rawValue: "57P02")
    public static let cannotConnectNow = SQLState(rawValue: "57P03")
}
