import Foundation
import MessagingTestSupport
import MetricsTestKit
import Synchronization
import Testing

@testable import Messaging

/// Unit tests against librdkafka's in-process mock cluster: no services needed.
@Suite struct MockClusterScenarioTests {
    @Test func roundTripWithKeysAndHeaders() async throws {
        try await Scenarios.roundTrip(try .mock())
    }

    @Test func aReaderThatJoinsNoGroupReadsItsPartitionsFromTheGivenOffsets() async throws {
        try await Scenarios.reader(try .mock())
    }

    @Test func commitThenSecondConsumerResumesAfterIt() async throws {
        try await Scenarios.commitThenResume(try .mock())
    }

    @Test(arguments: [false, true])
    func rebalanceCommitsWhatRevokingReturns(cooperative: Bool) async throws {
        try await Scenarios.rebalance(try .mock(), cooperative: cooperative, revokeCommitsAccepted: false)
    }

    @Test func pauseAndResume() async throws {
        try await Scenarios.pauseResume(try .mock())
    }

    @Test func pausedPartitionResumesAfterReassignment() async throws {
        try await Scenarios.pausedPartitionResumesAfterReassignment(try .mock())
    }
}

@Suite struct MockClusterFaultTests {
    /// The statistics callback runs inside `rd_kafka_consumer_close` too; it once asked librdkafka for the
    /// assignment there, which waits on librdkafka's main thread while that thread waits for the close, and
    /// a worker's shutdown hung forever. Statistics every few milliseconds make a close land among them.
    @Test func closingWhileStatisticsArriveReturns() async throws {
        let cluster = try TestCluster.mock()
        let topic = uniqueName("stats-close")
        try cluster.createTopic(topic, 4)
        for round in 0..<40 {
            let consumer = try cluster.consumer(
                group: uniqueName("stats-close-group"), topics: [topic], ["statistics.interval.ms": "1"])
            consumer.run(delegate: RecordingDelegate())
            try await eventually("partitions assigned") { !consumer.assignment.isEmpty }
            try await Task.sleep(for: .milliseconds(20))
            let closed = Mutex(false)
            Thread.detachNewThread {
                consumer.close()
                closed.withLock { $0 = true }
            }
            // A hang is the failure: a close takes milliseconds, the wait only bounds the test.
            let deadline = ContinuousClock.now + .seconds(60)
            while !closed.withLock({ $0 }) && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            guard closed.withLock({ $0 }) else {
                Issue.record("round \(round): KafkaConsumer.close() did not return")
                return
            }
        }
    }

