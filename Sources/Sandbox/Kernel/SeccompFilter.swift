import CSandbox

/// The lockdown's seccomp allow-list, compiled (docs/SECURITY.md, "What a render helper may do"). Compiling it is
/// libseccomp's work, about 0.5 ms; a helper template compiles it once, before it forks, and each helper it forks
/// loads that copy with its own pid filled in (`ProcessLockdown.apply(_:)`), instead of compiling it per job
/// (docs/ARCHITECTURE.md §3, "One job per helper"). Immutable once made, so one process's threads may share it.
public final class SeccompFilter: @unchecked Sendable {
    let compiled: OpaquePointer

    /// The allow-list for a process whose one channel (the only descriptor `sendmsg` and `recvmsg` may use) is
    /// `channel`.
    public init(channel: Int32) throws(LockdownError) {
        var compiled: OpaquePointer?
        try LockdownError.check { message, capacity in
            compiled = csandbox_filter_prepare(channel, message, capacity)
            return compiled != nil
        }
        self.compiled = compiled!
    }

    /// How many comparisons with the loading process's own pid the program holds (`kill` and `tgkill` to itself).
    public var selfComparisons: Int { Int(csandbox_filter_self_comparisons(compiled)) }

    deinit { csandbox_filter_free(compiled) }
}
