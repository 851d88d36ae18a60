import CropProtocol
import Foundation
import Logging
import Messaging
import TestEnvironment
import Testing

@testable import AvatarWorker

/// The replay tool on the real broker, Postgres and object store.
@Suite("DLQ replay (integration)", .requires(.database, .kafka))
struct ReplayIntegrationTests {
    @Test("jobs that failed while storage was down all succeed after it returns and a replay runs; twice is a no-op")
    func storageOutageThenReplay() async throws {
        try await withHarness { harness in
            // A worker whose avatar store is down (nothing listens); sources still read.
            try harness.startWorker([
                "storage.sources-url=\(harness.storeRoot.absoluteString)",
                "storage.url=s3://avatars?endpoint=http://127.0.0.1:9&region=us-east-1",
                "storage.s3.access-key-id=test", "storage.s3.secret-access-key=test",
            ])
            let source = try harness.upload("size/craft-beer_640x640.jpg")
            let transient = (0..<3).map { _ in WorkerHarness.request(source: source) }
            let permanent = WorkerHarness.request(source: try harness.upload("size/craft-beer_319x479.jpg"))
            for request in transient + [permanent] { try await harness.enqueue(request) }
            let failures = try await harness.events.results(
                harness.topics.results, jobs: (transient + [permanent]).map(\.jobID))
            let failed = failures.filter(Self.isFailure).count
            #expect(failed == 4)
            let dlq = try await harness.events.waitFor(harness.topics.dlq, count: 4)
            let transientRecords = dlq.filter { $0.headerString("error-class") == "transient" }.count
            #expect(transientRecords == 3)
            let replayer = try DLQReplayer(
                settings: try DLQReplayer.Settings(values: harness.values()),
                logger: harness.logger)

            // A replay while storage is still down: the jobs fail again and come back to the
            // DLQ carrying their replay count, when they first failed (the ledger's record) and where the
            // worker consumed them this time.
            let early = try await replayer.replay(try await replayer.plan(ReplayFilter()))
            #expect(early.replayed.count == 3)
            let again = try await harness.events.waitFor(harness.topics.dlq, count: 7)
            let refailed = again.filter { $0.headerString("replay-count") == "1" }
            #expect(refailed.count == 3)
            for record in refailed {
                let first = dlq.first { $0.key == record.key }
                #expect(record.headerString("replayed-from")?.hasPrefix("\(harness.topics.dlq)/") == true)
                #expect(record.headerString("first-failure-time") == first?.headerString("first-failure-time"))
                // Provenance is the worker's own: where it consumed the replayed copy (issue 8).
                #expect(record.headerString("original-topic") == harness.topics.requests)
                #expect(record.headerString("original-offset") != first?.headerString("original-offset"))
            }
            await harness.stopWorkers()

            // Storage is back: a healthy worker, then a replay with the default filter.
            try harness.startWorker()
            let plan = try await replayer.plan(ReplayFilter())
            #expect(plan.scanned == 7)
            #expect(plan.olderDuplicates == 3, "each job once, by its latest record")
            #expect(Set(plan.selected.compactMap(\.jobID)) == Set(transient.map(\.jobID)))
            let latest = plan.selected.filter {
                $0.errorCode == "STORAGE_UNAVAILABLE" && $0.attempts == 3 && $0.replayCount == 1
            }
            #expect(latest.count == 3)
            #expect(plan.excludedByClassOnly == 1, "the too-small photo is permanent: not replayed by default")
            let outcome = try await replayer.replay(plan)
            #expect(outcome.replayed.count == 3 && outcome.refused.isEmpty && outcome.failed.isEmpty)
            let replayedJobs = Set(outcome.replayed.compactMap(\.jobID))
            #expect(!replayedJobs.contains(permanent.jobID))

            let applied = try await successes(harness, jobs: transient.map(\.jobID), disposition: .applied)
            for request in transient {
                #expect(applied[request.jobID]?.avatarVersion == 1)
                #expect(try harness.profile(request.userID)?.version == 1)
            }
            #expect(try harness.ledgerCount(status: "succeeded") == 3)

            // Replaying again (the CLI this time) changes nothing: every job is a duplicate.
            let output = try await runReplayCLI(harness, arguments: ["--no-progress"])
            #expect(output.status == 0)
            #expect(output.stdout.contains("Replayed 3; refused 0"), "\(output.stdout)")
            let duplicates = try await successes(harness, jobs: transient.map(\.jobID), disposition: .duplicate)
            for request in transient {
                #expect(duplicates[request.jobID]?.avatarVersion == 1)
                #expect(try harness.profile(request.userID)?.version == 1, "a replay of a success is a no-op")
            }
            #expect(try harness.ledgerCount(status: "succeeded") == 3)
            let permanentResults = try decodedResults(harness).filter { $0.jobID == permanent.jobID }
            #expect(permanentResults.count == 1, "the permanent failure was never replayed")
        }
    }

