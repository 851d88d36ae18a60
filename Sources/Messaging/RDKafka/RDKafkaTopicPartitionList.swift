import Crdkafka

/// An owned `rd_kafka_topic_partition_list_t *`, destroyed with the value.
final class RDKafkaTopicPartitionList {
    let pointer: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>

    init(capacity: Int) {
        pointer = rd_kafka_topic_partition_list_new(Int32(clamping: max(capacity, 1)))
    }

    /// Takes ownership of a list librdkafka returned to us.
    init(owning pointer: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) {
        self.pointer = pointer
    }

    convenience init(_ partitions: some Collection<TopicPartition>) {
        self.init(capacity: partitions.count)
        for tp in partitions {
            rd_kafka_topic_partition_list_add(pointer, tp.topic, tp.partition)
        }
    }

    /// A list of partitions with an offset for each: the one to commit (the next to read), or where to start reading.
    convenience init(offsets: [TopicPartition: Int64]) {
        self.init(capacity: offsets.count)
        let sorted = offsets.sorted { ($0.key.topic, $0.key.partition) < ($1.key.topic, $1.key.partition) }
        for (tp, offset) in sorted {
            rd_kafka_topic_partition_list_add(pointer, tp.topic, tp.partition).pointee.offset = offset
        }
    }

    deinit {
        rd_kafka_topic_partition_list_destroy(pointer)
    }

    var partitions: [TopicPartition] { Self.partitions(of: pointer) }

    /// The first per-partition error in the list, if any.
    func firstError() -> (TopicPartition, rd_kafka_resp_err_t)? {
        Self.firstError(of: pointer)
    }

    static func firstError(
        of list: UnsafePointer<rd_kafka_topic_partition_list_t>
    ) -> (TopicPartition, rd_kafka_resp_err_t)? {
        elements(of: list).lazy.filter { $0.err != RD_KAFKA_RESP_ERR_NO_ERROR }
            .map { (TopicPartition(topic: String(cString: $0.topic), partition: $0.partition), $0.err) }.first
    }

    static func elements(
        of list: UnsafePointer<rd_kafka_topic_partition_list_t>
    ) -> UnsafeBufferPointer<rd_kafka_topic_partition_t> {
        UnsafeBufferPointer(start: list.pointee.elems, count: Int(list.pointee.cnt))
    }

    static func partitions(of list: UnsafePointer<rd_kafka_topic_partition_list_t>) -> [TopicPartition] {
        elements(of: list).map { TopicPartition(topic: String(cString: $0.topic), partition: $0.partition) }
    }

    static func offsets(of list: UnsafePointer<rd_kafka_topic_partition_list_t>) -> [TopicPartition: Int64] {
        var result: [TopicPartition: Int64] = [:]
        for element in elements(of: list) {
            result[TopicPartition(topic: String(cString: element.topic), partition: element.partition)] =
                element.offset
        }
        return result
    }
}

extension KafkaOffset {
    /// The first record the partition still stores.
    public static let beginning = Int64(RD_KAFKA_OFFSET_BEGINNING)
}
