import Logging
import Metrics

/// swift-otel's diagnostic log handler in the worker: forwards its messages to the worker's log and counts the
/// spans it reports lost in `avatar_trace_spans_dropped_total` — swift-otel (1.6) says so only in its log: the
/// batch processor's "queue was full" warning (`dropped_count`, reason `queue_full`) and its "Failed to export
/// batch." warning (`batch_size`, reason `export_failed`: the collector down, slow or refusing).
struct TraceExportDiagnostics: LogHandler {
    enum Reason: String, CaseIterable {
        case queueFull = "queue_full"
        case exportFailed = "export_failed"
    }

    private let forward: Logger
    var metadata: Logger.Metadata = [:]
    /// The level swift-otel sets (`OTEL_LOG_LEVEL`, else its default): what is forwarded to the worker's log.
    private var forwardedLevel: Logger.Level

    /// At most `warning` whatever swift-otel sets, so its drop warnings always reach `log(event:)` and are counted
    /// (under `OTEL_LOG_LEVEL=error` the counter used to read 0); only what `forwardedLevel` allows is logged.
    var logLevel: Logger.Level {
        get { min(forwardedLevel, .warning) }
        set { forwardedLevel = newValue }
    }

    init(forwardingTo logger: Logger) {
        self.forward = logger
        self.forwardedLevel = logger.logLevel
        // Exported from the start, so a dashboard sees 0 rather than nothing.
        for reason in Reason.allCases { Self.counter(reason).increment(by: 0) }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    static func counter(_ reason: Reason) -> Counter {
        Counter(label: MetricName.traceSpansDropped, dimensions: [("reason", reason.rawValue)])
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        if let (reason, key) = Self.drop(event.message.description), case .string(let text)? = merged[key],
            let count = Int(text), count > 0
        {
            Self.counter(reason).increment(by: count)
        }
        guard event.level >= forwardedLevel else { return }
        forward.log(
            level: event.level, event.message, metadata: merged, source: event.source, file: event.file,
            function: event.function, line: event.line)
    }

    /// The reason and the metadata key holding the count, for a message that reports spans lost.
    static func drop(_ message: String) -> (Reason, String)? {
        if message.hasPrefix("Spans were dropped") { return (.queueFull, "dropped_count") }
        if message.hasPrefix("Failed to export batch") { return (.exportFailed, "batch_size") }
        return nil
    }
}
