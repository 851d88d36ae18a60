import Foundation
import Synchronization
import Testing

@testable import Messaging

/// Scenarios shared by the mock-cluster unit tests and the Tansu integration tests.
enum Scenarios {
    /// Keys (including nil), values (including empty and binary) and headers (repeated, null,
    /// binary) survive a produce → consume round trip; offsets match the delivery reports.
    static func roundTrip(_ cluster: TestCluster) async throws {
        let topic = uniqueName("roundtrip")
        try cluster.createTopic(topic, 1)
        let producer = try cluster.producer()
        defer { producer.close(timeout: .seconds(5)) }

        let records = [
            KafkaRecord(
                topic: topic, key: Array("user-1".utf8), value: Array("hello".utf8),
                headers: [
                    KafkaHeader(key: "content-type", string: "application/json"),
                    KafkaHeader(key: "attempt", string: "1"),
                    KafkaHeader(key: "attempt", string: "2"),
                    KafkaHeader(key: "empty", value: []),
                    KafkaHeader(key: "null", value: nil),
                    KafkaHeader(key: "binary", value: [0, 255, 1, 0]),
                ]),
            KafkaRecord(topic: topic, key: nil, value: [0, 1, 2, 0, 254]),
            KafkaRecord(topic: topic, key: Array("user-2".utf8), value: Array("blocking".utf8)),
        ]
        var deliveries: [(partition: Int32, offset: Int64)] = []
        deliveries.append(try await producer.send(records[0]))
        deliveries.append(try await producer.send(records[1]))
        deliveries.append(try producer.sendWaiting(records[2], timeout: .seconds(30)))
        #expect(deliveries.map(\.partition) == [0, 0, 0])
        #expect(deliveries[1].offset == deliveries[0].offset + 1)
        #expect(deliveries[2].offset == deliveries[1].offset + 1)

        let delegate = RecordingDelegate()
        let consumer = try cluster.consumer(group: uniqueName("roundtrip-group"), topics: [topic])
        defer { consumer.close() }
        consumer.run(delegate: delegate)
        try await eventually("3 messages") { delegate.messages.count >= 3 }

        let received = delegate.messages
        #expect(received.count == 3)
        for (message, (record, delivery)) in zip(received, zip(records, deliveries)) {
            #expect(message.topic == topic)
            #expect(message.partition == delivery.partition)
            #expect(message.offset == delivery.offset)
            #expect(message.key == record.key)
            #expect(message.value == record.value)
            #expect(message.headers == record.headers)
            #expect(message.timestamp != nil)
        }
        #expect(received[0].headerString("attempt") == "2")
        #expect(received[0].header("null") == nil)
        #expect(received[0].header("empty") == [])
        #expect(received[1].key == nil)
        #expect(consumer.assignment == [TopicPartition(topic: topic, partition: 0)])
    }

