import CSandbox

/// The kernel-enforced limits a render helper puts on itself once its libraries are loaded and warmed up. What a
/// locked-down helper can and cannot do is stated once, in docs/SECURITY.md ("What a render helper may do"); the
/// layers and the allow-list are in `csandbox.h` and `CSandbox.c`.
///
/// In short: after `apply(_:)` the process has no capability, no supplementary group and (started as root)
/// the uid `unprivilegedID`; it cannot grow or write a file, open, stat or list any path, open a network or IPC
/// endpoint, start a program or a process, signal or look at another process, or raise its limits; it may use
/// memory, threads, clocks, the descriptors it holds, and `sendmsg`/`recvmsg` on its channel only. A system call
/// outside the allow-list kills it (SIGSYS). It applies to every thread and cannot be undone, so a process calls it
/// once, at the end of its start-up.
public enum ProcessLockdown {
    /// The uid and gid a helper started as root moves to.
    public static let unprivilegedID = UInt32(CSANDBOX_UNPRIVILEGED_ID)

    /// Installs the lockdown on the calling process, its seccomp layer `filter` (compiled in this process or in one
    /// it was forked from; its channel is the one descriptor the process may send and receive on).
    @discardableResult
    public static func apply(_ filter: SeccompFilter) throws(LockdownError) -> Layers {
        var layers: Int32 = 0
        try LockdownError.check { message, capacity in
            csandbox_lock_down(filter.compiled, &layers, message, capacity) == 0
        }
        return Layers(rawValue: layers)
    }

    /// For the worker, once configured: no core file, and non-dumpable, so no other process of its uid can ptrace it
    /// or open its /proc entries (its environment with the storage keys, its memory, its descriptors).
    public static func protectSecrets() throws(LockdownError) {
        let result = csandbox_protect_secrets()
        guard result == 0 else { throw LockdownError(reason: "PR_SET_DUMPABLE: errno \(-result)") }
    }

    /// The Landlock ABI this kernel offers (0: none).
    public static var landlockABI: Int { Int(csandbox_landlock_abi()) }

    /// Which layers the kernel allowed (`CSANDBOX_LAYER_*`).
    public struct Layers: OptionSet, Sendable, Codable, Hashable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        public static let seccomp = Layers(rawValue: Int32(CSANDBOX_LAYER_SECCOMP))
        public static let landlockFiles = Layers(rawValue: Int32(CSANDBOX_LAYER_LANDLOCK_FS))
        public static let landlockNetwork = Layers(rawValue: Int32(CSANDBOX_LAYER_LANDLOCK_NET))
        public static let landlockScope = Layers(rawValue: Int32(CSANDBOX_LAYER_LANDLOCK_SCOPE))
        public static let uidDropped = Layers(rawValue: Int32(CSANDBOX_LAYER_UID_DROPPED))

        /// Each layer's name, for the worker's start-up log line ("seccomp", "landlock-files", …).
        public var names: [String] {
            [
                (Layers.seccomp, "seccomp"), (.landlockFiles, "landlock-files"), (.landlockNetwork, "landlock-network"),
                (.landlockScope, "landlock-scope"), (.uidDropped, "uid-dropped"),
            ].compactMap { contains($0.0) ? $0.1 : nil }
        }
    }
}

/// The kernel refused to install the lockdown (a kernel without seccomp, or a limit on filters).
/// A render helper that cannot lock itself down must not take a job.
public struct LockdownError: Error, CustomStringConvertible, Sendable {
    public let reason: String
    public var description: String { "process lockdown failed: \(reason)" }

    /// Runs a C step that writes its reason into a buffer when it fails (returns false).
    static func check(_ step: (UnsafeMutablePointer<CChar>, Int) -> Bool) throws(LockdownError) {
        var message = [CChar](repeating: 0, count: 256)
        let succeeded = message.withUnsafeMutableBufferPointer { step($0.baseAddress!, $0.count) }
        guard succeeded else {
            throw LockdownError(reason: message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
    }
}
