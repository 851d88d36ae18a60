/// A `Duration` in the units metrics, logs and events use (the worker's only Duration helpers).
extension Duration {
    /// Fractional seconds.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Fractional milliseconds.
    var milliseconds: Double { seconds * 1000 }

    /// Whole nanoseconds (truncated).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
