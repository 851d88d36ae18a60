import CropGeometry
import CropProtocol
import Foundation
import TestEnvironment
import Testing

@testable import AvatarWorker

/// A worker stopped at any moment loses no job and never bumps a version twice: the real
/// `avatar-cropper worker` process is stopped mid-batch, a successor finishes the rest.
@Suite("Worker stop and crash (integration)", .requires(.database, .kafka), .serialized)
struct WorkerCrashTests {
    @Test("SIGTERM mid-batch: the worker drains and exits 0; a successor completes every job once")
    func sigterm() async throws {
        try await stopMidBatch(signal: SIGTERM)
    }

    @Test("SIGKILL mid-batch: nothing is lost and no version is bumped twice once a successor runs")
    func sigkill() async throws {
        try await stopMidBatch(signal: SIGKILL)
    }

    private func stopMidBatch(signal: Int32) async throws {
        try await withHarness(partitions: 2) { harness in
            // 8 users with 8 jobs each, in order per user: enough work that a stop lands mid-batch
            // (a 14 MP photo from the larger corpus when present, the P3 fixture otherwise).
            let users = (0..<8).map { _ in UUID() }
            let source = try harness.upload(
                "camera/dslr_nikon-d3100_14mp_big-exif.jpg", "colour/p3_displayp3-v4_craft-beer.jpg")
            var jobs: [ValidatedCropRequest] = []
            let start = Date()
            for round in 0..<8 {
                for user in users {
                    jobs.append(
                        WorkerHarness.request(
                            user: user, source: source, input: .pose(EditorPose(scale: 10), reference: nil),
                            requestedAt: start.addingTimeInterval(Double(round))))
                }
            }
            for job in jobs { try await harness.enqueue(job) }

            let first = try startWorkerProcess(harness)
            // Stop it as soon as jobs are being finished.
            _ = try await harness.events.waitFor(harness.topics.results, count: 1, timeout: .seconds(120))
            kill(first.processIdentifier, signal)
            let exited = await waitForExit(first, timeout: .seconds(30))
            #expect(exited, "the worker must exit after the signal")
            if signal == SIGTERM {
                #expect(first.terminationStatus == 0, "a drained worker exits cleanly")
            }
            let finishedBefore = harness.events.messages(on: harness.topics.results).count
            #expect(finishedBefore < jobs.count, "the worker must be stopped mid-batch for this test to mean anything")

            let successor = try startWorkerProcess(harness)
            defer { successor.terminate(); successor.waitUntilExit() }
            let results = try await harness.events.results(
                harness.topics.results, jobs: jobs.map(\.jobID), timeout: .seconds(180))
            for result in results {
                if case .failure(let failure) = result.outcome { Issue.record("job failed: \(failure.errorCode)") }
            }
            #expect(Set(results.map(\.jobID)) == Set(jobs.map(\.jobID)), "no job is lost")
            #expect(try harness.ledgerCount(status: "succeeded") == Int64(jobs.count))
            for user in users {
                // Eight jobs per user: version 8 exactly, never bumped twice by a redelivery.
                #expect(try harness.profile(user)?.version == 8)
            }
        }
    }