    @Test func aFullLocalQueueFailsTheRecordAfterTheWaitInsteadOfHoldingTheCaller() async throws {
        let mock = try KafkaMockCluster(logger: testLogger("mock"))
        try mock.createTopic("t", partitions: 1)
        let producer = try KafkaProducer(
            configuration: mock.configuration(properties: [
                "queue.buffering.max.messages": "1", "message.timeout.ms": "60000",
            ]),
            logger: testLogger())
        defer { producer.close(timeout: .seconds(1)) }
        try mock.setBrokerDown(1)
        // The first record fills the queue (the broker is down, it stays there); the second cannot be queued.
        producer.send(KafkaRecord(topic: "t", value: [1]), queueFullWait: .milliseconds(200)) { _ in }
        let second = Mutex<Result<(partition: Int32, offset: Int64), KafkaError>?>(nil)
        producer.send(KafkaRecord(topic: "t", value: [2]), queueFullWait: .milliseconds(200)) { result in
            second.withLock { $0 = result }
        }
        guard case .failure(let error) = try #require(second.withLock { $0 }) else {
            Issue.record("the second record was queued")
            return
        }
        #expect(error.code == .queueFull)
    }

    @Test func brokerDownFailsDeliveryWithARetriableErrorThenRecovers() async throws {
        let mock = try KafkaMockCluster(logger: testLogger("mock"))
        try mock.createTopic("t", partitions: 1)
        let producer = try KafkaProducer(
            configuration: mock.configuration(properties: [
                "message.timeout.ms": "1500", "reconnect.backoff.ms": "10", "reconnect.backoff.max.ms": "200",
            ]),
            logger: testLogger())
        defer { producer.close(timeout: .seconds(5)) }
        _ = try await producer.send(KafkaRecord(topic: "t", value: Array("before".utf8)))

        try mock.setBrokerDown(1)
        let error = try await #require(throws: KafkaError.self) {
            try await producer.send(KafkaRecord(topic: "t", value: Array("while down".utf8)))
        }
        #expect(error.isRetriable)
        #expect(error.code == .timeout)
        #expect(error.responseCode == .messageTimedOut)

        // Once the broker is back, retrying the retriable failure succeeds (reconnecting may take a
        // few attempts).
        try mock.setBrokerUp(1)
        var delivered: (partition: Int32, offset: Int64)?
        for _ in 0..<10 where delivered == nil {
            do {
                delivered = try await producer.send(KafkaRecord(topic: "t", value: Array("after".utf8)))
            } catch let error as KafkaError where error.isRetriable {
                continue
            }
        }
        #expect(delivered?.partition == 0)
    }

    @Test func nonRetriableProduceErrorSurfacesAsKafkaError() async throws {
        let mock = try KafkaMockCluster(logger: testLogger("mock"))
        try mock.createTopic("t", partitions: 1)
        let metrics = TestMetrics()
        let producer = try KafkaProducer(
            configuration: mock.configuration(), logger: testLogger(), metricsFactory: metrics)
        defer { producer.close(timeout: .seconds(5)) }
        _ = try await producer.send(KafkaRecord(topic: "t", value: [1]))

        try mock.pushRequestErrors(.produce, [.messageSizeTooLarge])
        let error = try await #require(throws: KafkaError.self) {
            try await producer.send(KafkaRecord(topic: "t", value: [2]))
        }
        #expect(error.code == .messageTooLarge)
        #expect(!error.isRetriable)
        #expect(error.responseCode == .messageSizeTooLarge)

        // The completion-based send (the job threads') reports the same way.
        try mock.pushRequestErrors(.produce, [.invalidRecord])
        let blocking = try #require(throws: KafkaError.self) {
            try producer.sendWaiting(KafkaRecord(topic: "t", value: [3]), timeout: .seconds(30))
        }
        #expect(blocking.code == .delivery)
        #expect(blocking.responseCode == .invalidRecord)
        _ = try producer.sendWaiting(KafkaRecord(topic: "t", value: [4]), timeout: .seconds(30))

        for name in ["MSG_SIZE_TOO_LARGE", "INVALID_RECORD"] {
            let failures = try metrics.expectCounter(
                KafkaMetricNames.deliveryFailures,
                [(KafkaMetricDimensions.topic, "t"), (KafkaMetricDimensions.error, name)])
            #expect(failures.totalValue == 1)
        }
    }

    @Test func retriableProduceErrorsAreRetriedThenSurfaceWhenRetriesRunOut() async throws {
        let mock = try KafkaMockCluster(logger: testLogger("mock"))
        try mock.createTopic("t", partitions: 1)
        let producer = try KafkaProducer(
            configuration: mock.configuration(properties: ["retries": "2", "retry.backoff.ms": "10"]),
            logger: testLogger())
        defer { producer.close(timeout: .seconds(5)) }
        _ = try await producer.send(KafkaRecord(topic: "t", value: [1]))

        // Two failures: retried transparently.
        try mock.pushRequestErrors(.produce, [.notEnoughReplicas, .notEnoughReplicas])
        _ = try await producer.send(KafkaRecord(topic: "t", value: [2]))

        // More failures than retries: the delivery fails with a retriable error.
        try mock.pushRequestErrors(.produce, Array(repeating: .notEnoughReplicas, count: 3))
        let error = try await #require(throws: KafkaError.self) {
            try await producer.send(KafkaRecord(topic: "t", value: [3]))
        }
        #expect(error.isRetriable)
        #expect(error.code == .delivery)
        #expect(error.responseCode == .notEnoughReplicas)
    }

    @Test func commitErrorsThrowCommitErrorsAndAsyncCommitsLand() async throws {
        let mock = try KafkaMockCluster(logger: testLogger("mock"))
        try mock.setGroupInitialRebalanceDelay(.zero)
        try mock.createTopic("t", partitions: 1)
        let tp = TopicPartition(topic: "t", partition: 0)
        let producer = try KafkaProducer(configuration: mock.configuration(), logger: testLogger())
        defer { producer.close(timeout: .seconds(5)) }
        try await produce(producer, topic: "t", count: 3)

        let delegate = RecordingDelegate()
        let metrics = TestMetrics()
        let consumer = try KafkaConsumer(
            configuration: mock.configuration(properties: consumerProperties()), groupID: uniqueName("g"),
            topics: ["t"], logger: testLogger(), metricsFactory: metrics)
        defer { consumer.close() }
        consumer.run(delegate: delegate)
        try await eventually("3 messages") { delegate.messages.count >= 3 }

        try mock.pushRequestErrors(.offsetCommit, [.groupAuthorizationFailed])
        let error = try #require(throws: KafkaError.self) { try consumer.commit([tp: 1]) }
        #expect(error.code == .commit)
        #expect(error.responseCode == .groupAuthorizationFailed)
        #expect(!error.isRetriable)
        let failures = try metrics.expectCounter(
            KafkaMetricNames.commitFailures,
            [(KafkaMetricDimensions.mode, "sync"), (KafkaMetricDimensions.error, "GROUP_AUTHORIZATION_FAILED")])
        #expect(failures.totalValue == 1)

        try consumer.commit([tp: 2])
        #expect(try consumer.committedOffsets(for: [tp], timeout: .seconds(10)) == [tp: 2])

        // Statistics report the lag behind the committed offset (3 messages, committed at 2).
        let lag = { () -> Double? in
            try? metrics.expectGauge(
                KafkaMetricNames.consumerLag,
                [(KafkaMetricDimensions.topic, "t"), (KafkaMetricDimensions.partition, "0")]
            ).lastValue
        }
        try await eventually("a lag of 1") { lag() == 1 }
        #expect(consumer.latestStatistics?.partitions[tp]?.committedOffset == 2)

        consumer.commitAsync([tp: 3])
        try await eventually("the async commit") {
            try consumer.committedOffsets(for: [tp], timeout: .seconds(10)) == [tp: 3]
        }
        try await eventually("a lag of 0") { lag() == 0 }

        // A failed asynchronous commit is counted when its result is served on the poll thread.
        try mock.pushRequestErrors(.offsetCommit, [.groupAuthorizationFailed])
        consumer.commitAsync([tp: 3])
        try await eventually("the async commit failure to be counted") {
            metrics.counterTotal(
                label: KafkaMetricNames.commitFailures,
                dimensions: [
                    (KafkaMetricDimensions.mode, "async"), (KafkaMetricDimensions.error, "GROUP_AUTHORIZATION_FAILED"),
                ]) == 1
        }
        try consumer.commit([:])  // nothing to commit is not an error
    }

    @Test func closeFromADelegateCallbackLeavesTheGroupAfterTheCallback() async throws {
        let cluster = try TestCluster.mock()
        try cluster.createTopic("t", 1)
        let producer = try cluster.producer()
        defer { producer.close(timeout: .seconds(5)) }
        try await produce(producer, topic: "t", count: 3)

        let delegate = RecordingDelegate { consumer, _ in consumer.close() }
        let consumer = try cluster.consumer(group: uniqueName("g"), topics: ["t"])
        consumer.run(delegate: delegate)
        try await eventually("the consumer to close") {
            (try? consumer.committedOffsets(for: [TopicPartition(topic: "t", partition: 0)], timeout: .seconds(5)))
                == nil
        }
        #expect(delegate.messages.count == 1)
        #expect(delegate.state.withLock { $0.revokeCalls } == [[TopicPartition(topic: "t", partition: 0)]])
        consumer.close()
    }

    @Test func closedClientsRejectWorkAndCloseIsIdempotent() async throws {
        let mock = try KafkaMockCluster(logger: testLogger("mock"))
        try mock.createTopic("t", partitions: 1)
        let producer = try KafkaProducer(configuration: mock.configuration(), logger: testLogger())
        _ = try await producer.send(KafkaRecord(topic: "t", value: [1]))
        producer.close(timeout: .seconds(5))
        producer.close(timeout: .seconds(5))
        let error = try await #require(throws: KafkaError.self) {
            try await producer.send(KafkaRecord(topic: "t", value: [2]))
        }
        #expect(error.code == .closed)

        let consumer = try KafkaConsumer(
            configuration: mock.configuration(), groupID: "g", topics: ["t"], logger: testLogger())
        consumer.close()
        consumer.close()
        #expect(throws: KafkaError.self) { try consumer.commit([TopicPartition(topic: "t", partition: 0): 1]) }
        #expect(consumer.assignment.isEmpty)
    }
}
