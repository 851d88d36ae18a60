import Crdkafka
import Logging

/// Cluster administration used by tests and tooling.
public enum KafkaAdmin {
    /// Creates `names` with `partitions` partitions each. Idempotent: topics that already exist are
    /// left as they are (their partition count is not changed).
    ///
    /// - Parameter replicationFactor: -1 uses the broker's default.
    public static func createTopics(
        _ names: [String], partitions: Int32, replicationFactor: Int32 = -1, configuration: KafkaConfiguration,
        timeout: Duration, logger: Logger = Logger(label: "avatar.kafka.admin")
    ) throws {
        guard !names.isEmpty else { return }
        let client = try RDKafkaClient.make(
            kind: .producer, properties: configuration.librdkafkaProperties(), handler: AdminEvents(logger: logger))
        defer { client.destroy() }
        try client.withHandle("rd_kafka_CreateTopics") { rk in
            try createTopics(rk, names, partitions, replicationFactor, timeout)
        }
    }

    private static func createTopics(
        _ rk: OpaquePointer, _ names: [String], _ partitions: Int32, _ replicationFactor: Int32, _ timeout: Duration
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
}

/// Admin clients only log.
final class AdminEvents: RDKafkaEventHandler {
    let logger: Logger
    let metrics = KafkaMetricsRecorder()

    init(logger: Logger) {
        self.logger = logger
    }
}