    @Test(
        "photos that crash, hang or exhaust their render helper fail only their own jobs; the worker finishes the rest"
    )
    func containment() async throws {
        try await withHarness(partitions: 2) { harness in
            // Each hostile job's marker acts inside its render helper (RenderTestSeams).
            let hostile: [(trailer: String, code: String)] = [
                ("AVATAR-TEST-SIGNAL=SEGV", "DECODE_FAILED"), ("AVATAR-TEST-SIGNAL=KILL", "DECODE_FAILED"),
                ("AVATAR-TEST-ABORT", "DECODE_FAILED"), ("AVATAR-TEST-ALLOCATE-MB=4096", "OUT_OF_MEMORY"),
                ("AVATAR-TEST-SLEEP-MS=60000", "TIMEOUT"),
            ]
            var expected: [String: String] = [:]
            var jobs: [ValidatedCropRequest] = []
            for (trailer, code) in hostile {
                let request = WorkerHarness.request(
                    source: try harness.upload("size/craft-beer_640x640.jpg", trailer: trailer))
                expected[request.jobID] = code
                jobs.append(request)
            }
            // Good photos of other users, in flight beside the hostile ones.
            for _ in 0..<8 {
                jobs.append(WorkerHarness.request(source: try harness.upload("orientation/Landscape_1.jpg")))
            }
            for job in jobs.shuffled() { try await harness.enqueue(job) }
            let worker = try startWorkerProcess(
                harness,
                extra: [
                    JobTestSeamsSetting.environmentVariable: SourceMarkerSeams.name,
                    "AVATAR_WORKER_RENDER_SLOTS": "2", "AVATAR_WORKER_JOB_TIMEOUT_SECONDS": "5",
                ])
            defer { worker.terminate(); worker.waitUntilExit() }
            let results = try await harness.events.results(
                harness.topics.results, jobs: jobs.map(\.jobID), timeout: .seconds(120))
            #expect(Set(results.map(\.jobID)) == Set(jobs.map(\.jobID)), "every job has a result")
            for result in results {
                switch (expected[result.jobID], result.outcome) {
                case (let code?, .failure(let failure)):
                    #expect(failure.errorCode == code, "\(code) job")
                    #expect(failure.attempts == 1, "failed on its first render, never redelivered")
                case (nil, .success(let success)):
                    #expect(success.avatarVersion == 1)
                default:
                    Issue.record("unexpected result \(result)")
                }
            }
            #expect(worker.isRunning, "no upload ended the worker")
            #expect(results.count == jobs.count, "one result per job: nothing was redelivered")
            let dlq = try await harness.events.waitFor(harness.topics.dlq, count: hostile.count)
            #expect(dlq.count == hostile.count)
        }
    }

    @Test("a job that only waited for a render slot when its worker died is not charged a crash")
    func waitingJobNotCharged() async throws {
        try await withHarness(partitions: 1) { harness in
            // One render slot, two jobs in flight. The poison job holds the slot for 30 s; the test kills the worker
            // meanwhile (a render can no longer kill its worker: this is the node's OOM killer, or a kill -9).
            let poison = WorkerHarness.request(
                source: try harness.upload("size/craft-beer_640x640.jpg", trailer: "AVATAR-TEST-SLEEP-MS=30000"))
            let waiting = WorkerHarness.request(source: try harness.upload("orientation/Landscape_1.jpg"))
            try await harness.enqueue(poison)
            let settings = [
                JobTestSeamsSetting.environmentVariable: SourceMarkerSeams.name, "SWIFT_BACKTRACE": "enable=no",
                "AVATAR_WORKER_RENDER_SLOTS": "1", "AVATAR_WORKER_JOBS_IN_FLIGHT": "2",
                "AVATAR_WORKER_MAX_CRASH_ATTEMPTS": "1",
            ]
            let first = try startWorkerProcess(harness, extra: settings)
            // The ledger says `started` once the poison job has the slot; the other job arrives behind it.
            try await TelemetryTestSupport.waitUntil("the poison job's render started", timeout: .seconds(60)) {
                try harness.ledgerStatus(jobID: poison.jobID) == "started"
            }
            try await harness.enqueue(waiting)
            try await Task.sleep(for: .seconds(1))
            kill(first.processIdentifier, SIGKILL)
            let died = await waitForExit(first, timeout: .seconds(60))
            #expect(died, "the worker must die")
            if !died { first.terminate(); first.waitUntilExit() }
            #expect(try harness.ledgerStatus(jobID: waiting.jobID) != "started", "the waiting job was charged")

            // With worker.max-crash-attempts = 1, a charged job would now fail unrendered; the poison job does.
            // (Its first helper may still be sleeping: orphaned, it exits when its render returns.)
            let successor = try startWorkerProcess(harness, extra: settings)
            defer { successor.terminate(); successor.waitUntilExit() }
            let results = try await harness.events.results(
                harness.topics.results, jobs: [poison.jobID, waiting.jobID], timeout: .seconds(120))
            for result in results {
                switch (result.jobID == poison.jobID, result.outcome) {
                case (true, .failure(let failure)):
                    #expect(failure.errorCode == "PROCESSING_FAILED")
                case (false, .success(let success)):
                    #expect(success.avatarVersion == 1)
                default:
                    Issue.record("unexpected result \(result)")
                }
            }
        }
    }

    private func startWorkerProcess(_ harness: WorkerHarness, extra: [String: String] = [:]) throws -> Process {
        let process = Process()
        process.executableURL = WorkerTestSupport.executable
        process.arguments = ["worker"]
        process.environment = try harness.processEnvironment().merging(extra) { $1 }
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }

    private func waitForExit(_ process: Process, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(50))
        }
        return !process.isRunning
    }
}
