import Metrics

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

/// Creates this module's metrics, from an injected factory or the global `MetricsSystem`.
struct KafkaMetricsRecorder: Sendable {
    let factory: (any MetricsFactory)?

    init(factory: (any MetricsFactory)? = nil) {
        self.factory = factory
    }

    func counter(_ label: String, _ dimensions: [(String, String)]) -> Counter {
        if let factory {
            return Counter(label: label, dimensions: dimensions, factory: factory)
        }
        return Counter(label: label, dimensions: dimensions)
    }

    func gauge(_ label: String, _ dimensions: [(String, String)]) -> Gauge {
        if let factory {
            return Gauge(label: label, dimensions: dimensions, factory: factory)
        }
        return Gauge(label: label, dimensions: dimensions)
    }

    func clientError(_ errorName: String) {
        counter(KafkaMetricNames.clientErrors, [(KafkaMetricDimensions.error, errorName)]).increment()
    }

    func commitFailure(_ error: any Error, mode: String) {
        let name = (error as? KafkaError)?.errorName ?? "unknown"
        counter(
            KafkaMetricNames.commitFailures, [(KafkaMetricDimensions.mode, mode), (KafkaMetricDimensions.error, name)]
        ).increment()
    }

    func deliveryFailure(topic: String, errorName: String) {
        counter(
            KafkaMetricNames.deliveryFailures,
            [(KafkaMetricDimensions.topic, topic), (KafkaMetricDimensions.error, errorName)]
        ).increment()
    }

    func rebalance(_ kind: String) {
        counter(KafkaMetricNames.rebalances, [(KafkaMetricDimensions.kind, kind)]).increment()
    }

    func consumerLag(_ tp: TopicPartition) -> Gauge {
        gauge(
            KafkaMetricNames.consumerLag,
            [(KafkaMetricDimensions.topic, tp.topic), (KafkaMetricDimensions.partition, "\(tp.partition)")])
    }
}
