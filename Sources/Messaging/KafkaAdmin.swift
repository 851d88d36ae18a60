import Logging

/// Cluster administration used by tests and tooling.
public enum KafkaAdmin {
    /// Creates `names` with `partitions` partitions each, and each with its topic configuration in `configs` (e.g.
    /// `cleanup.policy`). Idempotent: topics that already exist are left as they are (their partition count and
    /// configuration are not changed).
    ///
    /// - Parameter replicationFactor: -1 uses the broker's default.
    public static func createTopics(
        _ names: [String], partitions: Int32, replicationFactor: Int32 = -1, configs: [String: [String: String]] = [:],
        configuration: KafkaConfiguration, timeout: Duration, logger: Logger = Logger(label: "avatar.kafka.admin")
    ) throws {
        guard !names.isEmpty else { return }
        let client = try RDKafkaClient.make(
            kind: .producer, properties: configuration.librdkafkaProperties(), handler: AdminEvents(logger: logger))
        defer { client.destroy() }
        try client.createTopics(
            names, partitions: partitions, replicationFactor: replicationFactor, configs: configs, timeout: timeout)
    }
}

/// Admin clients only log.
final class AdminEvents: RDKafkaEventHandler {
    let logger: Logger
    let metrics = KafkaMetricsRecorder()

    init(logger: Logger) {
        self.logger = logger
    }
}
