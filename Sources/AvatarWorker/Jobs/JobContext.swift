import Instrumentation
import Logging
import Messaging
import Tracing

/// One job as a pool thread takes it up (docs/ARCHITECTURE.md §3): made once, by `JobRunner`, and handed to the
/// processor and the publisher. Its logger names the job, its trace and its span on every line the job logs; the
/// request's `traceparent` is read once, here (by the tracer when tracing is on).
struct JobContext: Sendable {
    let job: CropJob
    /// The job's span (`JobTracing.begin`), back-dated to the message's arrival; nil when tracing is off.
    let span: (any Span)?
    /// The trace context the job's result event and DLQ record carry (`traceparent`, `tracestate`): its span's, else
    /// (tracing off) the request's own when valid, so whoever consumes the result still continues the producer's trace.
    let eventTrace: [KafkaHeader]
    let logger: Logger
    /// The job's deadline, once the pool's watchdog watches it (`JobWatchdog`); nil: none.
    var deadline: JobDeadline?

    init(_ job: CropJob, span: (any Span)?, logger: Logger) {
        self.job = job
        self.span = span
        var headers: [KafkaHeader] = []
        let trace: TraceParent?
        if let span {
            InstrumentationSystem.instrument.inject(span.context, into: &headers, using: KafkaHeaderCarrier())
            trace = TraceParent(headers: headers)
        } else {
            trace = TraceParent(headers: job.message.headers)
            if let trace {
                headers = [KafkaHeader(key: TraceParent.headerName, value: Array(trace.header.utf8))]
                if let state = job.message.headerString(TraceParent.stateHeaderName), state.utf8.count <= 512 {
                    headers.append(KafkaHeader(key: TraceParent.stateHeaderName, value: Array(state.utf8)))
                }
            }
        }
        eventTrace = headers
        var logger = logger
        logger[metadataKey: LogKey.jobID] = "\(job.namedJobID ?? "-")"
        if let trace {
            logger[metadataKey: LogKey.traceID] = "\(trace.traceIDHex)"
            logger[metadataKey: LogKey.spanID] = "\(trace.parentIDHex)"
        }
        self.logger = logger
    }
}
