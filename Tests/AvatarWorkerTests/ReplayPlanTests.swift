import CropProtocol
import Foundation
import Messaging
import Testing

@testable import AvatarWorker

/// The replay tool's pure parts: reading DLQ headers, the filter, the plan, the replayed
/// record's headers, time bounds and the listing. No services needed.
@Suite("Replay selection (unit)")
struct ReplayPlanTests {
    static let base = Date(timeIntervalSince1970: 1_750_000_000)

    /// A DLQ record as the worker writes it.
    static func dlq(
        job: String? = UUID().uuidString.lowercased(), user: String = UUID().uuidString.lowercased(),
        code: String = "STORAGE_UNAVAILABLE", errorClass: String? = "transient", attempts: Int = 3,
        firstFailure: Date? = base, replayCount: Int? = nil, partition: Int32 = 0, offset: Int64 = 0,
        timestamp: Date? = base, jobHeader: Bool = true, value: [UInt8]? = nil
    ) -> DLQRecord {
        var headers = [KafkaHeader(key: "content-type", string: "application/x-protobuf")]
        if let job, jobHeader { headers.append(KafkaHeader(key: "job-id", string: job)) }
        if let replayCount { headers.append(KafkaHeader(key: "replay-count", string: "\(replayCount)")) }
        headers.append(KafkaHeader(key: "error-code", string: code))
        if let errorClass { headers.append(KafkaHeader(key: "error-class", string: errorClass)) }
        headers += [
            KafkaHeader(key: "error-message", string: "Your profile picture could not be updated right now"),
            KafkaHeader(key: "attempts", string: "\(attempts)"),
            KafkaHeader(key: "original-topic", string: "avatar.crop.requests"),
            KafkaHeader(key: "original-partition", string: "1"),
            KafkaHeader(key: "original-offset", string: "42"),
        ]
        if let firstFailure {
            headers.append(KafkaHeader(key: "first-failure-time", string: firstFailure.formatted(.iso8601)))
        }
        let bytes = value ?? (try! CropCodec.encode(request(job: job ?? "", user: user).message))
        return DLQRecord(
            KafkaMessage(
                topic: "avatar.crop.dlq", partition: partition, offset: offset, key: Array(user.utf8), value: bytes,
                headers: headers, timestamp: timestamp))
    }

    static func request(job: String, user: String) -> ValidatedCropRequest {
        ValidatedCropRequest(
            jobID: job, userID: UUID(uuidString: user) ?? UUID(), sourceKey: "uploads/a.jpg", input: .centred,
            requestedAt: base)
    }

    // MARK: Reading a DLQ record

    @Test("headers are read; the job id comes from the header, else from the request bytes")
    func readsHeaders() {
        let job = UUID().uuidString.lowercased()
        let record = Self.dlq(job: job, attempts: 3, replayCount: 2, partition: 1, offset: 7, jobHeader: false)
        #expect(record.jobID == job)
        #expect(record.errorCode == "STORAGE_UNAVAILABLE")
        #expect(record.errorClass == .transient)
        #expect(record.attempts == 3)
        #expect(record.replayCount == 2)
        #expect(record.failedAt == Self.base)
        #expect(record.location == "avatar.crop.dlq/1/7")
    }

    @Test("missing class falls back to the code's class; missing failure time to the record timestamp")
    func fallbacks() {
        let record = Self.dlq(
            code: "TOO_SMALL", errorClass: nil, firstFailure: nil,
            timestamp: Self.base.addingTimeInterval(5))
        #expect(record.errorClass == .permanent)
        #expect(record.failedAt == Self.base.addingTimeInterval(5))
        #expect(record.replayCount == 0)
        let garbage = Self.dlq(
            job: nil, code: "MALFORMED_REQUEST", errorClass: "permanent",
            value: Array("{not a request".utf8))
        #expect(garbage.jobID == nil)
    }

    // MARK: Filter

    @Test("transient only by default; permanent only when asked")
    func classes() {
        let transient = Self.dlq()
        let permanent = Self.dlq(code: "TOO_SMALL", errorClass: "permanent")
        #expect(ReplayFilter().matches(transient))
        #expect(!ReplayFilter().matches(permanent))
        #expect(ReplayFilter(errorClasses: [.permanent]).matches(permanent))
        #expect(!ReplayFilter(errorClasses: [.permanent]).matches(transient))
        #expect(ReplayFilter(errorClasses: []).matches(permanent))
        #expect(ReplayFilter().failedCriteria(permanent) == [.errorClass])
    }

