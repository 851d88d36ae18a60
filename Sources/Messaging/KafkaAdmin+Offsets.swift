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
        let client = try metadataClient(configuration, logger: logger)
        defer { client.destroy() }
        return try client.partitionIDs(of: topic, timeout: timeout).map { partition in
            let (low, high) = try client.watermarks(topic: topic, partition: partition, timeout: timeout)
            return PartitionOffsets(partition: partition, low: low, high: high)
        }
    }

    /// Where a reader of the whole of `topics` starts (`KafkaConsumer.init(configuration:reading:groupID:...)`):
    /// every partition the cluster metadata lists, each at `KafkaOffset.beginning`. Blocking, as above.
    ///
    /// Throws `.unknownTopic` when a topic does not exist.
    public static func startOfEveryPartition(
        of topics: [String], configuration: KafkaConfiguration, timeout: Duration,
        logger: Logger = Logger(label: "avatar.kafka.admin")
    ) throws -> [TopicPartition: Int64] {
        let client = try metadataClient(configuration, logger: logger)
        defer { client.destroy() }
        var start: [TopicPartition: Int64] = [:]
        for topic in topics {
            for partition in try client.partitionIDs(of: topic, timeout: timeout) {
                start[TopicPartition(topic: topic, partition: partition)] = KafkaOffset.beginning
            }
        }
        return start
    }

    /// A client that only asks about topics: asking must never create one.
    private static func metadataClient(_ configuration: KafkaConfiguration, logger: Logger) throws -> RDKafkaClient {
        try RDKafkaClient.make(
            kind: .producer,
            properties: configuration.librdkafkaProperties(defaults: ["allow.auto.create.topics": "false"]),
            handler: AdminEvents(logger: logger))
    }
}
