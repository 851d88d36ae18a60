import CropProtocol
import Foundation
import Logging
import Storage

/// What happens to a job's source photo once the job no longer needs it (`storage.delete-source`,
/// docs/ARCHITECTURE.md §4). The originals carry GPS and camera EXIF the avatar strips.
public enum SourceDeletion: String, Sendable, CaseIterable {
    /// Sources stay; the app or a bucket lifecycle rule removes them.
    case never
    /// A job that ends applied, duplicate or superseded deletes its source (a superseded job can never apply, and a
    /// duplicate's first run applied). A failed job keeps it, so a replay can still render it.
    case afterSuccess = "after-success"

    /// Whether a job with this outcome is done with its source.
    func deletes(after outcome: JobReport.Outcome) -> Bool {
        switch (self, outcome) {
        case (.afterSuccess, .success(.applied, _)), (.afterSuccess, .success(.duplicate, _)),
            (.afterSuccess, .success(.superseded, _)):
            true
        default: false
        }
    }
}

extension CropJobProcessor {
    /// Deletes the source of a crop job that is done with it, best effort: a source left behind is only kept
    /// longer (a bucket lifecycle rule catches it), and the job's outcome stands.
    func deleteSource(of report: JobReport) {
        guard let request = report.request, request.kind == .crop,
            dependencies.deleteSource.deletes(after: report.outcome)
        else { return }
        do {
            _ = try dependencies.fetchRetry.run { _ throws(StorageError) in
                try dependencies.sources.delete(request.sourceKey)
            }
        } catch {
            dependencies.logger.warning(
                "could not delete the job's source",
                metadata: [LogKey.jobID: "\(request.jobID)", LogKey.errorCode: "\(error.code)"])
        }
    }
}