    @Test("reads every DLQ partition, replays each job's latest record with replay headers, refuses the limit")
    func headersLatestAndLimit() async throws {
        try await withHarness(partitions: 2) { harness in
            let replayer = try DLQReplayer(
                settings: try DLQReplayer.Settings(values: harness.values()),
                logger: harness.logger)
            #expect(try await replayer.plan(ReplayFilter()).scanned == 0, "an empty DLQ reads as empty")

            let userA = UUID().uuidString.lowercased()
            let userB = UUID().uuidString.lowercased()
            // Job A failed, was replayed once and failed again: two records, the later one counts.
            let a1 = dlqRecord(harness, job: "job-a", user: userA, replayCount: nil)
            let a2 = dlqRecord(harness, job: "job-a", user: userA, replayCount: 1)
            try await send(harness, [a1], partition: 0)
            try await send(harness, [a2], partition: 0)
            // Sent together so the broker stores them as one batch.
            try await send(
                harness,
                [
                    dlqRecord(harness, job: "job-b", user: userB, replayCount: 3),
                    dlqRecord(harness, job: "job-c", user: userB, code: "TOO_SMALL", errorClass: "permanent"),
                    dlqRecord(harness, job: "job-d", user: userB, replayCount: nil),
                ], partition: 1)

            let plan = try await replayer.plan(ReplayFilter())
            #expect(plan.scanned == 5)
            #expect(plan.olderDuplicates == 1)
            #expect(Set(plan.selected.compactMap(\.jobID)) == ["job-a", "job-b", "job-d"])
            let outcome = try await replayer.replay(plan)
            #expect(Set(outcome.replayed.compactMap(\.jobID)) == ["job-a", "job-d"])
            #expect(outcome.refused.map(\.record.jobID) == ["job-b"])
            #expect(outcome.refused.map(\.reason.description) == ["replay limit reached (3)"])

            let reader = try EventReader(
                kafka: harness.kafka, topics: [harness.topics.requests], logger: harness.logger)
            defer { reader.close() }
            let replayed = try await reader.waitFor(harness.topics.requests, count: 2)
            #expect(replayed.count == 2)
            let byJob = Dictionary(
                replayed.map { ($0.headerString("job-id") ?? "", $0) }, uniquingKeysWith: { a, _ in a })
            let a = try #require(byJob["job-a"])
            #expect(a.headerString("replay-count") == "2")
            #expect(a.headerString("replayed-from") == "\(harness.topics.dlq)/0/1", "the later record of job A")
            #expect(a.key == Array(userA.utf8))
            #expect(a.value == a2.value)
            #expect(a.header("error-code") == nil && a.header("error-class") == nil && a.header("attempts") == nil)
            #expect(a.headerString("first-failure-time") == "2025-06-15T15:06:40Z")
            let d = try #require(byJob["job-d"])
            #expect(d.headerString("replay-count") == "1")
            #expect(d.headerString("replayed-from")?.hasPrefix("\(harness.topics.dlq)/1/") == true)

            // The filters on the real DLQ: a job id, and permanent failures when asked for.
            let onlyD = try await replayer.plan(ReplayFilter(jobIDs: ["job-d"]))
            #expect(onlyD.selected.compactMap(\.jobID) == ["job-d"])
            let permanent = try await replayer.plan(ReplayFilter(errorClasses: [.permanent]))
            #expect(permanent.selected.compactMap(\.jobID) == ["job-c"])
            let userFilter = try await replayer.plan(ReplayFilter(userIDs: [userA.uppercased()]))
            #expect(userFilter.selected.compactMap(\.jobID) == ["job-a"])
        }
    }

