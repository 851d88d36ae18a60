import CropGeometry
import CropProtocol
import Foundation
import Imaging

/// What a job that succeeded did to the user's avatar, in the result event's words (`CropDisposition`), from
/// the ledger (`AvatarLedger.Precheck`) through the publication (`UserPublication`) to the report.
public enum JobDisposition: Equatable, Sendable {
    /// A new avatar was published with this version.
    case applied(version: Int64, path: String)
    /// The job had already succeeded (redelivery or replay): nothing changed. The version it published.
    case duplicate(version: Int64, path: String?)
    /// A newer request was already published: nothing changed. The avatar the profile names now.
    case superseded(version: Int64, path: String?)
    /// A forget request erased the user (`UserForgetting`): no avatar any more; `objects` avatar objects were
    /// deleted.
    case forgotten(objects: Int)

    /// The wire's name of this disposition.
    public var wire: CropDisposition {
        switch self {
        case .applied: .applied
        case .duplicate: .duplicate
        case .superseded: .superseded
        case .forgotten: .forgotten
        }
    }

    public var version: Int64 {
        switch self {
        case .applied(let version, _), .duplicate(let version, _), .superseded(let version, _): version
        case .forgotten: 0
        }
    }

    /// The avatar's public key ("" when the profile names none).
    public var path: String {
        switch self {
        case .applied(_, let path): path
        case .duplicate(_, let path), .superseded(_, let path): path ?? ""
        case .forgotten: ""
        }
    }
}

/// What a job found and measured on its way, whatever its outcome.
public struct JobTrace: Sendable {
    public var header: ImageHeader?
    public var render: RenderResult?
    /// Every published object but the avatar's primary one (applied jobs).
    public var extraPaths: [(size: Int, path: String, format: AvatarFormat, bytes: Int)] = []
    /// The render attempt the ledger counted for this run (`AvatarLedger.markStarted`), once started.
    var renderAttempt: Int?
    public var reservedBytes: Int = 0
    /// The publication's storage writes (uploads, copies, deletes).
    public var storageWrites = StorageWrites()
    /// Where the job's time went (`JobStage`), in the order the steps ended.
    public private(set) var steps: [JobStep] = []
    /// The attempt: from a pool thread taking the job up to its report (queue wait for a thread excluded).
    public var total: Duration = .zero
    public var finishedAt = Date()
    /// When the ledger says this job first failed (the DLQ's `first-failure-time`), if it could be recorded.
    public var firstFailedAt: Date?
    /// A forget of the user covers this request (the job was redelivered or replayed after it): its result is
    /// followed by the results topic's null record for the user (`ResultsErasure`).
    public var userForgotten = false

    public init() {}

    /// Records that `stage` ran from `start` to `end` (nothing for an empty span).
    public mutating func record(_ stage: JobStage, from start: ContinuousClock.Instant, to end: ContinuousClock.Instant)
    {
        if end > start { steps.append(JobStep(stage, from: start, to: end)) }
    }

    /// The time spent in `stage`: its steps together (zero for a stage not reached).
    public func duration(of stage: JobStage) -> Duration {
        steps.reduce(.zero) { $0 + ($1.stage == stage ? $1.duration : .zero) }
    }

    /// Whether the job reached `stage`.
    public func reached(_ stage: JobStage) -> Bool { steps.contains { $0.stage == stage } }
}

/// Everything a finished job reports: the result event, the metrics record and, for a
/// failure, the DLQ record are all built from this.
public struct JobReport: Sendable {
    /// The result event's two outcomes. A success answers `request`, which it always has (a job whose message
    /// held no valid request can only fail).
    public enum Outcome: Sendable {
        case success(JobDisposition)
        case failure(JobFailure)
    }

    public let outcome: Outcome
    /// The job id and user as far as the message could be read (a malformed message may have neither).
    public let jobID: String?
    public let userID: UUID?
    /// The validated request, when the message held one: the report's one copy of it.
    public let request: ValidatedCropRequest?
    public var trace: JobTrace

    /// The report of `job`, ended as `outcome`.
    public init(_ job: CropJob, outcome: Outcome, trace: JobTrace = JobTrace()) {
        self.outcome = outcome
        self.trace = trace
        switch job.decoded {
        case .success(let request):
            (jobID, userID, self.request) = (request.jobID, request.userID, request)
        case .failure(let error):
            (jobID, userID, request) = (job.namedJobID, error.userID, nil)
        }
    }

    /// Whether the results topic's null record for the user follows this report's result: a forget's, or one of a
    /// job its forget covers.
    var erasesUser: Bool {
        if case .success(.forgotten) = outcome { return true }
        return trace.userForgotten
    }

    /// A job that ended as `failure` without a report of its own (the watchdog timed it out).
    init(_ job: CropJob, failure: JobFailure) {
        self.init(job, outcome: .failure(failure))
    }

    /// A success whose message held no request: `CropJobProcessor.process` never makes one, so its events cannot
    /// be built (an error, logged, never a crash).
    struct SuccessWithoutRequest: Error {}

    public var failure: JobFailure? {
        if case .failure(let failure) = outcome { return failure }
        return nil
    }
}
