import Dispatch
import Foundation

/// Runs jobs on a Dispatch worker pool of fixed width, one key's jobs strictly in
/// submission order and different keys in parallel (DESIGN §3: messages are keyed by
/// user id, so one user's requests apply in order).
///
/// Jobs run on Dispatch threads, never on Swift's cooperative pool: they make
/// blocking calls into libvips, libpq and the object store.
public final class KeyOrderedScheduler<Job: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: every stored property below `condition` is read and
    // written only while `condition` is locked.
    public let width: Int
    private let execute: @Sendable (Job) -> Void
    private let queue: DispatchQueue
    private let condition = NSCondition()
    private var pending: [String: [Job]] = [:]
    private var readyKeys: [String] = []  // keys with pending jobs and none running
    private var activeKeys: Set<String> = []  // keys with a job running
    private var running: [UInt64: Job] = [:]
    private var nextTicket: UInt64 = 0
    private var stopped = false

    public init(width: Int, label: String = "avatar-cropper.worker-pool", execute: @escaping @Sendable (Job) -> Void) {
        precondition(width > 0, "pool width must be positive")
        self.width = width
        self.execute = execute
        self.queue = DispatchQueue(label: label, qos: .userInitiated, attributes: .concurrent)
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
        return Array(running.values)
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
        while running.values.contains(where: predicate)
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
            running[ticket] = job
            queue.async { [self] in
                execute(job)
                finished(key: key, ticket: ticket)
            }
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
