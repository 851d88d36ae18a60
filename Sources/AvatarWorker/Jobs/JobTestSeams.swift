import Foundation
import RenderHelpers

/// TEST-ONLY seams in the job flow, for the crash, chaos and deadline tests, which need them in the real binary
/// (docs/ARCHITECTURE.md §3, "Test seams"). The hooks are declared in every build, since the job flow holds an
/// optional one (`CropJobProcessor.Dependencies.testSeams`, nil unless a caller sets it); what arms them —
/// `SourceMarkerSeams`, `JobTestSeamsSetting` and the render's `RenderTestSeams` — exists in debug builds only, so
/// nothing in a release build conforms. Each seam runs on the job's pool thread, except the render seams, which run
/// where the render runs (its helper process).
public protocol JobTestSeams: Sendable {
    /// The seams passed to the render (`RenderTestSeams`: in the render helper, just before the render).
    var renderSeams: RenderTestSeams? { get }
    /// With the job id, after the versioned upload and before the job asks to commit.
    func beforeCommit(jobID: String)
    /// With the job id, once the job has passed its point of no return (`JobDeadline.enterCommit`), before the
    /// publishing transaction.
    func whileCommitting(jobID: String)
    /// With the job id, once its publishing transaction committed, before the public copies and deletions.
    func afterCommit(jobID: String)
}

extension JobTestSeams {
    public var renderSeams: RenderTestSeams? { nil }
    public func beforeCommit(jobID: String) {}
    public func whileCommitting(jobID: String) {}
    public func afterCommit(jobID: String) {}
}

#if AVATAR_TEST_SEAMS
    /// The test-only setting that names the seams the CLI installs; a release build refuses it as an unknown variable.
    public enum JobTestSeamsSetting {
        public static let environmentVariable = ConfigurationValues.testSeamsVariable

        /// The seams `name` stands for; nil for no name. An unknown name is an error, so a typo cannot silently turn
        /// a crash test into a test of nothing.
        public static func seams(named name: String?) throws -> (any JobTestSeams)? {
            switch name {
            case nil, "": return nil
            case SourceMarkerSeams.name: return SourceMarkerSeams()
            case let name?:
                throw ConfigurationValues.Error(description: "\(environmentVariable): unknown seams \"\(name)\"")
            }
        }
    }

    /// Seams driven by markers in a user's photo (`AVATAR_TEST_SEAMS=source-markers`): the render helper aborts, raises
    /// a signal, sleeps or allocates on a marker inside the source (`RenderTestSeams` lists them).
    public struct SourceMarkerSeams: JobTestSeams {
        public static let name = RenderTestSeams.sourceMarkers.rawValue

        public init() {}

        public var renderSeams: RenderTestSeams? { .sourceMarkers }
    }
#endif
