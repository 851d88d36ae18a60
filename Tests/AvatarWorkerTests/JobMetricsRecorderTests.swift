import Messaging
import Testing

@testable import AvatarWorker

/// What a finished job adds to the storage-write counter (`avatar_upload_attempts_total{result}`): its labels say
/// what happened to each write, so a job that retried nothing adds no `retried`.
@Suite("Job metrics: storage writes")
struct JobMetricsRecorderTests {
    private func report(_ writes: StorageWrites, failure: JobFailure? = nil) -> JobReport {
        let job = CropJob(
            message: KafkaMessage(
                topic: "t", partition: 0, offset: 0, key: nil, value: [], headers: [], timestamp: nil),
            receivedAt: .now)
        var report = JobReport(job, outcome: .failure(failure ?? JobFailure(.internal, detail: "test")))
        report.trace.storageWrites = writes
        return report
    }

    private func counts(_ report: JobReport) -> [String: Int] {
        Dictionary(uniqueKeysWithValues: JobMetricsRecorder.storageWrites(report).map { ($0.0.rawValue, $0.1) })
    }

    @Test("an upload, a copy and a delete on the first try: three ok, nothing retried")
    func firstTry() {
        var writes = StorageWrites()
        writes += 1
        writes += 1
        writes += 1
        #expect(writes.count == 3 && writes.retried == 0 && writes.attempts == 3)
        #expect(counts(report(writes)) == ["ok": 3, "retried": 0, "failed": 0])
    }

    @Test("a write that needed a third attempt is one retried write, the others ok")
    func retried() {
        var writes = StorageWrites()
        writes += 1
        writes += 3
        var more = StorageWrites()
        more += 1
        writes += more
        #expect(writes.count == 3 && writes.retried == 1 && writes.attempts == 5)
        #expect(counts(report(writes)) == ["ok": 2, "retried": 1, "failed": 0])
    }

    @Test("a job whose storage failed counts one failed write beside the writes that succeeded before")
    func failed() {
        var writes = StorageWrites()
        writes += 1
        let failure = JobFailure(.storageUnavailable, errorClass: .transient, detail: "test")
        #expect(counts(report(writes, failure: failure)) == ["ok": 1, "retried": 0, "failed": 1])
    }
}
