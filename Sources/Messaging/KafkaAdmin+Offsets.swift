import Crdkafka
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
        return try client.withHandle("rd_kafka_query_watermark_offsets") { rk in
            try partitions(rk, topic, timeout).map { partition in
                var low: Int64 = 0
                var high: Int64 = 0
                try rdCheck(
                    rd_kafka_query_watermark_offsets(rk, topic, partition, &low, &high, timeout.milliseconds),
                    "rd_kafka_query_watermark_offsets", detail: "partition \(partition)")
                return PartitionOffsets(partition: partition, low: low, high: high)
            }
        }
    }

    /// The partition ids of `topic` from the cluster metadata.
    private static func partitions(_ rk: OpaquePointer, _ topic: String, _ timeout: Duration) throws -> [Int32] {
        guard let handle = rd_kafka_topic_new(rk, topic, nil) else {
            throw KafkaError(code: .invalidArgument, operation: "rd_kafka_topic_new")
        }
        defer { rd_kafka_topic_destroy(handle) }
        var metadata: UnsafePointer<rd_kafka_metadata>?
        try rdCheck(rd_kafka_metadata(rk, 0, handle, &metadata, timeout.milliseconds), "rd_kafka_metadata")
        guard let metadata else { throw KafkaError(code: .broker, operation: "rd_kafka_metadata") }
        defer { rd_kafka_metadata_destroy(metadata) }
        let topics = UnsafeBufferPointer(start: metadata.pointee.topics, count: Int(metadata.pointee.topic_cnt))
        guard let entry = topics.first(where: { String(cString: $0.topic) == topic }) else {
            throw KafkaError(code: .unknownTopic, operation: "rd_kafka_metadata")
        }
        try rdCheck(entry.err, "rd_kafka_metadata", context: .unknownTopic)
        let partitions = UnsafeBufferPointer(start: entry.partitions, count: Int(entry.partition_cnt))
        return partitions.map(\.id).sorted()
    }
}
