import Foundation
import Testing

/// Something an integration test needs from the machine it runs on: a service found through an
/// `AVATAR_TEST_*` variable (`make test` starts the services and sets them, see scripts/services.sh)
/// or a tool on PATH. The one place the test targets read that environment.
///
/// The gate, for every test target: a suite marked `.requires(...)` runs when everything it needs is
/// there and is skipped when something is missing, unless `AVATAR_REQUIRE_SERVICES=1` (as in
/// `make test`): then it runs anyway, and `require()` on the missing service fails the test.
public struct TestService: Sendable, CustomStringConvertible {
    /// What to set or install, for messages: "AVATAR_TEST_DATABASE_URL", "protoc on PATH".
    public let description: String
    /// The variable's value or the tool's path; nil when missing (an empty variable is missing).
    public let value: String?

    public init(description: String, value: String?) {
        self.description = description
        self.value = value.flatMap { $0.isEmpty ? nil : $0 }
    }

    public var isPresent: Bool { value != nil }

    /// The value; when missing, records an issue and throws (the test ran because services are required).
    public func require() throws -> String {
        guard let value else {
            Issue.record("\(description) is missing: run the integration tests through `make test`")
            throw MissingService(service: description)
        }
        return value
    }

    /// Whether `AVATAR_REQUIRE_SERVICES=1`: integration tests run, and fail on what is missing.
    public static let servicesRequired = environment("AVATAR_REQUIRE_SERVICES") == "1"

    /// The tombstone key (`database.tombstone-key`) every test database session carries: 32 characters, the
    /// shortest accepted.
    public static let tombstoneKey = "test-tombstone-key-0123456789abc"

    /// Postgres 15+: a libpq URL (`AVATAR_TEST_DATABASE_URL`).
    public static let database = variable("AVATAR_TEST_DATABASE_URL")
    /// The Kafka-protocol broker's bootstrap servers (`AVATAR_TEST_KAFKA_BROKERS`).
    public static let kafka = variable("AVATAR_TEST_KAFKA_BROKERS")
    /// A Python interpreter with the `protobuf` package (`AVATAR_TEST_PYTHON`).
    public static let python = variable("AVATAR_TEST_PYTHON")
    /// S3 (SeaweedFS): present when all of `AVATAR_TEST_S3_*` are set; `s3Settings()` reads them.
    public static let s3 = TestService(
        description: "AVATAR_TEST_S3_ENDPOINT/REGION/BUCKET/ACCESS_KEY/SECRET_KEY",
        value: S3Settings.fromEnvironment()?.endpoint)

    /// An executable on PATH (or in /usr/bin), by name.
    public static func tool(_ name: String) -> TestService {
        let path = environment("PATH") ?? "/usr/local/bin:/usr/bin:/bin"
        let found = (path.split(separator: ":").map(String.init) + ["/usr/bin"])
            .map { URL(fileURLWithPath: $0).appendingPathComponent(name).path }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
        return TestService(description: "\(name) on PATH", value: found)
    }

    /// The S3 service's settings; when missing, records an issue and throws.
    public static func s3Settings() throws -> S3Settings {
        _ = try s3.require()
        guard let settings = S3Settings.fromEnvironment() else { throw MissingService(service: s3.description) }
        return settings
    }

    /// A variable of the test run's environment (unset and empty are both nil).
    public static func environment(_ name: String) -> String? {
        ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }

    static func variable(_ name: String) -> TestService {
        TestService(description: name, value: environment(name))
    }
}

/// A required service is missing (thrown by `TestService.require()`).
public struct MissingService: Error, CustomStringConvertible {
    public let service: String

    public init(service: String) {
        self.service = service
    }

    public var description: String { "\(service) is missing but AVATAR_REQUIRE_SERVICES=1 requires it" }
}

/// Something a test needs from the build is missing (thrown by `TestFiles.requireCropperBinary()`).
public struct TestSetupError: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// The S3 service the integration tests use (`AVATAR_TEST_S3_*`, path-style addressing).
public struct S3Settings: Sendable {
    public var endpoint: String
    public var region: String
    public var bucket: String
    public var accessKey: String
    public var secretKey: String

    static func fromEnvironment() -> S3Settings? {
        let environment = TestService.environment
        guard let endpoint = environment("AVATAR_TEST_S3_ENDPOINT"), let region = environment("AVATAR_TEST_S3_REGION"),
            let bucket = environment("AVATAR_TEST_S3_BUCKET"), let accessKey = environment("AVATAR_TEST_S3_ACCESS_KEY"),
            let secretKey = environment("AVATAR_TEST_S3_SECRET_KEY")
        else { return nil }
        return S3Settings(
            endpoint: endpoint, region: region, bucket: bucket, accessKey: accessKey, secretKey: secretKey)
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the suite or test when every one of `services` is present, or when `AVATAR_REQUIRE_SERVICES=1`
    /// (then a missing one fails it); skips it otherwise.
    public static func requires(_ services: TestService...) -> Self {
        let missing = services.filter { !$0.isPresent }.map(\.description)
        return .enabled(
            if: TestService.servicesRequired || missing.isEmpty,
            Comment(rawValue: "needs \(missing.joined(separator: ", ")) (make test sets the services up)"))
    }
}
