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
        let clock = ContinuousClock()
        let start = clock.now
        let publication = publication
        var storage = Duration.zero
        defer {
            let end = clock.now
            trace.latencies[.upload, default: .zero] += storage
            trace.latencies[.database, default: .zero] += end - start - storage
            trace.steps.append(JobStep(.publication, from: start, to: end))
        }
        let published = try databaseCall {
            let run = publication.run(
                jobID: request.jobID, userID: request.userID, requestedAt: request.requestedAt,
                objects: objects, blurHash: blurHash, mayCommit: mayCommit)
            storage += run.storageTime
            trace.steps += run.steps
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
}
