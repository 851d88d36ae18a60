import Logging

/// The offsets a partition holds: `low` is the first offset still stored, `high` the offset the next
/// produced record will get (the high watermark), so `high - low` records are in the partition.
public struct PartitionOffsets: Hashable, Sendable, CustomStringConvertible {
    public var partition: Int32
    public var low: Int64
    public var high: Int64

    public init(partition: Int32, low: Int64, high: Int64) {
        self.partition = partition
        self.low = low
        self.high = high
    }

    public var isEmpty: Bool { high <= low }

    public var description: String { "[\(partition)] \(low)..<\(high)" }
}

extension KafkaAdmin {
    /// Every partition of `topic` with its low and high watermarks, queried from the partition
    /// leaders, ordered by partition. Blocking: call it from a Dispatch thread, not Swift concurrency.
    ///
    /// Throws `.unknownTopic` when the topic does not exist.
    public static func partitionOffsets(
        of topic: String, configuration: KafkaConfiguration, timeout: Duration,
        logger: Logger = Logger(label: "avatar.kafka.admin")
    ) throws -> [PartitionOffsets] {
        let client = try RDKafkaClient.make(
            kind: .producer,
            // Asking about a topic must never create it.
            properties: configuration.librdkafkaProperties(defaults: ["allow.auto.create.topics": "false"]),
            handler: AdminEvents(logger: logger))
        defer { client.destroy() }
        return try client.partitionIDs(of: topic, timeout: timeout).map { partition in
            let (low, high) = try client.watermarks(topic: topic, partition: partition, timeout: timeout)
            return PartitionOffsets(partition: partition, low: low, high: high)
        }
    }
}
