import Testing

@testable import RenderHelpers

/// The pool's policy without a process (`HelperPoolState`): `size` helpers kept, each serving one job and replaced.
@Suite("Helper pool state")
struct HelperPoolStateTests {
    typealias State = HelperPoolState

    /// A pool whose starts all finished: `size` helpers idle.
    private func ready(size: Int) -> State {
        var (state, actions) = State.opening(size: size)
        #expect(actions.count == size)
        for case .start(let id, _) in actions { #expect(state.started(id).isEmpty) }
        #expect(state.idle.count == size)
        return state
    }

    @Test("a helper serves one job and is replaced: no two jobs ever share a helper")
    func oneJobPerHelper() {
        var state = ready(size: 3)
        var served: Set<State.ID> = []
        for _ in 0..<50 {
            guard case .use(let id) = state.checkOut() else {
                Issue.record("no idle helper although every start finished")
                return
            }
            #expect(!served.contains(id), "\(id) served a second job")
            served.insert(id)
            let actions = state.jobEnded(id)
            #expect(actions.first == .kill(id))
            #expect(actions.count == 2, "killed and one start in its place")
            for case .start(let fresh, _) in actions { #expect(state.started(fresh).isEmpty) }
            #expect(state.live == 3)
        }
    }

    @Test("with no helper idle, a job waits for one already starting; the pool never keeps more than its size")
    func awaitWhenNoneIdle() {
        var state = ready(size: 2)
        guard case .use(let a) = state.checkOut(), case .use(let b) = state.checkOut() else {
            Issue.record("two idle helpers expected")
            return
        }
        let replacing = Self.starts(state.jobEnded(a))
        #expect(replacing.count == 1)
        #expect(state.checkOut() == .await(replacing[0]), "the job waits for the replacement, starting no other")
        #expect(!state.quiet, "a job waiting for a helper is not a quiet moment")
        #expect(state.awaited(replacing[0]) == .starting)
        #expect(state.started(replacing[0]).isEmpty)
        #expect(state.awaited(replacing[0]) == .ready, "the replacement is the waiting job's, not idle")
        #expect(state.idle.isEmpty && state.live == 2)
        // Another job, while the only start in flight is awaited by none: it waits for it.
        let next = Self.starts(state.jobEnded(b))
        #expect(state.checkOut() == .await(next[0]))
        // Its start fails: the job checks out again and starts its own.
        state.startFailed(next[0])
        #expect(state.awaited(next[0]) == .gone)
        guard case .startNow = state.checkOut() else {
            Issue.record("with nothing starting, a job starts its own helper")
            return
        }
        #expect(state.live == 2)
    }

    @Test("the last busy job ending while another job waits for a helper is no quiet moment")
    func waitingJobIsNotQuiet() {
        var state = ready(size: 2)
        guard case .use(let a) = state.checkOut(), case .use(let b) = state.checkOut() else {
            Issue.record("no idle helper to use")
            return
        }
        let replacing = Self.starts(state.jobEnded(a))
        #expect(state.checkOut() == .await(replacing[0]))
        #expect(Self.quietStarts(state.jobEnded(b)) == [false], "a job still waits")
    }

    @Test("a job waiting for a start when the pool shuts down gets no helper")
    func awaitThenShutdown() {
        var state = ready(size: 1)
        guard case .use(let a) = state.checkOut() else {
            Issue.record("no idle helper to use")
            return
        }
        let replacing = Self.starts(state.jobEnded(a))
        #expect(state.checkOut() == .await(replacing[0]))
        _ = state.shutdown()
        #expect(state.started(replacing[0]) == [.kill(replacing[0])])
        #expect(state.awaited(replacing[0]) == .gone)
        #expect(state.checkOut() == .closed)
    }

    @Test("a helper started at a quiet moment rehearses; one started while a job runs does not")
    func rehearsedOnlyWhenQuiet() {
        var (state, opening) = State.opening(size: 3)
        #expect(opening.allSatisfy { if case .start(_, quiet: true) = $0 { true } else { false } })
        for case .start(let id, _) in opening { _ = state.started(id) }
        guard case .use(let a) = state.checkOut(), case .use(let b) = state.checkOut() else {
            Issue.record("two idle helpers expected")
            return
        }
        #expect(Self.quietStarts(state.jobEnded(a)) == [false], "another job still runs")
        #expect(!state.quiet)
        #expect(Self.quietStarts(state.jobEnded(b)) == [true], "the last job ended")
        #expect(state.quiet)
        // A job taken before the shell's `quietSeconds` ends the quiet moment: that start is not rehearsed after
        // all.
        guard case .use = state.checkOut() else {
            Issue.record("no idle helper to use")
            return
        }
        #expect(!state.quiet)
    }

    @Test("a job takes a helper that rehearsed before one that did not, each kind longest-waiting first")
    func rehearsedFirst() {
        var (state, opening) = State.opening(size: 3)
        let ids = Self.starts(opening)
        #expect(state.started(ids[0]).isEmpty)
        #expect(state.started(ids[1], rehearsed: true).isEmpty)
        #expect(state.started(ids[2], rehearsed: true).isEmpty)
        #expect(state.checkOut() == .use(ids[1]))
        #expect(state.checkOut() == .use(ids[2]))
        #expect(state.checkOut() == .use(ids[0]))
    }

    /// The helpers `actions` start.
    private static func starts(_ actions: [State.Action]) -> [State.ID] {
        actions.compactMap { action -> State.ID? in
            guard case .start(let id, _) = action else { return nil }
            return id
        }
    }

    /// Whether each start among `actions` was made at a quiet moment (to be rehearsed if it lasts).
    private static func quietStarts(_ actions: [State.Action]) -> [Bool] {
        actions.compactMap { action -> Bool? in
            guard case .start(_, let quiet) = action else { return nil }
            return quiet
        }
    }

    @Test("a failed start is not retried at once; the next job's end starts again")
    func failedStart() {
        var (state, actions) = State.opening(size: 2)
        for case .start(let id, _) in actions { state.startFailed(id) }
        #expect(state.live == 0)
        guard case .startNow(let id) = state.checkOut() else {
            Issue.record("a job must be able to start its own helper")
            return
        }
        let after = state.jobEnded(id)
        #expect(after.filter { if case .start = $0 { true } else { false } }.count == 2)
    }

    @Test("shut down: idle helpers are killed now, busy ones at their job's end, starting ones when ready; no new job")
    func shutdown() {
        var state = ready(size: 3)
        guard case .use(let busy) = state.checkOut() else {
            Issue.record("no idle helper to use")
            return
        }
        let ending = state.shutdown()
        #expect(ending.count == 2)
        #expect(state.checkOut() == .closed)
        #expect(state.jobEnded(busy) == [.kill(busy)], "not replaced")
        #expect(state.live == 0)
    }
}
