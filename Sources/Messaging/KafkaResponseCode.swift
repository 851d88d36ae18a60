/// A Kafka protocol or librdkafka-local error code, without exposing the C type. The values are
/// librdkafka's (Kafka protocol codes are positive, librdkafka's own negative); a test checks them
/// against the C enum.
public struct KafkaResponseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// librdkafka's symbolic name, e.g. `NOT_LEADER_FOR_PARTITION`.
    public var name: String { RDKafkaErrorNames.name(of: rawValue) }
    public var description: String { "\(name) (\(rawValue))" }

    public static let noError = KafkaResponseCode(rawValue: 0)
    // Broker (protocol) errors, useful with KafkaMockCluster.pushRequestErrors.
    public static let invalidMessage = KafkaResponseCode(rawValue: 2)
    public static let unknownTopicOrPartition = KafkaResponseCode(rawValue: 3)
    public static let leaderNotAvailable = KafkaResponseCode(rawValue: 5)
    public static let notLeaderForPartition = KafkaResponseCode(rawValue: 6)
    public static let requestTimedOut = KafkaResponseCode(rawValue: 7)
    public static let messageSizeTooLarge = KafkaResponseCode(rawValue: 10)
    public static let networkException = KafkaResponseCode(rawValue: 13)
    public static let coordinatorLoadInProgress = KafkaResponseCode(rawValue: 14)
    public static let coordinatorNotAvailable = KafkaResponseCode(rawValue: 15)
    public static let notCoordinator = KafkaResponseCode(rawValue: 16)
    public static let notEnoughReplicas = KafkaResponseCode(rawValue: 19)
    public static let illegalGeneration = KafkaResponseCode(rawValue: 22)
    public static let unknownMemberID = KafkaResponseCode(rawValue: 25)
    public static let rebalanceInProgress = KafkaResponseCode(rawValue: 27)
    public static let topicAuthorizationFailed = KafkaResponseCode(rawValue: 29)
    public static let groupAuthorizationFailed = KafkaResponseCode(rawValue: 30)
    public static let topicAlreadyExists = KafkaResponseCode(rawValue: 36)
    public static let invalidRecord = KafkaResponseCode(rawValue: 87)
    // librdkafka-local errors.
    public static let transport = KafkaResponseCode(rawValue: -195)
    public static let allBrokersDown = KafkaResponseCode(rawValue: -187)
    public static let messageTimedOut = KafkaResponseCode(rawValue: -192)
    public static let timedOut = KafkaResponseCode(rawValue: -185)
    public static let queueFull = KafkaResponseCode(rawValue: -184)
}
