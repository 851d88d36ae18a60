import Foundation
import Testing

@testable import Messaging

@Suite struct ConfigurationTests {
    @Test func propertiesMergeDefaultsUserBootstrapAndRequiredInThatOrder() {
        let configuration = KafkaConfiguration(
            bootstrapServers: "b1:9092",
            properties: [
                "bootstrap.servers": "ignored:1", "auto.offset.reset": "latest", "group.id": "user-group",
                "client.id": "worker-1",
            ])
        let merged = Dictionary(
            uniqueKeysWithValues: configuration.librdkafkaProperties(
                defaults: KafkaConsumer.defaultProperties, required: ["group.id": "the-group"]
            ).map { ($0.key, $0.value) })
        #expect(merged["bootstrap.servers"] == "b1:9092")
        #expect(merged["auto.offset.reset"] == "latest")  // user overrides a default
        #expect(merged["enable.auto.commit"] == "false")
        #expect(merged["enable.auto.offset.store"] == "false")
        #expect(merged["client.id"] == "worker-1")
        #expect(merged["group.id"] == "the-group")  // required wins
    }

    @Test func producersLeaveOutConsumerOnlyProperties() {
        let configuration = KafkaConfiguration(
            bootstrapServers: "b:9092",
            properties: ["session.timeout.ms": "6000", "group.id": "g", "linger.ms": "5", "security.protocol": "SSL"])
        #expect(configuration.forProducer.properties == ["linger.ms": "5", "security.protocol": "SSL"])
        #expect(configuration.forProducer.bootstrapServers == "b:9092")
    }

    @Test func descriptionRedactsSecrets() {
        let configuration = KafkaConfiguration(
            bootstrapServers: "b:9092",
            properties: [
                "security.protocol": "SASL_SSL", "sasl.username": "svc", "sasl.password": "hunter2",
                "ssl.key.password": "k3y", "sasl.oauthbearer.client.secret": "s3cret",
            ])
        let text = "\(configuration)"
        #expect(text.contains("SASL_SSL"))
        #expect(text.contains("svc"))
        for secret in ["hunter2", "k3y", "s3cret"] {
            #expect(!text.contains(secret))
        }
    }

    @Test func invalidPropertyFailsWithConfigurationErrorThatHidesTheValue() throws {
        let configuration = KafkaConfiguration(
            bootstrapServers: "127.0.0.1:1", properties: ["acks": "sometimes-hunter2"])
        let error = try #require(throws: KafkaError.self) {
            try KafkaProducer(configuration: configuration, logger: testLogger())
        }
        #expect(error.code == .configuration)
        #expect(error.operation.contains("acks"))
        #expect(!error.description.contains("hunter2"))

        let unknown = try #require(throws: KafkaError.self) {
            try KafkaProducer(
                configuration: KafkaConfiguration(bootstrapServers: "x:1", properties: ["no.such.thing": "1"]),
                logger: testLogger())
        }
        #expect(unknown.code == .configuration)

        let secret = try #require(throws: KafkaError.self) {
            try KafkaConsumer(
                configuration: KafkaConfiguration(
                    bootstrapServers: "x:1",
                    properties: [
                        "security.protocol": "SASL_PLAINTEXT", "sasl.password": "hunter2", "sasl.mechanisms": "NOPE",
                    ]),
                groupID: "g", topics: ["t"], logger: testLogger())
        }
        #expect(secret.code == .configuration)
        #expect(!secret.debugDescription.contains("hunter2"))
    }
}

@Suite struct HeaderAndErrorMappingTests {
    @Test func headerLookupReturnsTheLastValueAndNullAsNil() {
        let message = KafkaMessage(
            topic: "t", partition: 0, offset: 1, key: nil, value: [],
            headers: [
                KafkaHeader(key: "a", string: "first"), KafkaHeader(key: "b", value: nil),
                KafkaHeader(key: "a", string: "second"),
            ],
            timestamp: nil)
        #expect(message.headerString("a") == "second")
        #expect(message.header("b") == nil)
        #expect(message.header("missing") == nil)
        #expect(message.headers.count == 3)
        // The same lookup on a bare header list (a record to produce, a trace carrier).
        #expect(message.headers.string(of: "a") == "second")
        #expect(message.headers.value(of: "b") == nil)
        #expect([KafkaHeader]().string(of: "a") == nil)
    }

    @Test func responseCodesMapToCategoriesAndRetriability() {
        func error(_ code: KafkaResponseCode, context: KafkaError.Code = .delivery) -> KafkaError {
            KafkaError(rd: code.rdValue, operation: "test", context: context)
        }
        #expect(error(.messageSizeTooLarge).code == .messageTooLarge)
        #expect(!error(.messageSizeTooLarge).isRetriable)
        #expect(error(.messageTimedOut).code == .timeout)
        #expect(error(.messageTimedOut).isRetriable)
        #expect(error(.unknownTopicOrPartition).code == .unknownTopic)
        #expect(error(.notLeaderForPartition).code == .delivery)
        #expect(error(.notLeaderForPartition).isRetriable)
        #expect(error(.topicAuthorizationFailed).code == .authorization)
        #expect(error(.queueFull).code == .queueFull)
        #expect(error(.transport, context: .broker).isRetriable)
        // Every failed commit is a .commit error, whatever the reason.
        #expect(error(.requestTimedOut, context: .commit).code == .commit)
        #expect(error(.unknownMemberID, context: .commit).code == .commit)
        #expect(error(.messageSizeTooLarge).errorName == "MSG_SIZE_TOO_LARGE")
        #expect(error(.messageSizeTooLarge).rawCode == 10)
        #expect(error(.messageSizeTooLarge).responseCode == .messageSizeTooLarge)
    }

