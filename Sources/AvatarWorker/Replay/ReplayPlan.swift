/// What a replay run will do with the DLQ, decided without touching Kafka: the latest
/// record of each job, those the filter selects, and which of them are refused.
public struct ReplayPlan: Sendable {
    /// Why a selected record is not replayed.
    public enum Refusal: Hashable, Sendable, CustomStringConvertible {
        /// The job was already replayed `limit` times.
        case replayLimitReached(limit: Int)
        /// The user was forgotten after the request (`ForgottenUsers`).
        case userForgotten

        public var description: String {
            switch self {
            case .replayLimitReached(let limit): "replay limit reached (\(limit))"
            case .userForgotten: "user forgotten after the request"
            }
        }
    }

    public struct Refused: Sendable {
        public var record: DLQRecord
        public var reason: Refusal
    }

    public struct CodeCount: Hashable, Sendable {
        public var code: String
        public var count: Int
    }

    /// DLQ records read.
    public var scanned: Int
    /// Older records of a job that also has a later one in the DLQ (it failed more than once).
    public var olderDuplicates: Int
    /// Records the filter selected, one per job (its latest), in DLQ order.
    public var selected: [DLQRecord]
    /// The selected records that will be replayed.
    public var toReplay: [DLQRecord]
    /// The selected records that will not be, with the reason.
    public var refused: [Refused]
    /// Records left out only because of their error class (a hint for `--error-class permanent`).
    public var excludedByClassOnly: Int
    public var maxReplays: Int

    /// - Parameter maxReplays: a job whose `replay-count` reached it is refused.
    public init(records: [DLQRecord], filter: ReplayFilter, maxReplays: Int) {
        scanned = records.count
        self.maxReplays = maxReplays
        var latest: [String: DLQRecord] = [:]
        for record in records {
            if let seen = latest[record.identity], !record.isLater(than: seen) { continue }
            latest[record.identity] = record
        }
        olderDuplicates = records.count - latest.count
        let current = latest.values.sorted(by: DLQRecord.dlqOrder)
        selected = current.filter(filter.matches)
        excludedByClassOnly = current.filter { filter.failedCriteria($0) == [.errorClass] }.count
        var toReplay: [DLQRecord] = []
        var refused: [Refused] = []
        for record in selected {
            if record.replayCount >= maxReplays {
                refused.append(Refused(record: record, reason: .replayLimitReached(limit: maxReplays)))
            } else {
                toReplay.append(record)
            }
        }
        self.toReplay = toReplay
        self.refused = refused
    }

    /// Refuses the records to replay that `covered` says a forget covers.
    mutating func refuse(where covered: (DLQRecord) throws -> Bool) rethrows {
        var kept: [DLQRecord] = []
        for record in toReplay {
            if try covered(record) {
                refused.append(Refused(record: record, reason: .userForgotten))
            } else {
                kept.append(record)
            }
        }
        toReplay = kept
    }

    /// Selected records per error code, most frequent first.
    public var countsByErrorCode: [CodeCount] {
        Self.counts(selected.map { $0.errorCode ?? "-" })
    }

    /// Refused records per reason, most frequent first.
    public var refusedByReason: [(reason: Refusal, count: Int)] {
        var counts: [Refusal: Int] = [:]
        for entry in refused { counts[entry.reason, default: 0] += 1 }
        return counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key.description < $1.key.description }
            .map { (reason: $0.key, count: $0.value) }
    }

    static func counts(_ codes: [String]) -> [CodeCount] {
        var counts: [String: Int] = [:]
        for code in codes { counts[code, default: 0] += 1 }
        return counts.map { CodeCount(code: $0.key, count: $0.value) }
            .sorted { $0.count != $1.count ? $0.count > $1.count : $0.code < $1.code }
    }
}
