/// Receives what a `KafkaConsumer` polls. Every method is called on the consumer's poll thread.
public protocol KafkaConsumerDelegate: AnyObject, Sendable {
    /// A message arrived. Must not block long: hand the message to a scheduler and return (pause
    /// partitions for backpressure instead of blocking).
    func consumer(_ c: KafkaConsumer, received message: KafkaMessage)

    /// Partitions were assigned to this consumer (already assigned when this is called).
    func consumer(_ c: KafkaConsumer, assigned: [TopicPartition])

    /// Called on the poll thread BEFORE the partitions are given up (rebalance or close). Block here to
    /// drain or abandon in-flight jobs; return the offsets (next offset to read) to commit
    /// synchronously before unassign. When the partitions were lost (session timed out) nothing is
    /// committed: another member may already own them.
    func consumer(_ c: KafkaConsumer, revoking: [TopicPartition]) -> [TopicPartition: Int64]

    /// librdkafka statistics arrived (every `statistics.interval.ms`). Default: ignored.
    func consumer(_ c: KafkaConsumer, statistics: KafkaStatistics)
}

extension KafkaConsumerDelegate {
    public func consumer(_ c: KafkaConsumer, statistics: KafkaStatistics) {}
}
