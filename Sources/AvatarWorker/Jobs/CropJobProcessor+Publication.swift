import CropProtocol
import Foundation
import Logging

/// The publication step of a job (`UserPublication`), and what a job that did not publish says.
extension CropJobProcessor {
    /// Runs the user's publication (check → upload → bump → copy, one at a time per user across the fleet).
    /// `mayCommit` is asked just before the version bump; false (the job was timed out) commits nothing.
    func publish(
        _ request: ValidatedCropRequest, objects: [UserPublication.Object]?, blurHash: String?,
        trace: inout JobTrace, mayCommit: () -> Bool = { true }
    ) throws -> JobDisposition {
        let start = ContinuousClock.now
        let publication = publication
        var phases: [JobStep] = []
        defer { trace.recordPublication(from: start, to: .now, phases: phases) }
        let published = try databaseCall {
            let run = publication.run(
                jobID: request.jobID, userID: request.userID, requestedAt: request.requestedAt,
                objects: objects, blurHash: blurHash, mayCommit: mayCommit)
            phases += run.steps
            return try run.get()
        }
        trace.storageWrites = published.storageWrites
        return published.disposition
    }

    /// Settles a job found lost (duplicate or superseded) under the user's lock, repairing the public avatar.
    func settle(_ request: ValidatedCropRequest, trace: inout JobTrace) throws -> JobDisposition {
        let disposition = try publish(request, objects: nil, blurHash: nil, trace: &trace)
        guard case .applied(let version, _) = disposition else { return disposition }
        throw JobFailure(.internal, detail: "published version \(version) without a render")
    }

    /// Whether a forget of the user covers `report`'s crop request: asked of a job that did not publish (superseded
    /// or failed), which may be a redelivery or replay of a request from before the user's forget. Its result is
    /// then followed by the results topic's null record (`ResultsErasure`). False when the database cannot say
    /// (the forget's last look writes the null record later).
    func coveredByForget(_ report: JobReport) -> Bool {
        guard let request = report.request, request.kind == .crop else { return false }
        switch report.outcome {
        case .success(.superseded): break
        case .failure(let failure) where failure.code != .databaseUnavailable: break
        default: return false
        }
        return (try? ledger.forgetCovers(userID: request.userID, requestedAt: request.requestedAt)) ?? false
    }
}

extension JobTrace {
    /// The publication, from `start` to `end`: each of its runs' `phases` as its stage (`upload` or `database`), every
    /// moment between them (a connection, the ledger check, a retry's wait) `database`.
    mutating func recordPublication(
        from start: ContinuousClock.Instant, to end: ContinuousClock.Instant, phases: [JobStep]
    ) {
        var cursor = start
        for phase in phases.sorted(by: { $0.start < $1.start }) {
            record(.database, from: cursor, to: phase.start)
            record(phase.stage, from: max(cursor, phase.start), to: phase.end)
            cursor = max(cursor, phase.end)
        }
        record(.database, from: cursor, to: end)
    }
}
