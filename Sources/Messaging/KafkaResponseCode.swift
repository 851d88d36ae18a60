import Crdkafka

/// A Kafka protocol or librdkafka-local error code (`rd_kafka_resp_err_t`), without exposing the C type.
public struct KafkaResponseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    init(_ err: rd_kafka_resp_err_t) { self.rawValue = err.rawValue }

    var rdValue: rd_kafka_resp_err_t { rd_kafka_resp_err_t(rawValue: rawValue) }

    /// librdkafka's symbolic name, e.g. `NOT_LEADER_FOR_PARTITION`.
    public var name: String { String(cString: rd_kafka_err2name(rdValue)) }
    public var description: String { "\(name) (\(rawValue))" }

    public static let noError = KafkaResponseCode(RD_KAFKA_RESP_ERR_NO_ERROR)
    // Broker (protocol) errors, useful with KafkaMockCluster.pushRequestErrors.
    public static let invalidMessage = KafkaResponseCode(RD_KAFKA_RESP_ERR_INVALID_MSG)
    public static let unknownTopicOrPartition = KafkaResponseCode(RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
    public static let leaderNotAvailable = KafkaResponseCode(RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE)
    public static let notLeaderForPartition = KafkaResponseCode(RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION)
    public static let requestTimedOut = KafkaResponseCode(RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT)
    public static let messageSizeTooLarge = KafkaResponseCode(RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE)
    public static let networkException = KafkaResponseCode(RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION)
    public static let coordinatorLoadInProgress = KafkaResponseCode(RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS)
    public static let coordinatorNotAvailable = KafkaResponseCode(RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE)
    public static let notCoordinator = KafkaResponseCode(RD_KAFKA_RESP_ERR_NOT_COORDINATOR)
    public static let notEnoughReplicas = KafkaResponseCode(RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS)
    public static let illegalGeneration = KafkaResponseCode(RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION)
    public static let unknownMemberID = KafkaResponseCode(RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID)
    public static let rebalanceInProgress = KafkaResponseCode(RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS)
    public static let topicAuthorizationFailed = KafkaResponseCode(RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
    public static let groupAuthorizationFailed = KafkaResponseCode(RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED)
    public static let topicAlreadyExists = KafkaResponseCode(RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
    public static let invalidRecord = KafkaResponseCode(RD_KAFKA_RESP_ERR_INVALID_RECORD)
    // librdkafka-local errors.
    public static let transport = KafkaResponseCode(RD_KAFKA_RESP_ERR__TRANSPORT)
    public static let allBrokersDown = KafkaResponseCode(RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
    public static let messageTimedOut = KafkaResponseCode(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT)
    public static let timedOut = KafkaResponseCode(RD_KAFKA_RESP_ERR__TIMED_OUT)
    public static let queueFull = KafkaResponseCode(RD_KAFKA_RESP_ERR__QUEUE_FULL)
}