    @Test("the CLI dry run lists counts by error code and the jobs, and sends nothing")
    func dryRunCLI() async throws {
        try await withHarness(partitions: 1) { harness in
            try await send(
                harness,
                [
                    dlqRecord(harness, job: "job-x", user: UUID().uuidString.lowercased(), replayCount: nil),
                    dlqRecord(harness, job: "job-y", user: UUID().uuidString.lowercased(), replayCount: 3),
                ], partition: 0)
            let output = try await runReplayCLI(
                harness, arguments: ["--dry-run", "--error-code", "STORAGE_UNAVAILABLE"])
            #expect(output.status == 0)
            let lines = output.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first == "DLQ \(harness.topics.dlq): 2 records read, 2 jobs selected")
            #expect(lines.contains { $0.hasPrefix("  STORAGE_UNAVAILABLE") && $0.hasSuffix("2") })
            #expect(lines.contains { $0.hasPrefix("  job-x") && $0.hasSuffix("replay") })
            #expect(lines.contains { $0.hasPrefix("  job-y") && $0.hasSuffix("refuse: replay limit reached (3)") })
            #expect(lines.last == "Would replay 1; would refuse 1 (replay limit reached (3): 1)")
            let requests = try KafkaAdmin.partitionOffsets(
                of: harness.topics.requests, configuration: harness.kafka, timeout: .seconds(10))
            let sent = requests.reduce(0) { $0 + $1.high - $1.low }
            #expect(sent == 0, "a dry run sends nothing")

            let bad = try await runReplayCLI(harness, arguments: ["--dry-run", "--error-code", "NOPE"])
            #expect(bad.status != 0)
        }
    }

    // MARK: Helpers

    private static func isFailure(_ result: Avatar_Crop_V1_CropResult) -> Bool {
        if case .failure = result.outcome { return true }
        return false
    }

    /// A DLQ record as the worker writes it for a storage outage.
    private func dlqRecord(
        _ harness: WorkerHarness, job: String, user: String, code: String = "STORAGE_UNAVAILABLE",
        errorClass: String = "transient", replayCount: Int? = nil
    ) -> KafkaRecord {
        let request = WorkerHarness.request(user: UUID(uuidString: user)!, source: "uploads/x.jpg", jobID: job)
        var headers = [
            KafkaHeader(key: "content-type", string: "application/x-protobuf"),
            KafkaHeader(key: "job-id", string: job),
        ]
        if let replayCount { headers.append(KafkaHeader(key: "replay-count", string: "\(replayCount)")) }
        headers += [
            KafkaHeader(key: "error-code", string: code), KafkaHeader(key: "error-class", string: errorClass),
            KafkaHeader(key: "error-message", string: "try again later"), KafkaHeader(key: "attempts", string: "3"),
            KafkaHeader(key: "original-topic", string: harness.topics.requests),
            KafkaHeader(key: "original-partition", string: "0"), KafkaHeader(key: "original-offset", string: "0"),
            KafkaHeader(key: "first-failure-time", string: "2025-06-15T15:06:40Z"),
        ]
        return KafkaRecord(
            topic: harness.topics.dlq, key: Array(user.utf8), value: try! CropCodec.encode(request.message),
            headers: headers)
    }

    /// Sends `records` to one DLQ partition, all at once.
    private func send(_ harness: WorkerHarness, _ records: [KafkaRecord], partition: Int32) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for var record in records {
                record.partition = partition
                group.addTask { _ = try await harness.producer.send(record) }
            }
            try await group.waitForAll()
        }
    }

    private func decodedResults(_ harness: WorkerHarness) throws -> [Avatar_Crop_V1_CropResult] {
        try harness.events.messages(on: harness.topics.results).map {
            try CropCodec.decode(Avatar_Crop_V1_CropResult.self, from: $0.value, format: .protobuf)
        }
    }

    /// Waits until each job has a success result with `disposition`.
    private func successes(
        _ harness: WorkerHarness, jobs: [String], disposition: Avatar_Crop_V1_CropResult.Disposition
    ) async throws -> [String: Avatar_Crop_V1_CropResult.Success] {
        let deadline = ContinuousClock.now + .seconds(120)
        while true {
            var found: [String: Avatar_Crop_V1_CropResult.Success] = [:]
            for result in try decodedResults(harness) where jobs.contains(result.jobID) {
                if case .success(let success) = result.outcome, success.disposition == disposition {
                    found[result.jobID] = success
                }
            }
            if found.count == jobs.count { return found }
            guard ContinuousClock.now < deadline else {
                Issue.record("no \(disposition) result for \(jobs.filter { found[$0] == nil })")
                return found
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Runs `avatar-cropper replay` with the harness's configuration in the environment.
    /// Blocking waits run on a Dispatch thread, off the cooperative pool the in-process worker uses.
    private func runReplayCLI(
        _ harness: WorkerHarness, arguments: [String]
    ) async throws -> (status: Int32, stdout: String) {
        let process = Process()
        process.executableURL = WorkerTestSupport.executable
        process.arguments = ["replay"] + arguments
        process.environment = try harness.processEnvironment()
        let stdout = Pipe()
        process.standardOutput = stdout
        try process.run()
        return await offPool {
            let data = stdout.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
    }
}
