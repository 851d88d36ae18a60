import TestEnvironment
import Testing

@testable import Messaging

@Suite struct OffsetTrackerTests {
    let tp = TopicPartition(topic: "t", partition: 0)

    @Test func nothingFinishedCommitsNothing() {
        var tracker = OffsetTracker()
        tracker.started(tp, offset: 5)
        tracker.started(tp, offset: 6)
        #expect(tracker.committable().isEmpty)
        #expect(tracker.inFlight(tp) == 2)
    }

    @Test func inOrderFinishesAdvanceToLastFinishedPlusOne() {
        var tracker = OffsetTracker()
        for offset in Int64(10)..<15 { tracker.started(tp, offset: offset) }
        tracker.finished(tp, offset: 10)
        tracker.finished(tp, offset: 11)
        #expect(tracker.committable() == [tp: 12])
        for offset in Int64(12)..<15 { tracker.finished(tp, offset: offset) }
        #expect(tracker.committable() == [tp: 15])
        #expect(tracker.inFlight(tp) == 0)
    }

    @Test func outOfOrderFinishWaitsForTheLowestUnfinished() {
        var tracker = OffsetTracker()
        for offset in Int64(0)..<4 { tracker.started(tp, offset: offset) }
        tracker.finished(tp, offset: 3)
        tracker.finished(tp, offset: 1)
        #expect(tracker.committable().isEmpty)  // 0 still running
        tracker.finished(tp, offset: 0)
        #expect(tracker.committable() == [tp: 2])  // 2 still running
        tracker.finished(tp, offset: 2)
        #expect(tracker.committable() == [tp: 4])
    }

    @Test func markCommittedHidesPartitionsUntilTheyAdvance() {
        var tracker = OffsetTracker()
        let other = TopicPartition(topic: "t", partition: 1)
        tracker.started(tp, offset: 0)
        tracker.started(other, offset: 7)
        tracker.finished(tp, offset: 0)
        tracker.finished(other, offset: 7)
        #expect(tracker.committable() == [tp: 1, other: 8])
        tracker.markCommitted([tp: 1, other: 8])
        #expect(tracker.committable().isEmpty)
        tracker.started(tp, offset: 1)
        tracker.finished(tp, offset: 1)
        #expect(tracker.committable() == [tp: 2])
        // An older commit confirmation arriving late never moves the mark backwards.
        tracker.markCommitted([tp: 2])
        tracker.markCommitted([tp: 1])
        #expect(tracker.committable().isEmpty)
    }

    @Test func removeForgetsRevokedPartitions() {
        var tracker = OffsetTracker()
        tracker.started(tp, offset: 3)
        tracker.finished(tp, offset: 3)
        tracker.started(tp, offset: 4)
        tracker.remove([tp])
        #expect(tracker.committable().isEmpty)
        #expect(tracker.inFlight(tp) == 0)
        tracker.markCommitted([tp: 4])  // late confirmation for a revoked partition is ignored
        #expect(tracker.trackedPartitions.isEmpty)
    }

    @Test func unknownOrRepeatedFinishesAreIgnored() {
        var tracker = OffsetTracker()
        tracker.finished(tp, offset: 1)
        #expect(tracker.committable().isEmpty)
        tracker.started(tp, offset: 2)
        tracker.started(tp, offset: 3)
        tracker.finished(tp, offset: 9)
        tracker.finished(tp, offset: 3)
        tracker.finished(tp, offset: 3)
        #expect(tracker.committable().isEmpty)
        #expect(tracker.inFlight(tp) == 1)
    }

    /// Random interleavings over several partitions, with gaps and out-of-order finishes, checked
    /// against a simple model: the committable offset is the lowest unfinished offset (or the highest
    /// finished + 1), it is never past an unfinished offset, and never at or below the last commit.
    @Test(arguments: 0..<200)
    func randomInterleavingsNeverCommitPastUnfinished(seed: Int) {
        var random = SplitMix64(seed: UInt64(seed))
        let partitions = (0...Int32(seed % 3)).map { TopicPartition(topic: "t", partition: $0) }
        var tracker = OffsetTracker()
        var next: [TopicPartition: Int64] = [:]
        var base: [TopicPartition: Int64] = [:]
        var unfinished: [TopicPartition: Set<Int64>] = [:]
        var highestFinished: [TopicPartition: Int64] = [:]
        var committed: [TopicPartition: Int64] = [:]
        for tp in partitions {
            next[tp] = Int64(random.next() % 1000)
        }
        for _ in 0..<300 {
            let tp = partitions[Int(random.next() % UInt64(partitions.count))]
            let action = random.next() % 10
            if action < 5 || unfinished[tp, default: []].isEmpty {
                let offset = next[tp]!
                // Offsets may have gaps (compaction, transaction markers).
                next[tp] = offset + 1 + (random.next() % 3 == 0 ? Int64(random.next() % 4) : 0)
                tracker.started(tp, offset: offset)
                base[tp] = base[tp] ?? offset
                unfinished[tp, default: []].insert(offset)
            } else if action < 9 {
                let pending = unfinished[tp]!.sorted()
                let offset = pending[Int(random.next() % UInt64(pending.count))]
                tracker.finished(tp, offset: offset)
                unfinished[tp]!.remove(offset)
                highestFinished[tp] = max(highestFinished[tp] ?? offset, offset)
            } else {
                let offsets = tracker.committable()
                tracker.markCommitted(offsets)
                committed.merge(offsets) { max($0, $1) }
            }

            var expected: [TopicPartition: Int64] = [:]
            for tp in partitions {
                guard let candidate = unfinished[tp]?.min() ?? highestFinished[tp].map({ $0 + 1 }) else { continue }
                if candidate > (committed[tp] ?? base[tp]!) { expected[tp] = candidate }
            }
            let committable = tracker.committable()
            #expect(committable == expected)
            for (tp, offset) in committable {
                #expect(unfinished[tp, default: []].allSatisfy { offset <= $0 }, "never past an unfinished offset")
            }
            for tp in partitions {
                #expect(tracker.inFlight(tp) == unfinished[tp, default: []].count)
            }
        }
    }
}

extension OffsetTracker {
    /// Messages of `tp` started and not finished.
    func inFlight(_ tp: TopicPartition) -> Int {
        partitions[tp]?.inFlight.count ?? 0
    }
}
