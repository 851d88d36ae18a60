import Foundation
import Imaging
import Instrumentation
import Messaging
import Tracing

/// A job's trace (docs/ARCHITECTURE.md §3), built from its report once it ran: one consumer span per job,
/// back-dated to the message's arrival and parented by the request's `traceparent`/`tracestate` (none: a new
/// trace), with a child per step of the job's time, named by its stage (`JobStage`: queue_wait, fetch, probe, render,
/// encode, upload, database; a stage may have several steps), and one for publishing the job's events, which ends the
/// job's span when the broker answered.
///
/// Attributes follow OpenTelemetry's messaging conventions for Kafka consumers plus `avatar.*` numbers and
/// enumerations. Never a user id, storage key, path, message key or image byte: a failure is its error code and
/// class, not its detail. With no tracer installed (tracing off) nothing is built; the request's own trace
/// context is then what the job's events carry.
struct JobTracing: Sendable {
    /// `messaging.consumer.group.name`.
    let consumerGroup: String
    /// The topic of the result events (the events span's `messaging.destination.name`).
    let resultsTopic: String

    /// The job's span, started as a pool thread takes the job up (back-dated to the message's arrival), so that
    /// every line the job logs names the trace it runs in, whether or not the request brought one. Nil when
    /// tracing is off.
    func begin(_ job: CropJob) -> (any Span)? {
        let tracer = InstrumentationSystem.tracer
        guard !(tracer is NoOpTracer) else { return nil }
        var parent = ServiceContext.topLevel
        InstrumentationSystem.instrument.extract(job.message.headers, into: &parent, using: KafkaHeaderCarrier())
        return tracer.startSpan(
            "process \(job.message.topic)", context: parent, ofKind: .consumer,
            at: WallClockMapping().wall(job.receivedAt))
    }

    /// The job's span (`context.span`, from `begin`) described from its report, with its steps' spans, ended; the
    /// events span started. Nil when tracing is off.
    func trace(_ context: JobContext, _ report: JobReport) -> JobSpan? {
        guard let span = context.span else { return nil }
        let tracer = InstrumentationSystem.tracer
        let clock = WallClockMapping()
        describe(span, job: context.job, report: report)
        for step in report.trace.steps {
            let child = tracer.startSpan(step.stage.rawValue, context: span.context, at: clock.wall(step.start))
            switch step.stage {
            case .fetch, .probe:
                if let header = report.trace.header {
                    child.attributes["avatar.source.format"] = header.format.rawValue
                    child.attributes["avatar.source.bytes"] = header.byteCount
                }
            case .render:
                if let render = report.trace.render { Self.describe(render: render, span: child) }
            case .upload:
                child.attributes["avatar.upload.attempts"] = report.trace.storageWrites.attempts
            case .queueWait, .encode, .database:
                break
            }
            child.end(at: clock.wall(step.end))
        }
        let events = tracer.startSpan("publish events", context: span.context, ofKind: .producer)
        events.attributes["messaging.system"] = "kafka"
        events.attributes["messaging.operation.type"] = "send"
        events.attributes["messaging.destination.name"] = resultsTopic
        return JobSpan(job: span, events: events)
    }

    private func describe(_ span: any Span, job: CropJob, report: JobReport) {
        span.attributes["messaging.system"] = "kafka"
        span.attributes["messaging.operation.type"] = "process"
        span.attributes["messaging.operation.name"] = "process"
        span.attributes["messaging.destination.name"] = job.message.topic
        span.attributes["messaging.destination.partition.id"] = "\(job.message.partition)"
        span.attributes["messaging.kafka.destination.partition"] = Int(job.message.partition)
        span.attributes["messaging.kafka.message.offset"] = Int(job.message.offset)
        span.attributes["messaging.consumer.group.name"] = consumerGroup
        if let jobID = report.jobID { span.attributes["messaging.message.id"] = jobID }
        if let request = report.request {
            // The formats written (the avatar's first), or the request's own when it did not render.
            if let formats = report.trace.render?.formats ?? request.formats {
                span.attributes["avatar.format"] = formats.map(\.rawValue).joined(separator: ",")
            }
            span.attributes["avatar.size"] = request.outputSize
        }
        if let attempt = report.trace.renderAttempt { span.attributes["avatar.render.attempt"] = attempt }
        switch report.outcome {
        case .success(let disposition):
            span.attributes["avatar.outcome"] = disposition.wire.rawValue
            span.attributes["avatar.version"] = Int(disposition.version)
        case .failure(let failure):
            span.attributes["avatar.outcome"] = "failed"
            span.attributes["error.type"] = failure.code.rawValue
            span.attributes["avatar.error.code"] = failure.code.rawValue
            span.attributes["avatar.error.class"] = failure.errorClass.rawValue
            span.attributes["avatar.attempts"] = failure.attempts
            span.setStatus(SpanStatus(code: .error, message: failure.code.rawValue))
        }
    }

    /// The render's decoder and shrink as attributes, and what the face rule found (`FaceReport`: its counts, never a
    /// box).
    private static func describe(render: RenderResult, span: any Span) {
        span.attributes["avatar.decoder"] = render.decoder.description
        span.attributes["avatar.shrink_factor"] = render.shrinkFactor
        span.attributes["avatar.fallback_used"] = render.fallbackUsed
        span.attributes["avatar.decode.width"] = render.decodeSize.width
        span.attributes["avatar.decode.height"] = render.decodeSize.height
        span.attributes["avatar.output.bytes"] = render.avatar.data.count
        span.attributes["avatar.renditions"] = 1 + render.extras.count
        if let faces = render.faces {
            span.attributes["avatar.faces.count"] = faces.faces.count
            span.attributes["avatar.faces.rule_used"] = faces.ruleUsed
        }
    }
}

/// A job's span and its events span, until the broker answered for the job's events.
struct JobSpan: Sendable {
    let job: any Span
    let events: any Span

    /// The broker answered: `published` (confirmed) or not, after `attempts` attempts. Ends both spans.
    func finish(published: Bool, attempts: Int) {
        events.attributes["avatar.publish.attempts"] = attempts
        if !published { events.setStatus(SpanStatus(code: .error, message: "events not confirmed")) }
        events.end()
        job.end()
    }
}

/// Reads and writes W3C trace context in Kafka headers.
struct KafkaHeaderCarrier: Extractor, Injector {
    func extract(key: String, from carrier: [KafkaHeader]) -> String? {
        carrier.string(of: key)
    }

    func inject(_ value: String, forKey key: String, into carrier: inout [KafkaHeader]) {
        carrier.removeAll { $0.key == key }
        carrier.append(KafkaHeader(key: key, value: Array(value.utf8)))
    }
}

/// Maps the job clock's instants (`ContinuousClock`) to the wall-clock time spans are stamped with.
struct WallClockMapping {
    private let wallNow = DefaultTracerClock.now.nanosecondsSinceEpoch
    private let continuousNow = ContinuousClock.now

    func wall(_ instant: ContinuousClock.Instant) -> DefaultTracerClock.Timestamp {
        let (seconds, attoseconds) = (continuousNow - instant).components
        let before = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        return DefaultTracerClock.Timestamp(nanosecondsSinceEpoch: UInt64(max(0, Int64(wallNow) - before)))
    }
}
