import Foundation

/// The parts of librdkafka's statistics JSON (emitted every `statistics.interval.ms`) this service uses.
/// See https://github.com/confluentinc/librdkafka/blob/master/STATISTICS.md.
public struct KafkaStatistics: Sendable {
    public struct Partition: Sendable, Hashable {
        /// Messages between the committed offset and the high watermark (or last stable offset);
        /// nil while unknown.
        public var consumerLag: Int64?
        public var committedOffset: Int64?
        public var highWatermark: Int64?
        public var lastStableOffset: Int64?
        /// librdkafka's fetch state, e.g. `active`, `none` (not assigned to this consumer).
        public var fetchState: String
        /// Producer: messages waiting in this partition's queues.
        public var queuedMessages: Int64
    }

    public struct Broker: Sendable, Hashable {
        /// e.g. `127.0.0.1:9092/1`, or `GroupCoordinator` for the logical coordinator connection.
        public var name: String
        /// -1 for bootstrap and logical brokers.
        public var nodeID: Int32
        /// librdkafka's connection state: `UP` when connected, else `INIT`, `DOWN`, `CONNECT`, ...
        public var state: String
    }

    /// librdkafka's instance name, e.g. `rdkafka#consumer-1`.
    public var clientName: String
    /// `producer` or `consumer`.
    public var clientType: String
    /// Wall-clock time the statistics were emitted.
    public var time: Date?
    /// Messages in the producer queues.
    public var queuedMessages: Int64
    /// Per partition; librdkafka's internal "unassigned" partition (-1) is left out.
    public var partitions: [TopicPartition: Partition]
    /// The client's broker connections.
    public var brokers: [Broker]
    /// Whether any broker connection is up.
    public var anyBrokerUp: Bool { brokers.contains { $0.state == "UP" } }

    /// Parses librdkafka's statistics JSON.
    public init(json: String) throws {
        let raw = try JSONDecoder().decode(Raw.self, from: Data(json.utf8))
        clientName = raw.name ?? ""
        clientType = raw.type ?? ""
        time = raw.time.map { Date(timeIntervalSince1970: TimeInterval($0)) }
        queuedMessages = raw.msg_cnt ?? 0
        var partitions: [TopicPartition: Partition] = [:]
        for (topicName, topic) in raw.topics ?? [:] {
            for (_, p) in topic.partitions ?? [:] where p.partition >= 0 {
                func known(_ value: Int64?) -> Int64? { value.flatMap { $0 < 0 ? nil : $0 } }
                partitions[TopicPartition(topic: topicName, partition: p.partition)] = Partition(
                    consumerLag: known(p.consumer_lag),
                    committedOffset: known(p.committed_offset),
                    highWatermark: known(p.hi_offset),
                    lastStableOffset: known(p.ls_offset),
                    fetchState: p.fetch_state ?? "",
                    queuedMessages: p.msgq_cnt ?? 0)
            }
        }
        self.partitions = partitions
        brokers = (raw.brokers ?? [:]).map { name, broker in
            Broker(name: broker.name ?? name, nodeID: broker.nodeid ?? -1, state: broker.state ?? "")
        }.sorted { $0.name < $1.name }
    }

    // Field names as librdkafka writes them.
    // swiftlint:disable identifier_name
    private struct Raw: Decodable {
        var name: String?
        var type: String?
        var time: Int64?
        var msg_cnt: Int64?
        var topics: [String: RawTopic]?
        var brokers: [String: RawBroker]?
    }

    private struct RawBroker: Decodable {
        var name: String?
        var nodeid: Int32?
        var state: String?
    }

    private struct RawTopic: Decodable {
        var partitions: [String: RawPartition]?
    }

    private struct RawPartition: Decodable {
        var partition: Int32
        var fetch_state: String?
        var consumer_lag: Int64?
        var committed_offset: Int64?
        var hi_offset: Int64?
        var ls_offset: Int64?
        var msgq_cnt: Int64?
    }
    // swiftlint:enable identifier_name
}
