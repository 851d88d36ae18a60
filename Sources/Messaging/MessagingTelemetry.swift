/// Metric names and dimensions of the Messaging module, in one place (dashboards and alerts use them).
public enum KafkaMetricNames {
    /// Gauge: messages between the committed offset and the high watermark, per assigned partition.
    /// Dimensions: `topic`, `partition`. Fed from librdkafka statistics (`statistics.interval.ms`).
    public static let consumerLag = "kafka_consumer_lag"
    /// Counter: offset commits that failed. Dimensions: `mode` (sync, async, rebalance), `error`.
    public static let commitFailures = "kafka_commit_failures_total"
    /// Counter: produced messages whose delivery failed. Dimensions: `topic`, `error`.
    public static let deliveryFailures = "kafka_delivery_failures_total"
    /// Counter: client-level errors reported by librdkafka (broker down, auth, ...). Dimension: `error`.
    public static let clientErrors = "kafka_client_errors_total"
    /// Counter: consumer group rebalance events. Dimension: `kind` (assign, revoke, lost, error).
    public static let rebalances = "kafka_rebalances_total"
}

/// Dimension keys used with `KafkaMetricNames`.
public enum KafkaMetricDimensions {
    public static let topic = "topic"
    public static let partition = "partition"
    public static let mode = "mode"
    public static let error = "error"
    public static let kind = "kind"
}

/// Logger metadata keys used by this module.
enum KafkaLogKeys {
    static let client = "kafka.client"
    static let facility = "kafka.facility"
    static let error = "kafka.error"
    static let topic = "kafka.topic"
    static let partition = "kafka.partition"
    static let partitions = "kafka.partitions"
    static let group = "kafka.group"
    static let protocolName = "kafka.rebalance_protocol"
    static let count = "kafka.count"
}
