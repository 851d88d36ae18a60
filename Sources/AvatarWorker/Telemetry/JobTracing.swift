import Foundation
import Imaging
import Instrumentation
import Messaging
import Tracing

/// A job's trace (docs/ARCHITECTURE.md §3), built from its report once it ran: one consumer span per job,
/// back-dated to the message's arrival and parented by the request's `traceparent`/`tracestate` (none: a new
/// trace), with a child per timed step (`JobStep`: queue wait, render slot wait, fetch, probe, render —
/// its plan/decode/encode/blurhash stages as children —, publication — lock wait, upload, commit, public copy
/// or repair —) and one for publishing the job's events, which ends the job's span when the broker answered.
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

    /// The trace id `span` belongs to, as a log line's `trace_id`.
    static func traceID(of span: any Span) -> String? {
        var headers: [KafkaHeader] = []
        InstrumentationSystem.instrument.inject(span.context, into: &headers, using: KafkaHeaderCarrier())
        return TraceParent(headers: headers)?.traceIDHex
    }

    /// The job's span (`begin`) described from its report, with its steps' spans, ended; the events span
    /// started. Nil when tracing is off.
    func trace(_ span: (any Span)?, _ job: CropJob, _ report: JobReport) -> JobSpan? {
        guard let span else { return nil }
        let tracer = InstrumentationSystem.tracer
        let clock = WallClockMapping()
        let end = report.trace.steps.map(\.end).max() ?? .now
        describe(span, job: job, report: report)
        var parents: [JobStep.Name: any Span] = [:]
        // Parents first: a publication's steps are recorded before it.
        let steps = report.trace.steps.sorted { ($0.name.parent == nil ? 0 : 1) < ($1.name.parent == nil ? 0 : 1) }
        for step in steps {
            let context = step.name.parent.flatMap { parents[$0]?.context } ?? span.context
            let child = tracer.startSpan(step.name.rawValue, context: context, at: clock.wall(step.start))
            if step.name == .render, let render = report.trace.render {
                Self.describe(render: render, span: child, tracer: tracer, start: step.start, clock: clock)
            }
            if step.name == .upload { child.attributes["avatar.upload.attempts"] = report.trace.storageWrites.attempts }
            if step.name == .publication {
                parents[.publication] = child
            } else {
                child.end(at: clock.wall(step.end))
            }
            if step.name == .fetch || step.name == .probe, let header = report.trace.header {
                child.attributes["avatar.source.format"] = header.format.rawValue
                child.attributes["avatar.source.bytes"] = header.byteCount
            }
        }
        let publication = report.trace.steps.last { $0.name == .publication }
        for (_, parentSpan) in parents { parentSpan.end(at: clock.wall(publication?.end ?? end)) }
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

    /// The render's decoder and shrink as attributes; its stages as children, laid end to end from its start
    /// in the order the renderer runs them: the face rule's small decode and detection first when the request had
    /// no pose (`FaceReport`: its counts as attributes, never a box), then `RenderTimings` (decode covers load,
    /// crop, colour and resize).
    private static func describe(
        render: RenderResult, span: any Span, tracer: any Tracer, start: ContinuousClock.Instant,
        clock: WallClockMapping
    ) {
        span.attributes["avatar.decoder"] = render.decoder.description
        span.attributes["avatar.shrink_factor"] = render.shrinkFactor
        span.attributes["avatar.fallback_used"] = render.fallbackUsed
        span.attributes["avatar.decode.width"] = render.decodeSize.width
        span.attributes["avatar.decode.height"] = render.decodeSize.height
        span.attributes["avatar.output.bytes"] = render.avatar.data.count
        span.attributes["avatar.renditions"] = 1 + render.extras.count
        let timings = render.timings
        var stages: [(String, Duration)] = []
        if let faces = render.faces {
            span.attributes["avatar.faces.count"] = faces.faces.count
            span.attributes["avatar.faces.rule_used"] = faces.ruleUsed
            stages.append(("faces", faces.time))
        }
        stages += [
            ("plan", timings.plan), ("decode", timings.decode), ("encode", timings.encode),
            ("blurhash", timings.blurHash),
        ]
        var cursor = start
        for (name, duration) in stages where duration > .zero {
            let stage = tracer.startSpan(name, context: span.context, at: clock.wall(cursor))
            cursor += duration
            stage.end(at: clock.wall(cursor))
        }
    }
}

/// A job's span and its events span, until the broker answered for the job's events.
struct JobSpan: Sendable {
    let job: any Span
    let events: any Span

    /// `traceparent` (and `tracestate`) naming the job's span: the result event's and the DLQ record's.
    var headers: [KafkaHeader] {
        var headers: [KafkaHeader] = []
        InstrumentationSystem.instrument.inject(job.context, into: &headers, using: KafkaHeaderCarrier())
        return headers
    }

    /// The broker answered: `published` (confirmed) or not, after `attempts` attempts. Ends both spans.
    func finish(published: Bool, attempts: Int) {
        events.attributes["avatar.publish.attempts"] = attempts
        if !published { events.setStatus(SpanStatus(code: .error, message: "events not confirmed")) }
        events.end()
        job.end()
    }
}

extension JobTracing {
    /// What the job's events carry when no span was made (tracing off): the request's own trace context, when
    /// valid, so whoever consumes the result still continues the producer's trace.
    static func requestHeaders(_ message: KafkaMessage) -> [KafkaHeader] {
        guard let parent = message.headerString(TraceParent.headerName), TraceParent(header: parent) != nil else {
            return []
        }
        var headers = [KafkaHeader(key: TraceParent.headerName, value: Array(parent.utf8))]
        if let state = message.headerString(TraceParent.stateHeaderName), state.utf8.count <= 512 {
            headers.append(KafkaHeader(key: TraceParent.stateHeaderName, value: Array(state.utf8)))
        }
        return headers
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
