/// Connection settings passed through to librdkafka.
///
/// `properties` accepts any librdkafka configuration property
/// (https://github.com/confluentinc/librdkafka/blob/master/CONFIGURATION.md), e.g. `security.protocol`,
/// `sasl.mechanisms`, `sasl.username`, `sasl.password`, `ssl.ca.location`, `client.id`,
/// `statistics.interval.ms`. `bootstrapServers` wins over a `bootstrap.servers` entry in `properties`.
public struct KafkaConfiguration: Sendable, CustomStringConvertible {
    public var bootstrapServers: String
    public var properties: [String: String]

    public init(bootstrapServers: String, properties: [String: String] = [:]) {
        self.bootstrapServers = bootstrapServers
        self.properties = properties
    }

    /// The effective librdkafka properties, in a stable order: `defaults`, then the user's
    /// `properties`, then `bootstrap.servers`, then `required` (settings this module depends on).
    func librdkafkaProperties(
        defaults: [String: String] = [:], required: [String: String] = [:]
    ) -> [(key: String, value: String)] {
        var merged = defaults
        merged.merge(properties) { _, user in user }
        merged["bootstrap.servers"] = bootstrapServers
        merged.merge(required) { _, required in required }
        return merged.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) }
    }

    /// Properties librdkafka applies to consumers only. One configuration usually serves a
    /// process's consumer and producers alike; a producer leaves these out instead of warning
    /// about each one.
    static let consumerOnlyProperties: Set<String> = [
        "group.id", "group.instance.id", "group.protocol", "group.remote.assignor", "session.timeout.ms",
        "heartbeat.interval.ms", "max.poll.interval.ms", "partition.assignment.strategy", "auto.offset.reset",
        "enable.auto.commit", "auto.commit.interval.ms", "enable.auto.offset.store", "queued.min.messages",
        "queued.max.messages.kbytes", "fetch.wait.max.ms", "fetch.message.max.bytes", "fetch.max.bytes",
        "fetch.min.bytes", "fetch.error.backoff.ms", "isolation.level", "enable.partition.eof", "check.crcs",
        "coordinator.query.interval.ms", "consume.callback.max.messages",
    ]

    /// The configuration a producer uses: without consumer-only properties.
    var forProducer: KafkaConfiguration {
        KafkaConfiguration(
            bootstrapServers: bootstrapServers,
            properties: properties.filter { !Self.consumerOnlyProperties.contains($0.key) })
    }

    /// Property names whose values are secrets and never printed.
    static func isSecret(_ key: String) -> Bool {
        let lowered = key.lowercased()
        return ["password", "secret", "jaas", "token", "ssl.key.pem", "ssl_key", "ssl.keystore", "private"]
            .contains { lowered.contains($0) }
    }

    /// Safe to log: secret values are redacted.
    public var description: String {
        let shown = properties.sorted { $0.key < $1.key }.map { key, value in
            "\(key)=\(Self.isSecret(key) ? "<redacted>" : value)"
        }
        return "KafkaConfiguration(bootstrap.servers=\(bootstrapServers)"
            + (shown.isEmpty ? "" : ", " + shown.joined(separator: ", ")) + ")"
    }
}
