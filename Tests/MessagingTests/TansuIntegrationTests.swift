import Foundation
import TestEnvironment
import Testing

@testable import Messaging

/// Integration tests against the Kafka-protocol broker (Tansu) found through AVATAR_TEST_KAFKA_BROKERS.
/// Skipped when it is not set, unless AVATAR_REQUIRE_SERVICES=1 (then they fail loudly).
@Suite(.requires(.kafka))
struct TansuIntegrationTests {
    @Test func roundTripWithKeysAndHeaders() async throws {
        try await Scenarios.roundTrip(try .tansu())
    }

    @Test func aReaderThatJoinsNoGroupReadsItsPartitionsFromTheGivenOffsets() async throws {
        try await Scenarios.reader(try .tansu())
    }

    @Test func commitThenSecondConsumerResumesAfterIt() async throws {
        try await Scenarios.commitThenResume(try .tansu())
    }

    @Test(arguments: [false, true])
    func rebalanceCommitsWhatRevokingReturns(cooperative: Bool) async throws {
        try await Scenarios.rebalance(try .tansu(), cooperative: cooperative)
    }

    @Test func pauseAndResume() async throws {
        try await Scenarios.pauseResume(try .tansu())
    }

    @Test func pausedPartitionResumesAfterReassignment() async throws {
        try await Scenarios.pausedPartitionResumesAfterReassignment(try .tansu())
    }

    @Test func createTopicsIsIdempotent() throws {
        let cluster = try TestCluster.tansu()
        let topic = uniqueName("admin")
        try KafkaAdmin.createTopics(
            [topic], partitions: 2, configuration: cluster.configuration, timeout: .seconds(30),
            logger: testLogger())
        try KafkaAdmin.createTopics(
            [topic], partitions: 2, configuration: cluster.configuration, timeout: .seconds(30),
            logger: testLogger())
    }
}
