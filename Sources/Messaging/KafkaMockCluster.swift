import Crdkafka
import Logging

/// librdkafka's built-in mock Kafka cluster, for tests that inject faults without a real broker.
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
    /// The handle that owns the mock cluster (created with `test.mock.num.brokers`).
    private let client: RDKafkaClient
    private let cluster: MockClusterPointer

    public init(brokers: Int32 = 1, logger: Logger = Logger(label: "avatar.kafka.mock")) throws {
        client = try RDKafkaClient.make(
            kind: .producer, properties: [("test.mock.num.brokers", "\(brokers)")],
            handler: AdminEvents(logger: logger))
        let cluster = try client.withHandle("rd_kafka_handle_mock_cluster") { rk -> OpaquePointer in
            guard let cluster = rd_kafka_handle_mock_cluster(rk) else {
                throw KafkaError(code: .configuration, operation: "rd_kafka_handle_mock_cluster")
            }
            return cluster
        }
        self.cluster = MockClusterPointer(pointer: cluster)
        bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
    }

    deinit {
        client.destroy()  // destroys the mock cluster too
    }

    /// A configuration pointing at the mock brokers.
    public func configuration(properties: [String: String] = [:]) -> KafkaConfiguration {
        KafkaConfiguration(bootstrapServers: bootstrapServers, properties: properties)
    }

    public func createTopic(_ name: String, partitions: Int32, replicationFactor: Int32 = 1) throws {
        try client.withHandle("rd_kafka_mock_topic_create") { _ in
            try rdCheck(
                rd_kafka_mock_topic_create(cluster.pointer, name, partitions, replicationFactor),
                "rd_kafka_mock_topic_create", context: .invalidArgument)
        }
    }

    /// Disconnects the broker and refuses new connections.
    public func setBrokerDown(_ brokerID: Int32) throws {
        try client.withHandle("rd_kafka_mock_broker_set_down") { _ in
            try rdCheck(rd_kafka_mock_broker_set_down(cluster.pointer, brokerID), "rd_kafka_mock_broker_set_down")
        }
    }

    public func setBrokerUp(_ brokerID: Int32) throws {
        try client.withHandle("rd_kafka_mock_broker_set_up") { _ in
            try rdCheck(rd_kafka_mock_broker_set_up(cluster.pointer, brokerID), "rd_kafka_mock_broker_set_up")
        }
    }

    /// The next `errors.count` requests of type `request` (to any broker) fail with these errors, in order.
    public func pushRequestErrors(_ request: Request, _ errors: [KafkaResponseCode]) throws {
        let codes = errors.map(\.rdValue)
        try client.withHandle("rd_kafka_mock_push_request_errors_array") { _ in
            rd_kafka_mock_push_request_errors_array(cluster.pointer, request.rawValue, codes.count, codes)
        }
    }

    /// The group coordinator's `group.initial.rebalance.delay.ms` (the mock's default is 3000).
    public func setGroupInitialRebalanceDelay(_ delay: Duration) throws {
        try client.withHandle("rd_kafka_mock_group_initial_rebalance_delay_ms") { _ in
            rd_kafka_mock_group_initial_rebalance_delay_ms(cluster.pointer, delay.milliseconds)
        }
    }

    /// Drops errors still queued for `request`.
    public func clearRequestErrors(_ request: Request) throws {
        try client.withHandle("rd_kafka_mock_clear_request_errors") { _ in
            rd_kafka_mock_clear_request_errors(cluster.pointer, request.rawValue)
        }
    }
}

/// `@unchecked Sendable`: the mock cluster is thread-safe (its API posts operations to the cluster's
/// own thread) and lives as long as the handle owning it; it is only used through that handle's
/// `withHandle`, so never after destruction.
private struct MockClusterPointer: @unchecked Sendable {
    let pointer: OpaquePointer
}
