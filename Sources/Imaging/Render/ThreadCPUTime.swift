import Glibc

/// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`): what an encode costs its core, whatever else the
/// machine runs (the encoders run on the render's own thread).
enum ThreadCPUTime {
    static var now: Duration {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return .seconds(spec.tv_sec) + .nanoseconds(spec.tv_nsec)
    }
}
