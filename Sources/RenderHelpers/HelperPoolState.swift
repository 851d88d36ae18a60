/// The render helper pool's bookkeeping as a value (docs/ARCHITECTURE.md §3, "Render helpers"): which helpers are
/// starting, idle or busy, and what the shell (`RenderHelperPool`) must do after each event — start one, kill one.
/// It runs no process and no thread, so the policy is tested on its own (`HelperPoolStateTests`).
///
/// The policy (docs/SECURITY.md, "One job per helper"): `size` helpers are kept. A helper serves one job — one user —
/// and is then killed, whatever the job's outcome, and a fresh one is started in its place; so a helper taken over by
/// one upload never sees another user's photo, and nothing of one job can be in a process that renders the next.
/// Helpers waiting idle have never had a job. A helper started at a quiet moment (no job in flight: the pool opening,
/// or the last busy job ending) that is still quiet `quietMicroseconds` later rehearses a job on a generated photo before it
/// is ready, so the next job, which comes at low load, runs as fast as on a helper that has rendered before; one
/// started while jobs run does not, nor one whose quiet moment ended at once (a worker running jobs back to back), as
/// its rehearsal would take CPU from them (bench/RESULTS.md, "One job per helper").
struct HelperPoolState {
    /// A helper, by the number the state gave it.
    struct ID: Hashable, CustomStringConvertible {
        let number: Int
        var description: String { "helper \(number)" }
    }

    /// What the shell does after an event.
    enum Action: Equatable {
        /// Start this helper in the background and report `started` or `startFailed`. `quiet`: started at a quiet
        /// moment; the shell waits `quietMicroseconds` and, if the pool is still `quiet`, has it rehearse
        /// (`AvatarRenderer.rehearse`).
        case start(ID, quiet: Bool)
        /// Kill this helper and reap it (its job is over, or the pool no longer keeps it).
        case kill(ID)
    }

    /// What a job gets.
    enum CheckOut: Equatable {
        /// This idle, never-used helper.
        case use(ID)
        /// None is idle: start this one now and wait for it (only while replacements are still starting).
        case startNow(ID)
        /// The pool is shut down.
        case closed
    }

    /// Helpers kept: render slots plus spares.
    let size: Int
    private(set) var starting: Set<ID> = []
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

    /// No job in flight.
    var quiet: Bool { busy.isEmpty }

    /// How long a quiet moment lasts before a helper started in it rehearses: longer than a worker running jobs back
    /// to back takes to start the next one.
    static let quietMicroseconds: UInt32 = 20_000

    /// A job takes a helper: the longest-waiting of those that rehearsed, else the longest-waiting.
    mutating func checkOut() -> CheckOut {
        if closed { return .closed }
        if !idle.isEmpty {
            let id = idle.remove(at: idle.firstIndex(where: rehearsed.contains) ?? 0)
            rehearsed.remove(id)
            busy.insert(id)
            return .use(id)
        }
        let id = issue()
        busy.insert(id)
        return .startNow(id)
    }

    /// A background start finished (`rehearsed`: the helper rehearsed before it was ready): the helper waits idle,
    /// unless the pool no longer needs it.
    mutating func started(_ id: ID, rehearsed: Bool = false) -> [Action] {
        guard starting.remove(id) != nil else { return [.kill(id)] }
        if closed || live >= size { return [.kill(id)] }
        idle.append(id)
        if rehearsed { self.rehearsed.insert(id) }
        return []
    }

    /// A background start failed. Not retried at once (a binary that cannot start a helper would spin): the next
    /// job's end, or its own `startNow`, tries again.
    mutating func startFailed(_ id: ID) {
        starting.remove(id)
    }

    /// A job's helper is done with (its job ended, whatever the outcome; it died or was killed during it; or it was
    /// found dead when the job took it): it goes, and a fresh one is started in its place.
    mutating func jobEnded(_ id: ID) -> [Action] {
        guard busy.remove(id) != nil else { return [] }
        return [.kill(id)] + replenish(quiet: busy.isEmpty)
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