    /// A reader that joins no group reads exactly its partitions from the offsets it was given: the first record still
    /// stored (`KafkaOffset.beginning`) or a given one, and no rebalance reaches its delegate. The start of every
    /// partition of a topic is what `KafkaAdmin.startOfEveryPartition` lists.
    static func reader(_ cluster: TestCluster) async throws {
        let topic = uniqueName("reader")
        try cluster.createTopic(topic, 3)
        let producer = try cluster.producer()
        defer { producer.close(timeout: .seconds(5)) }
        let p0 = try await produce(producer, topic: topic, count: 3, partition: 0, prefix: "zero")
        let p1 = try await produce(producer, topic: topic, count: 4, partition: 1, prefix: "one")
        _ = try await produce(producer, topic: topic, count: 2, partition: 2, prefix: "two")

        let start = [
            TopicPartition(topic: topic, partition: 0): KafkaOffset.beginning,
            TopicPartition(topic: topic, partition: 1): p1[2].offset,
        ]
        let whole = try KafkaAdmin.startOfEveryPartition(
            of: [topic], configuration: cluster.configuration, timeout: .seconds(30))
        #expect(
            whole
                == Dictionary(
                    uniqueKeysWithValues: (0..<3).map {
                        (TopicPartition(topic: topic, partition: $0), KafkaOffset.beginning)
                    }))
        let delegate = RecordingDelegate()
        let reader = try KafkaConsumer(
            configuration: cluster.configuration, reading: start, groupID: uniqueName("reader-group"),
            logger: testLogger("reader"))
        #expect(reader.topics == [topic])
        reader.run(delegate: delegate)
        try await eventually("5 messages") { delegate.messages.count >= 5 }
        try await Task.sleep(for: .milliseconds(500))
        let read = delegate.messages
        #expect(read.filter { $0.partition == 0 }.map(\.offset) == p0.map(\.offset))
        #expect(read.filter { $0.partition == 1 }.map(\.offset) == [p1[2].offset, p1[3].offset])
        #expect(read.allSatisfy { $0.partition != 2 }, "a partition it was not given")
        #expect(reader.assignment == Set(start.keys))
        #expect(delegate.state.withLock { $0.assignCalls.isEmpty && $0.revokeCalls.isEmpty })
        reader.close()
    }

    /// A manual commit is where a second consumer of the group resumes: nothing before it is re-read,
    /// nothing after it is lost.
    static func commitThenResume(_ cluster: TestCluster) async throws {
        let topic = uniqueName("resume")
        let group = uniqueName("resume-group")
        let tp = TopicPartition(topic: topic, partition: 0)
        try cluster.createTopic(topic, 1)
        let producer = try cluster.producer()
        defer { producer.close(timeout: .seconds(5)) }
        let deliveries = try await produce(producer, topic: topic, count: 10)
        let first = deliveries[0].offset

        // The first consumer reads everything but only "finishes" the first six; its revoke on close
        // commits nothing more.
        let firstDelegate = RevokeNothingDelegate()
        let firstConsumer = try cluster.consumer(group: group, topics: [topic])
        firstConsumer.run(delegate: firstDelegate)
        try await eventually("10 messages") { firstDelegate.messages.count >= 10 }
        try firstConsumer.commit([tp: first + 6])
        #expect(try firstConsumer.committedOffsets(for: [tp], timeout: .seconds(10)) == [tp: first + 6])
        firstConsumer.stopFetching()
        #expect(firstConsumer.assignment == [tp])  // still a member
        firstConsumer.close()
        #expect(firstDelegate.revoked == [[tp]])
        firstConsumer.close()  // idempotent

        let delegate = RecordingDelegate()
        let second = try cluster.consumer(group: group, topics: [topic])
        defer { second.close() }
        second.run(delegate: delegate)
        try await eventually("the last message") { delegate.messages.contains { $0.offset == first + 9 } }
        #expect(delegate.messages.map(\.offset) == Array((first + 6)...(first + 9)))
        #expect(delegate.messages.map(\.valueString) == (6...9).map { "m-\($0)" })
    }

    /// Two consumers of one group split the partitions; the rebalance calls `revoking` on the first,
    /// whose returned offsets are committed before the partitions move, so the second consumer starts
    /// right after the work the first finished (no message is processed twice).
    ///
    /// `revokeCommitsAccepted`: librdkafka's mock group coordinator answers every OffsetCommit with
    /// REBALANCE_IN_PROGRESS while members re-join (a real Kafka coordinator, and Tansu, accept commits
    /// of the current generation then), so against the mock the commit in `revoking` fails; the test
    /// then checks the at-least-once fallback instead: every message is still consumed.
    static func rebalance(_ cluster: TestCluster, cooperative: Bool, revokeCommitsAccepted: Bool = true) async throws {
        let topic = uniqueName(cooperative ? "coop" : "eager")
        let group = uniqueName("rebalance-group")
        let all = Set((0..<Int32(4)).map { TopicPartition(topic: topic, partition: $0) })
        try cluster.createTopic(topic, 4)
        let producer = try cluster.producer()
        defer { producer.close(timeout: .seconds(5)) }
        for partition in Int32(0)..<4 {
            try await produce(producer, topic: topic, count: 5, partition: partition, prefix: "a\(partition)")
        }
        let strategy = ["partition.assignment.strategy": cooperative ? "cooperative-sticky" : "range"]

        let a = RecordingDelegate()
        let consumerA = try cluster.consumer(group: group, topics: [topic], strategy)
        defer { consumerA.close() }
        consumerA.run(delegate: a)
        try await eventually("A consumes all 20") { a.messages.count >= 20 }
        #expect(a.assigned == all)

        let b = RecordingDelegate()
        let consumerB = try cluster.consumer(group: group, topics: [topic], strategy)
        defer { consumerB.close() }
        consumerB.run(delegate: b)
        try await eventually("the partitions to be split") {
            let (inA, inB) = (a.assigned, b.assigned)
            return !inA.isEmpty && !inB.isEmpty && inA.isDisjoint(with: inB) && inA.union(inB) == all
        }
        let (revokeCalls, committedOnRevoke) = a.state.withLock { ($0.revokeCalls, $0.committedOnRevoke) }
        let revoked = Set(revokeCalls.flatMap { $0 })
        #expect(!revokeCalls.isEmpty)
        #expect(revoked.isSuperset(of: b.assigned))
        if cooperative {
            #expect(revoked == b.assigned, "cooperative rebalancing only revokes what moves")
        } else {
            #expect(revoked == all, "eager rebalancing revokes everything")
        }
        // Every revoked partition had finished work: its offset was returned by `revoking`.
        #expect(Set(committedOnRevoke.keys) == revoked)

        for partition in Int32(0)..<4 {
            try await produce(producer, topic: topic, count: 3, partition: partition, prefix: "b\(partition)")
        }
        let expected = Set((0..<Int32(4)).flatMap { p in (0..<Int64(8)).map { "\(p)/\($0)" } })
        try await eventually("all 32 messages") {
            Set((a.messages + b.messages).map { "\($0.partition)/\($0.offset)" }).isSuperset(of: expected)
        }
        guard revokeCommitsAccepted else { return }

        // ... and committed before the partitions moved: B starts right after A's finished work.
        let committed = try consumerB.committedOffsets(for: Array(revoked), timeout: .seconds(10))
        for (tp, offset) in committedOnRevoke {
            #expect((committed[tp] ?? -1) >= offset, "\(tp) committed at \(committed[tp] ?? -1), not \(offset)")
        }
        let seen = (a.messages + b.messages).map { "\($0.partition)/\($0.offset)" }
        #expect(seen.count == Set(seen).count, "no message consumed twice: \(seen.sorted())")
        #expect(b.messages.allSatisfy { $0.valueString.hasPrefix("b") }, "B never re-reads A's finished work")
    }

    /// Pausing a partition stops its delivery while other partitions flow; resuming continues with
    /// the next message, without gaps or repeats.
    static func pauseResume(_ cluster: TestCluster) async throws {
        let topic = uniqueName("paused")
        let control = uniqueName("control")
        let paused = TopicPartition(topic: topic, partition: 0)
        try cluster.createTopic(topic, 1)
        try cluster.createTopic(control, 1)
        let producer = try cluster.producer()
        defer { producer.close(timeout: .seconds(5)) }
        let deliveries = try await produce(producer, topic: topic, count: 5)

        // Pause from inside the delivery callback, as backpressure does.
        let delegate = RecordingDelegate { consumer, message in
            if message.topic == topic && message.offset == deliveries[0].offset {
                consumer.pause([paused])
            }
        }
        let consumer = try cluster.consumer(group: uniqueName("pause-group"), topics: [topic, control])
        defer { consumer.close() }
        consumer.run(delegate: delegate)
        try await eventually("the first message") { delegate.messages.contains { $0.topic == topic } }

        // While paused, a later message on another topic still arrives; the paused one stays put.
        try await produce(producer, topic: control, count: 1, prefix: "marker")
        try await eventually("the control marker") { delegate.messages.contains { $0.topic == control } }
        #expect(delegate.messages.filter { $0.topic == topic }.count == 1)

        consumer.resume([paused])
        try await eventually("all 5 messages") { delegate.messages.filter { $0.topic == topic }.count >= 5 }
        #expect(delegate.messages.filter { $0.topic == topic }.map(\.offset) == deliveries.map(\.offset))
    }

    /// A partition paused (backpressure) and then revoked starts afresh when it is assigned again: librdkafka
    /// keeps an application pause across a revoke and re-assignment, and a consumer that forgot it would never
    /// fetch that partition again (the chaos run found exactly that: a worker idle on assigned partitions).
    static func pausedPartitionResumesAfterReassignment(_ cluster: TestCluster) async throws {
        let topic = uniqueName("repaused")
        let group = uniqueName("repause-group")
        let paused = TopicPartition(topic: topic, partition: 0)
        try cluster.createTopic(topic, 2)
        let producer = try cluster.producer()
        defer { producer.close(timeout: .seconds(5)) }
        let deliveries = try await produce(producer, topic: topic, count: 5, partition: 0)
        try await produce(producer, topic: topic, count: 1, partition: 1, prefix: "other")
        let strategy = ["partition.assignment.strategy": "range"]

        // Paused once, at its first message (a redelivery after the re-assignment must not pause it again).
        let pausedOnce = Mutex(false)
        let a = RecordingDelegate { consumer, message in
            guard message.topicPartition == paused, !pausedOnce.withLock({ $0 }) else { return }
            pausedOnce.withLock { $0 = true }
            consumer.pause([paused])
        }
        let consumerA = try cluster.consumer(group: group, topics: [topic], strategy)
        defer { consumerA.close() }
        consumerA.run(delegate: a)
        try await eventually("A's first message of the paused partition") {
            a.messages.contains { $0.topicPartition == paused }
        }

        // A second member that never fetches joins and leaves: A is revoked and re-assigned its partitions.
        let consumerB = try cluster.consumer(group: group, topics: [topic], strategy)
        consumerB.stopFetching()
        consumerB.run(delegate: RecordingDelegate())
        try await eventually("A to be revoked") { !a.state.withLock { $0.revokeCalls.isEmpty } }
        consumerB.close()
        try await eventually("every message of the once-paused partition, after the re-assignment") {
            Set(a.messages.filter { $0.topicPartition == paused }.map(\.offset)).isSuperset(
                of: deliveries.map(\.offset))
        }
    }
}

/// Records messages and revokes without committing anything.
final class RevokeNothingDelegate: KafkaConsumerDelegate {
    private let state = Mutex<(messages: [KafkaMessage], revoked: [[TopicPartition]])>(([], []))

    func consumer(_ c: KafkaConsumer, received message: KafkaMessage) {
        state.withLock { $0.messages.append(message) }
    }

    func consumer(_ c: KafkaConsumer, assigned: [TopicPartition]) {}

    func consumer(_ c: KafkaConsumer, revoking: [TopicPartition]) -> [TopicPartition: Int64] {
        state.withLock { $0.revoked.append(revoking) }
        return [:]
    }

    var messages: [KafkaMessage] { state.withLock { $0.messages } }
    var revoked: [[TopicPartition]] { state.withLock { $0.revoked } }
}
