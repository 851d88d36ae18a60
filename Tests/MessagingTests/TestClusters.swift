import Foundation
import MessagingTestSupport
import Testing

@testable import Messaging

struct MissingService: Error, CustomStringConvertible {
    let variable: String
    var description: String { "\(variable) is not set but AVATAR_REQUIRE_SERVICES=1 requires it" }
}

/// A Kafka cluster the shared scenarios run against: librdkafka's mock cluster (unit tests) or the
/// Tansu broker found through AVATAR_TEST_KAFKA_BROKERS (integration tests).
struct TestCluster: Sendable {
    let name: String
    let configuration: KafkaConfiguration
    let createTopic: @Sendable (_ name: String, _ partitions: Int32) throws -> Void
    /// Keeps a mock cluster alive for the duration of the test.
    let owner: (any Sendable)?

    func producer(_ properties: [String: String] = [:]) throws -> KafkaProducer {
        var configuration = configuration
        configuration.properties.merge(properties) { _, new in new }
        return try KafkaProducer(configuration: configuration, logger: testLogger("producer"))
    }

    func consumer(group: String, topics: [String], _ properties: [String: String] = [:]) throws -> KafkaConsumer {
        var configuration = configuration
        configuration.properties.merge(consumerProperties(properties)) { _, new in new }
        return try KafkaConsumer(
            configuration: configuration, groupID: group, topics: topics, logger: testLogger("consumer"))
    }

    /// A fresh librdkafka mock cluster.
    static func mock(brokers: Int32 = 1) throws -> TestCluster {
        let mock = try KafkaMockCluster(brokers: brokers, logger: testLogger("mock"))
        try mock.setGroupInitialRebalanceDelay(.zero)
        return TestCluster(
            name: "mock", configuration: mock.configuration(),
            createTopic: { name, partitions in try mock.createTopic(name, partitions: partitions) }, owner: mock)
    }

    static let brokersVariable = "AVATAR_TEST_KAFKA_BROKERS"

    static var tansuBrokers: String? {
        ProcessInfo.processInfo.environment[brokersVariable].flatMap { $0.isEmpty ? nil : $0 }
    }

    static var servicesRequired: Bool {
        ProcessInfo.processInfo.environment["AVATAR_REQUIRE_SERVICES"] == "1"
    }

    /// Integration tests run when the broker is configured, and must run when services are required.
    static var tansuEnabled: Bool { tansuBrokers != nil || servicesRequired }

    /// The Tansu broker; fails loudly when it is required but not configured.
    static func tansu() throws -> TestCluster {
        guard let brokers = tansuBrokers else {
            throw MissingService(variable: brokersVariable)
        }
        let configuration = KafkaConfiguration(bootstrapServers: brokers)
        return TestCluster(
            name: "tansu", configuration: configuration,
            createTopic: { name, partitions in
                try KafkaAdmin.createTopics(
                    [name], partitions: partitions, configuration: configuration, timeout: .seconds(30),
                    logger: testLogger("admin"))
            }, owner: nil)
    }
}
