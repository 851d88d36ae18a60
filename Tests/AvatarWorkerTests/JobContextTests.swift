import Logging
import Messaging
import Testing

@testable import AvatarWorker

/// A job's context as its pool thread takes it up (`JobContext`), with tracing off: its logger names the job and the
/// request's trace, and its events carry the request's trace context when it is valid, nothing otherwise.
@Suite("Job context")
struct JobContextTests {
    private static let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    private func job(_ headers: [(String, String)]) -> CropJob {
        CropJob(
            message: KafkaMessage(
                topic: "t", partition: 0, offset: 0, key: nil, value: [],
                headers: headers.map { KafkaHeader(key: $0.0, value: Array($0.1.utf8)) }, timestamp: nil),
            receivedAt: .now)
    }

    private func header(_ name: String, in context: JobContext) -> String? {
        context.eventTrace.first { $0.key == name }?.value.map { String(decoding: $0, as: UTF8.self) }
    }

    @Test("the request's traceparent names the job's lines and goes on its events, with its tracestate")
    func requestTrace() {
        let context = JobContext(
            job([
                (TraceParent.headerName, Self.parent), (TraceParent.stateHeaderName, "vendor=1"),
                (MessageHeader.jobID, "j-1"),
            ]),
            span: nil, logger: Logger(label: "test.job-context"))
        #expect(header(TraceParent.headerName, in: context) == Self.parent)
        #expect(header(TraceParent.stateHeaderName, in: context) == "vendor=1")
        #expect(context.logger[metadataKey: LogKey.traceID] == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(context.logger[metadataKey: LogKey.spanID] == "00f067aa0ba902b7")
        // The message holds no valid request: its lines name the job by its header.
        #expect(context.logger[metadataKey: LogKey.jobID] == "j-1")
    }

    @Test("an invalid traceparent is not carried on, nor its tracestate; an oversized tracestate is dropped")
    func invalidTrace() {
        let invalid = JobContext(
            job([(TraceParent.headerName, "00-zz"), (TraceParent.stateHeaderName, "vendor=1")]), span: nil,
            logger: Logger(label: "test.job-context"))
        #expect(invalid.eventTrace.isEmpty)
        #expect(invalid.logger[metadataKey: LogKey.traceID] == nil)
        #expect(invalid.logger[metadataKey: LogKey.jobID] == "-")
        let oversized = JobContext(
            job([
                (TraceParent.headerName, Self.parent),
                (TraceParent.stateHeaderName, String(repeating: "a", count: 513)),
            ]),
            span: nil, logger: Logger(label: "test.job-context"))
        #expect(oversized.eventTrace.map(\.key) == [TraceParent.headerName])
    }
}
