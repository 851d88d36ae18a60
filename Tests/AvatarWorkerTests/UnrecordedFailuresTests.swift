import Foundation
import Testing

@testable import AvatarWorker

@Suite("Unrecorded failures")
struct UnrecordedFailuresTests {
    private func note(_ jobID: String, attempt: Int = 1) -> UnrecordedFailures.Note {
        UnrecordedFailures.Note(
            jobID: jobID, userID: UUID(), errorCode: "DATABASE_UNAVAILABLE", attempts: 3, failedAt: Date(),
            renderAttempt: attempt)
    }

    @Test("the job's own note comes first, then a bounded batch of others; taken notes are gone")
    func takeOwnFirst() {
        let failures = UnrecordedFailures()
        for index in 0..<40 { failures.add(note("job-\(index)")) }
        let taken = failures.take(jobID: "job-7")
        #expect(taken.first?.jobID == "job-7")
        #expect(taken.count == 1 + UnrecordedFailures.flushBatch)
        #expect(failures.count == 40 - taken.count)
        #expect(failures.take(jobID: "job-7").allSatisfy { $0.jobID != "job-7" })
    }

    @Test("a later note of the same job replaces the earlier one")
    func laterNoteWins() {
        let failures = UnrecordedFailures()
        failures.add(note("job", attempt: 1))
        failures.add(note("job", attempt: 2))
        #expect(failures.count == 1)
        #expect(failures.take(jobID: "job").map(\.renderAttempt) == [2])
    }

    @Test("an outage cannot grow the notes without bound")
    func bounded() {
        let failures = UnrecordedFailures()
        for index in 0..<(UnrecordedFailures.capacity + 5) { failures.add(note("job-\(index)")) }
        #expect(failures.count == UnrecordedFailures.capacity)
        #expect(failures.dropped == 5)
    }
}
