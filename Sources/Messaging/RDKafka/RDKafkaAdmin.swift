import Crdkafka

/// The admin calls of a client (`KafkaAdmin`).
extension RDKafkaClient {
    /// Creates `names`, each with its topic configuration in `configs` (e.g. `cleanup.policy`); topics that already
    /// exist are left as they are.
    func createTopics(
        _ names: [String], partitions: Int32, replicationFactor: Int32, configs: [String: [String: String]],
        timeout: Duration
    ) throws {
        try withHandle("rd_kafka_CreateTopics") { rk in
            try Self.createTopics(rk, names, partitions, replicationFactor, configs, timeout)
        }
    }

    private static func createTopics(
        _ rk: OpaquePointer, _ names: [String], _ partitions: Int32, _ replicationFactor: Int32,
        _ configs: [String: [String: String]], _ timeout: Duration
    ) throws {
        var errorText = [CChar](repeating: 0, count: 512)
        var newTopics: [OpaquePointer?] = []
        defer { newTopics.forEach { rd_kafka_NewTopic_destroy($0) } }
        for name in names {
            guard
                let topic = rd_kafka_NewTopic_new(
                    name, partitions, replicationFactor, &errorText, errorText.count)
            else {
                throw KafkaError(
                    code: .invalidArgument, operation: "rd_kafka_NewTopic_new", detail: String(errorBuffer: errorText))
            }
            newTopics.append(topic)
            for (setting, value) in (configs[name] ?? [:]).sorted(by: { $0.key < $1.key }) {
                try rdCheck(
                    rd_kafka_NewTopic_set_config(topic, setting, value), "rd_kafka_NewTopic_set_config",
                    context: .invalidArgument)
            }
        }

        let options = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS)
        defer { rd_kafka_AdminOptions_destroy(options) }
        try rdCheck(
            rd_kafka_AdminOptions_set_operation_timeout(options, timeout.milliseconds, &errorText, errorText.count),
            "rd_kafka_AdminOptions_set_operation_timeout", context: .invalidArgument)
        try rdCheck(
            rd_kafka_AdminOptions_set_request_timeout(options, timeout.milliseconds, &errorText, errorText.count),
            "rd_kafka_AdminOptions_set_request_timeout", context: .invalidArgument)

        let queue = rd_kafka_queue_new(rk)
        defer { rd_kafka_queue_destroy(queue) }
        rd_kafka_CreateTopics(rk, &newTopics, newTopics.count, options, queue)

        // The request itself times out after `timeout`; allow a little extra for the result event.
        guard let event = rd_kafka_queue_poll(queue, timeout.milliseconds &+ 1000) else {
            throw KafkaError(code: .timeout, isRetriable: true, operation: "rd_kafka_CreateTopics")
        }
        defer { rd_kafka_event_destroy(event) }
        try rdCheck(
            rd_kafka_event_error(event), "rd_kafka_CreateTopics",
            detail: rd_kafka_event_error_string(event).map { String(cString: $0) })

        guard let result = rd_kafka_event_CreateTopics_result(event) else {
            throw KafkaError(code: .broker, operation: "rd_kafka_event_CreateTopics_result")
        }
        var count = 0
        guard let topics = rd_kafka_CreateTopics_result_topics(result, &count) else { return }
        for topic in UnsafeBufferPointer(start: topics, count: count) {
            let err = rd_kafka_topic_result_error(topic)
            guard err != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS else { continue }
            try rdCheck(
                err, "rd_kafka_CreateTopics",
                detail: rd_kafka_topic_result_error_string(topic).map { String(cString: $0) })
        }
    }

    /// The low and high watermarks of one partition, from its leader.
    func watermarks(topic: String, partition: Int32, timeout: Duration) throws -> (low: Int64, high: Int64) {
        try withHandle("rd_kafka_query_watermark_offsets") { rk in
            var low: Int64 = 0
            var high: Int64 = 0
            try rdCheck(
                rd_kafka_query_watermark_offsets(rk, topic, partition, &low, &high, timeout.milliseconds),
                "rd_kafka_query_watermark_offsets", detail: "partition \(partition)")
            return (low, high)
        }
    }

    /// The partition ids of `topic` from the cluster metadata.
    func partitionIDs(of topic: String, timeout: Duration) throws -> [Int32] {
        try withHandle("rd_kafka_metadata") { rk in try Self.partitions(rk, topic, timeout) }
    }

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
