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
/// Deadlines are not the pool's: a job's thread always comes back, because its render runs in a helper process
/// that is killed at the job's deadline (`JobWatchdog`, docs/ARCHITECTURE.md §3, "Render helpers") and every other
/// blocking call has a timeout of its own.
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
    private var running: [UInt64: (job: Job, key: String)] = [:]
    private var nextTicket: UInt64 = 0
    private var stopped = false
    public init(
        width: Int, label: String = "avatar-cropper.worker-pool", execute: @escaping @Sendable (Job) -> Void
    ) {
        precondition(width > 0, "pool width must be positive")
        self.width = width
        self.execute = execute
        self.label = label
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
            running[ticket] = (job, key)
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
        defer { condition.unlock() }
        running[ticket] = nil
        activeKeys.remove(key)
        if pending[key] != nil { readyKeys.append(key) }
        dispatchReadyLocked()
        condition.broadcast()
    }
}
