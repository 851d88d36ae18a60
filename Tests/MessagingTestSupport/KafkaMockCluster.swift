import Crdkafka
import Logging
import Messaging

/// librdkafka's built-in mock Kafka cluster, for tests that inject faults without a real broker.
/// Test support only: it owns its own librdkafka handle (the mock cluster lives inside one) and is
/// not part of the Messaging module.
///
/// Topics must be created with `createTopic` (the mock cluster does not implement CreateTopics).
/// Brokers have ids 1...`brokers`.
public final class KafkaMockCluster: Sendable {
    /// Kafka protocol request types (ApiKey) whose responses can be made to fail.
    public enum Request: Int16, Sendable {
        case produce = 0
        case fetch = 1
        case listOffsets = 2
        case metadata = 3
        case offsetCommit = 8
        case offsetFetch = 9
        case findCoordinator = 10
        case joinGroup = 11
        case heartbeat = 12
        case leaveGroup = 13
        case syncGroup = 14
        case initProducerID = 22
    }

    /// The bootstrap servers of the mock brokers.
    public let bootstrapServers: String
    /// The handle that owns the mock cluster (created with `test.mock.num.brokers`), and the cluster.
    private let handle: MockPointer
    private let cluster: MockPointer
    private let logBox: LogBox

    public init(brokers: Int32 = 1, logger: Logger = Logger(label: "avatar.kafka.mock")) throws {
        guard let conf = rd_kafka_conf_new() else { throw MockClusterError(operation: "rd_kafka_conf_new") }
        var errorText = [CChar](repeating: 0, count: 512)
        guard
            rd_kafka_conf_set(conf, "test.mock.num.brokers", "\(brokers)", &errorText, errorText.count)
                == RD_KAFKA_CONF_OK
        else {
            rd_kafka_conf_destroy(conf)
            throw MockClusterError(operation: "rd_kafka_conf_set(test.mock.num.brokers)")
        }
        // The mock brokers' logs, from librdkafka's threads, to `logger`.
        let logBox = LogBox(logger: logger)
        rd_kafka_conf_set_opaque(conf, Unmanaged.passUnretained(logBox).toOpaque())
        rd_kafka_conf_set_log_cb(conf) { rk, level, facility, text in
            guard let rk, let opaque = rd_kafka_opaque(rk) else { return }
            let box = Unmanaged<LogBox>.fromOpaque(opaque).takeUnretainedValue()
            box.logger.log(
                level: level <= 3 ? .error : level == 4 ? .warning : .debug,
                "\(text.map { String(cString: $0) } ?? "")",
                metadata: ["kafka.facility": "\(facility.map { String(cString: $0) } ?? "")"])
        }
        guard let rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, &errorText, errorText.count) else {
            rd_kafka_conf_destroy(conf)
            throw MockClusterError(operation: "rd_kafka_new")
        }
        guard let cluster = rd_kafka_handle_mock_cluster(rk) else {
            rd_kafka_destroy(rk)
            throw MockClusterError(operation: "rd_kafka_handle_mock_cluster")
        }
        self.logBox = logBox
        self.handle = MockPointer(pointer: rk)
        self.cluster = MockPointer(pointer: cluster)
        bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
    }

    deinit {
        rd_kafka_destroy(handle.pointer)  // destroys the mock cluster too
        withExtendedLifetime(logBox) {}
    }

    /// A configuration pointing at the mock brokers.
    public func configuration(properties: [String: String] = [:]) -> KafkaConfiguration {
        KafkaConfiguration(bootstrapServers: bootstrapServers, properties: properties)
    }

    public func createTopic(_ name: String, partitions: Int32, replicationFactor: Int32 = 1) throws {
        try check(
            rd_kafka_mock_topic_create(cluster.pointer, name, partitions, replicationFactor),
            "rd_kafka_mock_topic_create")
    }

    /// Disconnects the broker and refuses new connections.
    public func setBrokerDown(_ brokerID: Int32) throws {
        try check(rd_kafka_mock_broker_set_down(cluster.pointer, brokerID), "rd_kafka_mock_broker_set_down")
    }

    public func setBrokerUp(_ brokerID: Int32) throws {
        try check(rd_kafka_mock_broker_set_up(cluster.pointer, brokerID), "rd_kafka_mock_broker_set_up")
    }

    /// The next `errors.count` requests of type `request` (to any broker) fail with these errors, in order.
    public func pushRequestErrors(_ request: Request, _ errors: [KafkaResponseCode]) throws {
        let codes = errors.map { rd_kafka_resp_err_t(rawValue: $0.rawValue) }
        rd_kafka_mock_push_request_errors_array(cluster.pointer, request.rawValue, codes.count, codes)
    }

    /// The group coordinator's `group.initial.rebalance.delay.ms` (the mock's default is 3000).
    public func setGroupInitialRebalanceDelay(_ delay: Duration) throws {
        let milliseconds = delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000
        rd_kafka_mock_group_initial_rebalance_delay_ms(cluster.pointer, Int32(clamping: milliseconds))
    }

    /// Drops errors still queued for `request`.
    public func clearRequestErrors(_ request: Request) throws {
        rd_kafka_mock_clear_request_errors(cluster.pointer, request.rawValue)
    }

    private func check(_ err: rd_kafka_resp_err_t, _ operation: String) throws {
        guard err != RD_KAFKA_RESP_ERR_NO_ERROR else { return }
        throw MockClusterError(operation: operation, code: KafkaResponseCode(rawValue: err.rawValue))
    }
}

/// A mock cluster call failed.
public struct MockClusterError: Error, CustomStringConvertible {
    public var operation: String
    public var code: KafkaResponseCode?

    public var description: String { "\(operation) failed" + (code.map { ": \($0)" } ?? "") }
}

/// `@unchecked Sendable`: librdkafka handles and the mock cluster are thread-safe (the cluster's API
/// posts operations to its own thread); both live until `deinit`, and nothing uses them after.
private struct MockPointer: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// What the handle's opaque points to: the logger for librdkafka's log callback.
private final class LogBox: Sendable {
    let logger: Logger
    init(logger: Logger) { self.logger = logger }
}
