import Dispatch
import Foundation

/// Runs jobs on a pool of threads of fixed width (`worker.jobs-in-flight`), one key's jobs strictly in
/// submission order and different keys in parallel (docs/ARCHITECTURE.md §3). The worker's key is the
/// canonical user id from the request's body (`CropJob.orderingKey`), whatever the message key, so one
/// user's requests apply in order.
///
/// Each job runs on a thread of its own, never on Swift's cooperative pool nor on Dispatch's: jobs
/// make blocking calls into libvips, libpq and the object store, and libdispatch on Linux caps a
/// concurrent queue at the core count, so a thread stuck in a C call would silently shrink the pool.
/// Starting a thread costs microseconds against a render's milliseconds.
///
/// With a `deadline`, a job still running past it is written off (docs/ARCHITECTURE.md §3, "nothing stalls
/// the flow"): it leaves the pool's count and its key is released, so the next job of that key and of the
/// pool starts on another thread, and `onDeadline` is told (the service cancels the render and ends
/// the job as TIMEOUT). A C call cannot be interrupted, so the thread may stay stuck: it is counted in
/// `stuckThreads` until it returns, and whatever it then returns is dropped.
public final class KeyOrderedScheduler<Job: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: every stored property below `condition` is read and
    // written only while `condition` is locked.
    public let width: Int
    private let execute: @Sendable (Job) -> Void
    private let label: String
    private let condition = NSCondition()
    private var pending: [String: [Job]] = [:]
    private var readyKeys: [String] = []  // keys with pending jobs and none running
    private var activeKeys: Set<String> = []  // keys with a job running
    private var running: [UInt64: (job: Job, key: String, started: ContinuousClock.Instant)] = [:]
    private var writtenOff: Set<UInt64> = []
    private var nextTicket: UInt64 = 0
    private var stopped = false
    private let deadline: Duration?
    private let onDeadline: (@Sendable (Job) -> Void)?
    private let onStuckThreads: (@Sendable (Int) -> Void)?

    /// `onDeadline` is told of each job written off; `onStuckThreads` of every change in `stuckThreads`.
    public init(
        width: Int, label: String = "avatar-cropper.worker-pool", deadline: Duration? = nil,
        onDeadline: (@Sendable (Job) -> Void)? = nil, onStuckThreads: (@Sendable (Int) -> Void)? = nil,
        execute: @escaping @Sendable (Job) -> Void
    ) {
        self.onStuckThreads = onStuckThreads
        precondition(width > 0, "pool width must be positive")
        self.width = width
        self.execute = execute
        self.deadline = deadline
        self.onDeadline = onDeadline
        self.label = label
        if let deadline {
            // The watchdog looks a few times per deadline; it holds no strong reference to the pool.
            let interval = max(0.05, min(1.0, deadline.seconds / 4))
            Thread.detachNewThread { [weak self] in
                while let pool = self, !pool.isStopped {
                    pool.writeOffOverdue()
                    Thread.sleep(forTimeInterval: interval)
                }
            }
        }
    }

    /// Threads still inside a job that was written off at its deadline.
    public var stuckThreads: Int {
        condition.lock()
        defer { condition.unlock() }
        return writtenOff.count
    }

    private var isStopped: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopped && running.isEmpty
    }

    private func writeOffOverdue() {
        guard let deadline else { return }
        let now = ContinuousClock.now
        condition.lock()
        let overdue = running.filter { now - $0.value.started > deadline }
        for (ticket, entry) in overdue {
            running[ticket] = nil
            writtenOff.insert(ticket)
            activeKeys.remove(entry.key)
            if pending[entry.key] != nil { readyKeys.append(entry.key) }
        }
        if !overdue.isEmpty {
            dispatchReadyLocked()
            condition.broadcast()
        }
        let stuck = writtenOff.count
        condition.unlock()
        guard !overdue.isEmpty else { return }
        onStuckThreads?(stuck)
        for entry in overdue.values { onDeadline?(entry.job) }
    }

    /// Queues `job` behind any earlier job with the same key.
    public func submit(key: String, _ job: Job) {
        condition.lock()
        defer { condition.unlock() }
        guard !stopped else { return }
        pending[key, default: []].append(job)
        if !activeKeys.contains(key) && pending[key]!.count == 1 {
            readyKeys.append(key)
        }
        dispatchReadyLocked()
    }

    /// Jobs queued or running.
    public var count: (queued: Int, running: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (pending.values.reduce(0) { $0 + $1.count }, running.count)
    }

    /// Jobs currently running.
    public var runningJobs: [Job] {
        condition.lock()
        defer { condition.unlock() }
        return running.values.map(\.job)
    }

    /// Takes queued (not yet started) jobs matching `predicate` out of the queue and returns them.
    @discardableResult
    public func removeQueued(where predicate: (Job) -> Bool) -> [Job] {
        condition.lock()
        defer { condition.unlock() }
        var removed: [Job] = []
        for (key, jobs) in pending {
            let keep = jobs.filter { !predicate($0) }
            removed += jobs.filter(predicate)
            pending[key] = keep.isEmpty ? nil : keep
        }
        readyKeys.removeAll { pending[$0] == nil }
        condition.broadcast()
        return removed
    }

    /// Stops starting queued jobs; running ones finish. Returns what was still queued.
    @discardableResult
    public func stop() -> [Job] {
        condition.lock()
        defer { condition.unlock() }
        stopped = true
        let queued = pending.values.flatMap { $0 }
        pending = [:]
        readyKeys = []
        condition.broadcast()
        return queued
    }

    /// Blocks until no running or queued job matches `predicate`, or the deadline passes.
    /// Returns whether the condition was met.
    public func wait(untilNoJobMatches predicate: (Job) -> Bool, deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while running.values.contains(where: { predicate($0.job) })
            || pending.values.contains(where: { $0.contains(where: predicate) })
        {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }

    private func dispatchReadyLocked() {
        while running.count < width, !readyKeys.isEmpty, !stopped {
            let key = readyKeys.removeFirst()
            guard var jobs = pending[key], !jobs.isEmpty else { continue }
            let job = jobs.removeFirst()
            pending[key] = jobs.isEmpty ? nil : jobs
            activeKeys.insert(key)
            let ticket = nextTicket
            nextTicket &+= 1
            running[ticket] = (job, key, ContinuousClock.now)
            let thread = Thread { [self] in
                execute(job)
                finished(key: key, ticket: ticket)
            }
            thread.name = label
            thread.stackSize = 8 << 20  // libvips and libjpeg recurse little, but a render deserves a full stack
            thread.qualityOfService = .userInitiated
            thread.start()
        }
    }

    private func finished(key: String, ticket: UInt64) {
        condition.lock()
        // Written off at its deadline: its key and its place were released then; the thread is back.
        if writtenOff.remove(ticket) != nil {
            let stuck = writtenOff.count
            condition.unlock()
            onStuckThreads?(stuck)
            return
        }
        defer { condition.unlock() }
        running[ticket] = nil
        activeKeys.remove(key)
        if pending[key] != nil { readyKeys.append(key) }
        dispatchReadyLocked()
        condition.broadcast()
    }
}
