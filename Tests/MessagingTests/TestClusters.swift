import Foundation
import MessagingTestSupport
import TestEnvironment
import Testing

@testable import Messaging

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

    /// The Tansu broker (`TestService.kafka`); fails loudly when it is required but not configured.
    static func tansu() throws -> TestCluster {
        let brokers = try TestService.kafka.require()
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
