import Logging

/// One thing `/readyz` checks: the database, the object store, the consumer.
public struct ReadinessCheck: Sendable {
    /// A check's answer. `detail` is shown in the `/readyz` body: no user data, keys or secrets.
    public struct Status: Sendable, Equatable {
        public var ok: Bool
        public var detail: String

        public static func ok(_ detail: String = "ok") -> Status { Status(ok: true, detail: detail) }
        public static func failed(_ detail: String) -> Status { Status(ok: false, detail: detail) }
    }

    public let name: String
    /// May block (network round trips): `Readiness` runs it on a Dispatch queue with a timeout.
    public let run: @Sendable () -> Status

    public init(name: String, run: @escaping @Sendable () -> Status) {
        self.name = name
        self.run = run
    }

    /// The fixed `/readyz` detail of a failed probe. The error itself can carry a driver's raw
    /// text (libpq names hosts, roles and databases), so it goes to the log only.
    public static let unavailableDetail = "unavailable"

    /// A check that passes when `probe` returns and fails with `unavailableDetail` when it throws;
    /// the error is logged (at warning), never echoed in the response.
    public static func probing(
        _ name: String, logger: Logger? = nil, _ probe: @escaping @Sendable () throws -> Void
    ) -> ReadinessCheck {
        ReadinessCheck(name: name) {
            do {
                try probe()
                return .ok()
            } catch {
                logger?.warning(
                    "readiness check failed",
                    metadata: [LogKey.check: "\(name)", LogKey.error: "\(String(describing: error))"])
                return .failed(unavailableDetail)
            }
        }
    }
}

/// What `/readyz` answers: every check's status, ready only when all pass.
public struct ReadinessReport: Sendable, Equatable, Encodable {
    public struct Entry: Sendable, Equatable, Encodable {
        public var name: String
        public var ok: Bool
        public var detail: String
    }

    public var checks: [Entry]
    public var ready: Bool { checks.allSatisfy(\.ok) }

    public init(checks: [Entry]) {
        self.checks = checks
    }

    private enum CodingKeys: String, CodingKey { case status, checks }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(ready ? "ready" : "not ready", forKey: .status)
        try container.encode(checks, forKey: .checks)
    }
}