    @Test("error codes, users (case-insensitive) and job ids")
    func codesUsersJobs() {
        let user = UUID().uuidString.lowercased()
        let record = Self.dlq(job: "job-1", user: user, code: "DATABASE_UNAVAILABLE")
        #expect(ReplayFilter(errorCodes: ["DATABASE_UNAVAILABLE", "TIMEOUT"]).matches(record))
        #expect(!ReplayFilter(errorCodes: ["STORAGE_UNAVAILABLE"]).matches(record))
        #expect(ReplayFilter(userIDs: [user.uppercased()]).matches(record))
        #expect(!ReplayFilter(userIDs: [UUID().uuidString]).matches(record))
        #expect(ReplayFilter(jobIDs: ["job-1"]).matches(record))
        #expect(!ReplayFilter(jobIDs: ["job-2"]).matches(record))
        #expect(ReplayFilter(errorCodes: ["TIMEOUT"], jobIDs: ["job-2"]).failedCriteria(record) == [.errorCode, .job])
    }

    @Test("time range is [from, to) on the first failure time")
    func timeRange() {
        let record = Self.dlq(firstFailure: Self.base, timestamp: Self.base.addingTimeInterval(3600))
        #expect(ReplayFilter(from: Self.base).matches(record), "from is inclusive")
        #expect(!ReplayFilter(to: Self.base).matches(record), "to is exclusive")
        #expect(ReplayFilter(to: Self.base.addingTimeInterval(1)).matches(record))
        #expect(
            !ReplayFilter(from: Self.base.addingTimeInterval(1)).matches(record),
            "the header wins over the later record timestamp")
        let noTime = Self.dlq(firstFailure: nil, timestamp: nil)
        #expect(!ReplayFilter(from: Self.base).matches(noTime))
        #expect(ReplayFilter().matches(noTime))
    }

    // MARK: Plan

    @Test("a job in the DLQ twice is replayed once, from its latest record")
    func latestPerJob() {
        let older = Self.dlq(job: "job-1", replayCount: nil, offset: 3)
        let newer = Self.dlq(job: "job-1", replayCount: 1, offset: 9)
        let other = Self.dlq(job: "job-2", offset: 5)
        let plan = ReplayPlan(records: [newer, other, older], filter: ReplayFilter(), maxReplays: 3)
        #expect(plan.scanned == 3)
        #expect(plan.olderDuplicates == 1)
        #expect(plan.toReplay.map(\.location) == ["avatar.crop.dlq/0/5", "avatar.crop.dlq/0/9"])
        #expect(plan.toReplay.first { $0.jobID == "job-1" }?.replayCount == 1)
    }

    @Test("the latest record decides: a job whose last failure is permanent is not replayed by default")
    func latestDecidesClass() {
        let first = Self.dlq(job: "job-1", partition: 0, offset: 1, timestamp: Self.base)
        let again = Self.dlq(
            job: "job-1", code: "TOO_SMALL", errorClass: "permanent", partition: 0, offset: 2,
            timestamp: Self.base.addingTimeInterval(60))
        let plan = ReplayPlan(records: [first, again], filter: ReplayFilter(), maxReplays: 3)
        #expect(plan.selected.isEmpty)
        #expect(plan.excludedByClassOnly == 1)
    }

    @Test("a job at the replay limit is refused with the reason")
    func replayLimit() {
        let atLimit = Self.dlq(job: "tired", replayCount: 3, offset: 1)
        let below = Self.dlq(job: "fresh", replayCount: 2, offset: 2)
        let plan = ReplayPlan(records: [atLimit, below], filter: ReplayFilter(), maxReplays: 3)
        #expect(plan.toReplay.map(\.jobID) == ["fresh"])
        #expect(plan.refused.map(\.record.jobID) == ["tired"])
        #expect(plan.refused.first?.reason.description == "replay limit reached (3)")
        #expect(plan.refusedByReason.map(\.count) == [1])
        let none = ReplayPlan(records: [below], filter: ReplayFilter(), maxReplays: 0)
        #expect(none.toReplay.isEmpty && none.refused.first?.reason == .replayLimitReached(limit: 0))
    }

    @Test("counts by error code, most frequent first")
    func countsByCode() {
        let records = [
            Self.dlq(code: "TIMEOUT", offset: 1), Self.dlq(offset: 2), Self.dlq(offset: 3),
            Self.dlq(code: "DATABASE_UNAVAILABLE", offset: 4),
        ]
        let plan = ReplayPlan(records: records, filter: ReplayFilter(), maxReplays: 3)
        #expect(
            plan.countsByErrorCode == [
                .init(code: "STORAGE_UNAVAILABLE", count: 2), .init(code: "DATABASE_UNAVAILABLE", count: 1),
                .init(code: "TIMEOUT", count: 1),
            ])
    }

    // MARK: The replayed record

    @Test("replayed record: original key and bytes, failure headers dropped, replay-count and replayed-from added")
    func replayRecord() {
        let record = Self.dlq(job: "job-1", replayCount: 1, partition: 2, offset: 17)
        let replay = record.replayRecord(topic: "avatar.crop.requests")
        #expect(replay.topic == "avatar.crop.requests")
        #expect(replay.key == record.message.key)
        #expect(replay.value == record.message.value)
        #expect(replay.partition == nil, "the partitioner keys it by user like the original")
        func values(_ key: String) -> [String] {
            replay.headers.filter { $0.key == key }.compactMap { $0.value.map { String(decoding: $0, as: UTF8.self) } }
        }
        #expect(values("replay-count") == ["2"])
        #expect(values("replayed-from") == ["avatar.crop.dlq/2/17"])
        for dropped in ["error-code", "error-class", "error-message", "attempts"] {
            #expect(values(dropped).isEmpty, "\(dropped) describes the old failure")
        }
        #expect(values("job-id") == ["job-1"])
        #expect(values("content-type") == ["application/x-protobuf"])
        #expect(values("original-offset") == ["42"], "a job failing again keeps where it first came from")
        #expect(values("first-failure-time") == [Self.base.formatted(.iso8601)])
    }

    @Test("a first replay starts the count at 1")
    func firstReplay() {
        let replay = Self.dlq().replayRecord(topic: "r")
        #expect(replay.headers.filter { $0.key == "replay-count" }.map(\.value) == [Array("1".utf8)])
    }

    // MARK: Times and listing

    @Test("time bounds: ISO 8601, a day, or an age")
    func timeBounds() {
        let now = Self.base
        #expect(ReplayTime.parseBound("2025-01-31T09:30:00Z", now: now) == Date(timeIntervalSince1970: 1_738_315_800))
        #expect(
            ReplayTime.parseBound("2025-01-31T09:30:00.500Z", now: now)
                == Date(timeIntervalSince1970: 1_738_315_800.5))
        #expect(ReplayTime.parseBound("2025-01-31", now: now) == Date(timeIntervalSince1970: 1_738_281_600))
        #expect(ReplayTime.parseBound("90s", now: now) == now.addingTimeInterval(-90))
        #expect(ReplayTime.parseBound("30m", now: now) == now.addingTimeInterval(-1800))
        #expect(ReplayTime.parseBound("2h", now: now) == now.addingTimeInterval(-7200))
        #expect(ReplayTime.parseBound("7d", now: now) == now.addingTimeInterval(-7 * 86400))
        for bad in ["", "yesterday", "5w", "-3h", "2025-13-01"] {
            #expect(ReplayTime.parseBound(bad, now: now) == nil, "\(bad)")
        }
    }

    @Test("the dry-run listing: counts by code, then one line per job; no user ids, no bytes")
    func listing() {
        let user = UUID().uuidString.lowercased()
        let records = [
            Self.dlq(job: "job-a", user: user, offset: 1), Self.dlq(job: "job-b", user: user, offset: 2),
            Self.dlq(job: "job-c", user: user, code: "TIMEOUT", replayCount: 3, offset: 3),
            Self.dlq(job: "job-d", user: user, code: "TOO_SMALL", errorClass: "permanent", offset: 4),
        ]
        let plan = ReplayPlan(records: records, filter: ReplayFilter(), maxReplays: 3)
        let lines = ReplayListing.dryRun(plan, dlqTopic: "avatar.crop.dlq")
        let text = lines.joined(separator: "\n")
        #expect(lines[0] == "DLQ avatar.crop.dlq: 4 records read, 3 jobs selected")
        #expect(lines[1] == "By error code:")
        #expect(lines[2].hasPrefix("  STORAGE_UNAVAILABLE") && lines[2].hasSuffix("2"))
        #expect(lines[3].hasPrefix("  TIMEOUT") && lines[3].hasSuffix("1"))
        #expect(lines.contains { $0.hasPrefix("  job-a") && $0.contains("transient") && $0.hasSuffix("replay") })
        #expect(lines.contains { $0.hasPrefix("  job-c") && $0.hasSuffix("refuse: replay limit reached (3)") })
        #expect(!text.contains("job-d"), "permanent failures are not listed by default")
        #expect(text.contains("Would replay 2; would refuse 1 (replay limit reached (3): 1)"))
        #expect(text.contains("1 other job matches all filters but the error class"))
        #expect(!text.contains(user), "no user ids")
        #expect(!text.contains("uploads/"), "nothing from the request body")
    }
}
