/// Tracks, per partition, the offsets handed out to jobs and those finished, and yields the offset
/// that is safe to commit: the lowest offset not yet finished, or the last finished + 1 when nothing
/// is in flight. A commit therefore never skips an unfinished message, even when jobs finish out of
/// order. Pure Swift; not thread-safe by itself (it is a value: guard it like any other state).
public struct OffsetTracker: Sendable {
    struct PartitionState: Sendable {
        /// Started and not yet finished, ascending.
        var inFlight: [Int64] = []
        /// The highest finished offset.
        var highestFinished: Int64?
        /// The lowest offset ever started: committing it would be no progress.
        var base: Int64
        /// The last offset marked committed.
        var committed: Int64?
    }

    private(set) var partitions: [TopicPartition: PartitionState] = [:]

    public init() {}

    /// A message at `offset` was handed out for processing.
    public mutating func started(_ tp: TopicPartition, offset: Int64) {
        var state = partitions[tp] ?? PartitionState(base: offset)
        state.base = min(state.base, offset)
        let index = state.inFlight.insertionIndex(of: offset)
        if index == state.inFlight.count || state.inFlight[index] != offset {
            state.inFlight.insert(offset, at: index)
        }
        partitions[tp] = state
    }

    /// Processing of the message at `offset` ended (successfully or not: it will not be retried from
    /// this consumer). Unknown offsets are ignored.
    public mutating func finished(_ tp: TopicPartition, offset: Int64) {
        guard var state = partitions[tp] else { return }
        let index = state.inFlight.insertionIndex(of: offset)
        guard index < state.inFlight.count, state.inFlight[index] == offset else { return }
        state.inFlight.remove(at: index)
        state.highestFinished = max(state.highestFinished ?? offset, offset)
        partitions[tp] = state
    }

    /// The offset to commit (next offset to read) for each partition that advanced since the last
    /// `markCommitted`.
    public func committable() -> [TopicPartition: Int64] {
        var result: [TopicPartition: Int64] = [:]
        for (tp, state) in partitions {
            let candidate: Int64
            if let lowest = state.inFlight.first {
                candidate = lowest
            } else if let finished = state.highestFinished {
                candidate = finished + 1
            } else {
                continue
            }
            if candidate > (state.committed ?? state.base) {
                result[tp] = candidate
            }
        }
        return result
    }

    /// Records a successful commit; later `committable()` calls only report progress past it.
    public mutating func markCommitted(_ offsets: [TopicPartition: Int64]) {
        for (tp, offset) in offsets {
            guard var state = partitions[tp] else { continue }  // revoked meanwhile
            state.committed = max(state.committed ?? offset, offset)
            partitions[tp] = state
        }
    }

    /// Forgets partitions (after they were revoked).
    public mutating func remove(_ tps: [TopicPartition]) {
        for tp in tps {
            partitions[tp] = nil
        }
    }

    /// Partitions currently tracked.
    public var trackedPartitions: Set<TopicPartition> {
        Set(partitions.keys)
    }
}

extension Array where Element == Int64 {
    /// The index of the first element not less than `value` (the array is sorted ascending).
    fileprivate func insertionIndex(of value: Int64) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if self[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
