import Foundation
import Synchronization

/// Failures the ledger could not be told of when they happened, because the database was what failed.
///
/// A job's ledger row says `started` from the moment its render starts until its outcome is recorded, and a row
/// found still `started` by the next attempt counts as a worker that died on the job (`AvatarLedger.markStarted`,
/// the poison-message rule). A job failed by a database outage returns normally but leaves its row `started`,
/// so two outages would make a healthy job look like a poison message. The worker keeps such failures here and
/// writes them as soon as the database answers again: before the next start of the same job, and a few at a time
/// after any job's first successful ledger call. A note is written only while the row still holds the attempt
/// that failed (`AvatarLedger.recordLateFailure`). Notes live in the process: one that dies with its worker is
/// lost, and then the job's next attempt counts it as a crash, as before.
public final class UnrecordedFailures: Sendable {
    struct Note: Sendable, Equatable {
        var jobID: String
        var userID: UUID
        var errorCode: String
        var attempts: Int
        var failedAt: Date
        /// The `render_attempts` the failed attempt's row held.
        var renderAttempt: Int
    }

    /// Bounds the memory an outage can take; past it new notes are dropped (counted in `dropped`).
    static let capacity = 10_000
    /// Notes written after one job's successful ledger call, besides its own.
    static let flushBatch = 16

    private struct State {
        var notes: [String: Note] = [:]
        var dropped = 0
    }

    private let state = Mutex(State())

    public init() {}

    func add(_ note: Note) {
        state.withLock { state in
            guard state.notes.count < Self.capacity || state.notes[note.jobID] != nil else {
                state.dropped += 1
                return
            }
            state.notes[note.jobID] = note
        }
    }

    /// Takes the note of `jobID` and up to `flushBatch` others out (put back with `add` if writing fails).
    func take(jobID: String) -> [Note] {
        state.withLock { state in
            var taken: [Note] = []
            if let own = state.notes.removeValue(forKey: jobID) { taken.append(own) }
            for key in state.notes.keys.prefix(Self.flushBatch) {
                if let note = state.notes.removeValue(forKey: key) { taken.append(note) }
            }
            return taken
        }
    }

    var count: Int { state.withLock { $0.notes.count } }
    var dropped: Int { state.withLock { $0.dropped } }
}
