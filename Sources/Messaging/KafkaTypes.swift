import Foundation

/// One partition of one topic.
public struct TopicPartition: Hashable, Sendable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)[\(partition)]" }
}

/// Logical offsets a reader may start a partition at
/// (`KafkaConsumer.init(configuration:reading:groupID:logger:metricsFactory:)`); their values are librdkafka's
/// (`RDKafkaTopicPartitionList.swift`).
public enum KafkaOffset {}

/// A record header. Kafka allows repeated keys and null values.
public struct KafkaHeader: Hashable, Sendable {
    public var key: String
    public var value: [UInt8]?

    public init(key: String, value: [UInt8]?) {
        self.key = key
        self.value = value
    }

    /// A header whose value is the UTF-8 bytes of `value`.
    public init(key: String, string value: String) {
        self.init(key: key, value: Array(value.utf8))
    }
}

/// What a producer sends.
public struct KafkaRecord: Sendable {
    public var topic: String
    /// Partitioning key (Kafka's default partitioner hashes it); nil means no key.
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [KafkaHeader]
    /// An explicit partition, or nil to let the partitioner choose.
    public var partition: Int32?
    /// Sent with a null value (`value` is ignored): on a compacted topic, the record that deletes every earlier
    /// record of its key (a tombstone).
    public var nullValue = false
    /// The record's timestamp (its CreateTime), or nil for the producer's clock when it is sent. A topic with
    /// `message.timestamp.type=LogAppendTime` replaces it with the broker's.
    public var timestamp: Date?

    public init(
        topic: String, key: [UInt8]? = nil, value: [UInt8], headers: [KafkaHeader] = [], partition: Int32? = nil
    ) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
        self.partition = partition
    }

    /// A record with `key` and a null value: compaction deletes every earlier record of the key, then this one.
    public static func tombstone(topic: String, key: [UInt8], headers: [KafkaHeader] = []) -> KafkaRecord {
        var record = KafkaRecord(topic: topic, key: key, value: [], headers: headers)
        record.nullValue = true
        return record
    }
}

/// Where a produced record was stored.
struct KafkaDelivery: Hashable, Sendable {
    var partition: Int32
    var offset: Int64

    init(partition: Int32, offset: Int64) {
        self.partition = partition
        self.offset = offset
    }
}

/// What a consumer receives.
public struct KafkaMessage: Sendable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [KafkaHeader]
    /// The record's timestamp (create or log-append time), when the broker provides one.
    public var timestamp: Date?
    /// The record's value is null, not empty (`value` is then empty): a tombstone (`KafkaRecord.tombstone`).
    public var valueIsNull = false

    public init(
        topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader],
        timestamp: Date?
    ) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp = timestamp
    }

    public var topicPartition: TopicPartition { TopicPartition(topic: topic, partition: partition) }

    /// The value of the last header named `key` (`[KafkaHeader].value(of:)`).
    public func header(_ key: String) -> [UInt8]? {
        headers.value(of: key)
    }

    /// The last header named `key` decoded as UTF-8, or nil (`[KafkaHeader].string(of:)`).
    public func headerString(_ key: String) -> String? {
        headers.string(of: key)
    }
}

extension [KafkaHeader] {
    /// The value of the last header named `key` (Kafka allows repeats; the last one wins).
    /// Returns nil when the header is absent or its value is null.
    public func value(of key: String) -> [UInt8]? {
        last { $0.key == key }?.value
    }

    /// The last header named `key` decoded as UTF-8, or nil.
    public func string(of key: String) -> String? {
        value(of: key).flatMap { String(validating: $0, as: UTF8.self) }
    }
}
