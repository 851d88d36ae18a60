/// The render helper pool's bookkeeping as a value (docs/ARCHITECTURE.md §3, "Render helpers"): which helpers are
/// starting, idle or busy, and what the shell (`RenderHelperPool`) must do after each event — start one, kill one.
/// It runs no process and no thread, so the policy is tested on its own (`HelperPoolStateTests`).
///
/// The policy (docs/SECURITY.md, "One job per helper"): `size` helpers are kept. A helper serves one job — one user —
/// and is then killed, whatever the job's outcome, and a fresh one is started in its place; so a helper taken over by
/// one upload never sees another user's photo, and nothing of one job can be in a process that renders the next.
/// Helpers waiting idle have never had a job. A helper started at a quiet moment (no job in flight: the pool opening,
/// or the last busy job ending) that is still quiet `quietSeconds` later rehearses a job on a generated photo before
/// it is ready, so the next job, which comes at low load, runs as fast as on a helper that has rendered before; one
/// started while jobs run does not, nor one whose quiet moment ended at once (a worker running jobs back to back), as
/// its rehearsal would take CPU from them (bench/RESULTS.md, "One job per helper"). A job that finds no helper idle
/// waits for one already starting rather than start another (which would make one too many).
struct HelperPoolState {
    /// A helper, by the number the state gave it.
    struct ID: Hashable, CustomStringConvertible {
        let number: Int
        var description: String { "helper \(number)" }
    }

    /// What the shell does after an event.
    enum Action: Equatable {
        /// Start this helper in the background and report `started` or `startFailed`. `quiet`: started at a quiet
        /// moment; the shell waits up to `quietSeconds` (a job's check-out ends the wait) and, if the pool is
        /// still `quiet`, has it rehearse (`AvatarRenderer.rehearse`).
        case start(ID, quiet: Bool)
        /// Kill this helper and reap it (its job is over, or the pool no longer keeps it).
        case kill(ID)
    }

    /// What a job gets.
    enum CheckOut: Equatable {
        /// This idle, never-used helper.
        case use(ID)
        /// None is idle: this one, already starting, is the job's once `started` (wait for it; if its start fails,
        /// check out again).
        case await(ID)
        /// None is idle or starting for no job (a start failed): start this one now and wait for it.
        case startNow(ID)
        /// The pool is shut down.
        case closed
    }

    /// Helpers kept: render slots plus spares.
    let size: Int
    private(set) var starting: Set<ID> = []
    /// Those of `starting` a job waits for (`CheckOut.await`).
    private(set) var claimed: Set<ID> = []
    /// Ready and never used; the longest-waiting first.
    private(set) var idle: [ID] = []
    /// Those of `idle` that rehearsed before they were ready.
    private(set) var rehearsed: Set<ID> = []
    private(set) var busy: Set<ID> = []
    private(set) var closed = false
    private var issued = 0

    /// A pool of `size` helpers, and the starts that make them.
    static func opening(size: Int) -> (HelperPoolState, [Action]) {
        precondition(size > 0, "a pool needs a helper")
        var state = HelperPoolState(size: size)
        let starts = state.replenish(quiet: true)
        return (state, starts)
    }

    private init(size: Int) {
        self.size = size
    }

    /// Helpers started and not yet ended.
    var live: Int { starting.count + idle.count + busy.count }

    /// No job in flight, and none waiting for a helper.
    var quiet: Bool { busy.isEmpty && claimed.isEmpty }

    /// How long a quiet moment lasts before a helper started in it rehearses: longer than a worker running jobs back
    /// to back takes to start the next one.
    static let quietSeconds = 0.020

    /// A job takes a helper: the longest-waiting of those that rehearsed, else the longest-waiting; with none idle,
    /// the earliest start no other job waits for (a start of its own would be one helper too many, killed when it is
    /// ready: a fork and a lockdown for nothing); with none of those either, a start of its own.
    mutating func checkOut() -> CheckOut {
        if closed { return .closed }
        if !idle.isEmpty {
            let id = idle.remove(at: idle.firstIndex(where: rehearsed.contains) ?? 0)
            rehearsed.remove(id)
            busy.insert(id)
            return .use(id)
        }
        if let id = starting.subtracting(claimed).min(by: { $0.number < $1.number }) {
            claimed.insert(id)
            return .await(id)
        }
        let id = issue()
        busy.insert(id)
        return .startNow(id)
    }

    /// A background start finished (`rehearsed`: the helper rehearsed before it was ready): the helper is the job's
    /// that waits for it, or waits idle, unless the pool no longer needs it.
    mutating func started(_ id: ID, rehearsed: Bool = false) -> [Action] {
        guard starting.remove(id) != nil else { return [.kill(id)] }
        let awaited = claimed.remove(id) != nil
        if closed || (!awaited && live >= size) { return [.kill(id)] }
        if awaited {
            busy.insert(id)
            return []
        }
        idle.append(id)
        if rehearsed { self.rehearsed.insert(id) }
        return []
    }

    /// Where the start a job waits for (`CheckOut.await`) is.
    enum Awaited: Equatable {
        /// Still starting: the job waits on.
        case starting
        /// Started, and the job's.
        case ready
        /// Its start failed, or it was killed (the pool shut down): the job checks out again.
        case gone
    }

    func awaited(_ id: ID) -> Awaited {
        if busy.contains(id) { return .ready }
        return starting.contains(id) ? .starting : .gone
    }

    /// A background start failed. Not retried at once (a binary that cannot start a helper would spin): the next
    /// job's end, or its own `startNow`, tries again.
    mutating func startFailed(_ id: ID) {
        starting.remove(id)
        claimed.remove(id)
    }

    /// A job's helper is done with (its job ended, whatever the outcome; it died or was killed during it; or it was
    /// found dead when the job took it): it goes, and a fresh one is started in its place.
    mutating func jobEnded(_ id: ID) -> [Action] {
        guard busy.remove(id) != nil else { return [] }
        return [.kill(id)] + replenish(quiet: quiet)
    }

    /// No more jobs: the idle helpers go now, busy ones when their jobs end, starting ones when they are ready.
    mutating func shutdown() -> [Action] {
        closed = true
        let ending = idle
        idle = []
        rehearsed = []
        return ending.map(Action.kill)
    }

    /// Starts for whatever is missing of `size`.
    private mutating func replenish(quiet: Bool) -> [Action] {
        var actions: [Action] = []
        while !closed, live < size {
            let id = issue()
            starting.insert(id)
            actions.append(.start(id, quiet: quiet))
        }
        return actions
    }

    private mutating func issue() -> ID {
        issued += 1
        return ID(number: issued)
    }
}
