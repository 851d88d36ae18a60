/// One timed step of a job, on the job's clock: what its trace is made of (`JobTracing`,
/// docs/ARCHITECTURE.md §3). Steps are recorded whether or not tracing is on; they cost two clock reads.
public struct JobStep: Sendable {
    /// The span each step becomes; `parent` nests the publication's steps under it.
    public enum Name: String, Sendable, CaseIterable {
        case queueWait = "queue wait"
        case renderSlotWait = "render slot wait"
        case fetch, probe, render, publication
        case lockWait = "lock wait"
        case upload, commit
        case publicCopy = "public copy"
        case repair

        /// The step this one is part of (nil: a child of the job's span).
        public var parent: Name? {
            switch self {
            case .lockWait, .upload, .commit, .publicCopy, .repair: .publication
            default: nil
            }
        }
    }

    public var name: Name
    public var start: ContinuousClock.Instant
    public var end: ContinuousClock.Instant

    public init(_ name: Name, from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) {
        self.name = name
        self.start = start
        self.end = end
    }
}
