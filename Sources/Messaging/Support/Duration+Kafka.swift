extension Duration {
    /// Whole milliseconds, clamped to librdkafka's `int` timeouts (negative becomes 0).
    var milliseconds: Int32 {
        let (seconds, attoseconds) = components
        let millis = seconds.multipliedReportingOverflow(by: 1000)
        guard !millis.overflow else { return seconds < 0 ? 0 : Int32.max }
        let total = millis.partialValue + attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(total, 0))
    }
}