    /// The codes are plain numbers outside RDKafka/; librdkafka's own names prove each is the intended one.
    @Test func responseCodeConstantsAreLibrdkafkasCodes() {
        let expected: [(KafkaResponseCode, String)] = [
            (.noError, "NO_ERROR"), (.invalidMessage, "INVALID_MSG"),
            (.unknownTopicOrPartition, "UNKNOWN_TOPIC_OR_PART"), (.leaderNotAvailable, "LEADER_NOT_AVAILABLE"),
            (.notLeaderForPartition, "NOT_LEADER_FOR_PARTITION"), (.requestTimedOut, "REQUEST_TIMED_OUT"),
            (.messageSizeTooLarge, "MSG_SIZE_TOO_LARGE"), (.networkException, "NETWORK_EXCEPTION"),
            (.coordinatorLoadInProgress, "COORDINATOR_LOAD_IN_PROGRESS"),
            (.coordinatorNotAvailable, "COORDINATOR_NOT_AVAILABLE"), (.notCoordinator, "NOT_COORDINATOR"),
            (.notEnoughReplicas, "NOT_ENOUGH_REPLICAS"), (.illegalGeneration, "ILLEGAL_GENERATION"),
            (.unknownMemberID, "UNKNOWN_MEMBER_ID"), (.rebalanceInProgress, "REBALANCE_IN_PROGRESS"),
            (.topicAuthorizationFailed, "TOPIC_AUTHORIZATION_FAILED"),
            (.groupAuthorizationFailed, "GROUP_AUTHORIZATION_FAILED"), (.topicAlreadyExists, "TOPIC_ALREADY_EXISTS"),
            (.invalidRecord, "INVALID_RECORD"), (.transport, "_TRANSPORT"), (.allBrokersDown, "_ALL_BROKERS_DOWN"),
            (.messageTimedOut, "_MSG_TIMED_OUT"), (.timedOut, "_TIMED_OUT"), (.queueFull, "_QUEUE_FULL"),
        ]
        for (code, name) in expected {
            #expect(code.name == name, "\(code.rawValue)")
        }
    }

    @Test func descriptionIsSafeAndDebugDescriptionHasDetails() {
        let error = KafkaError(
            code: .delivery, rawCode: 2, errorName: "INVALID_MSG", operation: "delivery report",
            detail: "Broker: Invalid message for topic users-secret")
        #expect(error.description == "KafkaError(delivery, INVALID_MSG (2)) in delivery report")
        #expect(!error.description.contains("users-secret"))
        #expect(error.debugDescription.contains("users-secret"))
        #expect(error.debugDescription.contains("MappingTests.swift"))
    }

    @Test func durationsBecomeClampedMilliseconds() {
        #expect(Duration.milliseconds(1500).milliseconds == 1500)
        #expect(Duration.seconds(-3).milliseconds == 0)
        #expect(Duration.seconds(Int64.max).milliseconds == Int32.max)
        #expect(Duration.microseconds(2500).milliseconds == 2)
    }
}

@Suite struct StatisticsTests {
    @Test func parsesConsumerLagPerPartitionAndSkipsTheInternalPartition() throws {
        let json = """
            {"name":"rdkafka#consumer-1","client_id":"rdkafka","type":"consumer","ts":1,"time":1700000000,
             "msg_cnt":0,"brokers":{},
             "topics":{"avatar.crop.requests":{"topic":"avatar.crop.requests","partitions":{
               "0":{"partition":0,"fetch_state":"active","consumer_lag":42,"committed_offset":100,
                    "hi_offset":142,"ls_offset":142,"msgq_cnt":0},
               "1":{"partition":1,"fetch_state":"none","consumer_lag":-1,"committed_offset":-1001,
                    "hi_offset":-1,"ls_offset":-1,"msgq_cnt":0},
               "-1":{"partition":-1,"fetch_state":"none","consumer_lag":-1,"msgq_cnt":3}}}},
             "cgrp":{"state":"up","rebalance_cnt":1}}
            """
        let stats = try KafkaStatistics(json: json)
        #expect(stats.clientName == "rdkafka#consumer-1")
        #expect(stats.clientType == "consumer")
        #expect(stats.time == Date(timeIntervalSince1970: 1_700_000_000))
        let p0 = try #require(stats.partitions[TopicPartition(topic: "avatar.crop.requests", partition: 0)])
        #expect(p0.consumerLag == 42)
        #expect(p0.committedOffset == 100)
        #expect(p0.highWatermark == 142)
        #expect(p0.fetchState == "active")
        let p1 = try #require(stats.partitions[TopicPartition(topic: "avatar.crop.requests", partition: 1)])
        #expect(p1.consumerLag == nil)
        #expect(p1.committedOffset == nil)
        #expect(stats.partitions.count == 2)
    }

    @Test func rejectsGarbage() {
        #expect(throws: (any Error).self) { try KafkaStatistics(json: "not json") }
    }
}
