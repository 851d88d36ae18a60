import CropGeometry
import CropProtocol
import Foundation
import Messaging
import Storage
import TestEnvironment
import Testing

@testable import AvatarWorker

/// The real `avatar-cropper worker`, on the real services, exporting its traces over OTLP/HTTP (turned on by the
/// standard `OTEL_EXPORTER_OTLP_ENDPOINT` alone) to a real receiver on 127.0.0.1 that decodes them with the official
/// `opentelemetry-proto` package (python/otlp_receiver.py): the span tree of docs/ARCHITECTURE.md §3, the result
/// event's and the DLQ record's `traceparent`, nothing private in any span, event or resource attribute, on the
/// local-directory store and on SeaweedFS (where the S3 client's requests happen: they export no span of their own);
/// and with the collector down, jobs unaffected and the lost spans counted.
@Suite("Worker traces (integration)", .requires(.database, .kafka, .s3, .python), .serialized)
struct WorkerTracingTests {
    @Test(
        "a request's traceparent is the parent of the job's span tree; events name the job's span; nothing private",
        arguments: WorkerStore.allCases)
    func spanTree(store: WorkerStore) async throws {
        try await withHarness(partitions: 1, store: store) { harness in
            let user = UUID()
            let source = try harness.upload("size/craft-beer_640x640.jpg")
            let applied = WorkerHarness.request(user: user, source: source)
            let smallSource = try harness.upload("size/craft-beer_319x479.jpg")
            let tooSmall = WorkerHarness.request(user: user, source: smallSource)
            let untracedSource = try harness.upload("size/craft-beer_640x640.jpg")
            let untraced = WorkerHarness.request(user: UUID(), source: untracedSource)
            let parent = TraceParent.random()
            let failedParent = TraceParent.random()
            try await send(harness, applied, trace: parent)
            try await send(harness, tooSmall, trace: failedParent)
            try await send(harness, untraced, trace: nil)

            let receiver = try OTLPReceiver()
            defer { receiver.stop() }
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("tracing-\(UUID()).log")
            defer { try? FileManager.default.removeItem(at: log) }
            let worker = try startWorker(harness, endpoint: "http://127.0.0.1:\(receiver.port)", log: log)
            let jobs = [applied.jobID, tooSmall.jobID, untraced.jobID]
            let results = try await harness.events.results(harness.topics.results, jobs: jobs, timeout: .seconds(120))
            #expect(results.count == 3)
            kill(worker.processIdentifier, SIGTERM)
            worker.waitUntilExit()
            #expect(worker.terminationStatus == 0, "a drained worker exits cleanly")

            // Each job's span ends once its events are confirmed; the drain flushes what is left.
            let spans = try await receiver.spans { spans in
                jobs.allSatisfy { job in
                    spans.contains { $0.name == "publish events" } && jobSpan(job, in: spans) != nil
                }
                    && spans.filter { $0.name == "publish events" }.count >= 3
            }

            // The applied job: a consumer span of the request's trace, its parent the producer's span.
            let job = try #require(jobSpan(applied.jobID, in: spans), "no span for the job in \(spans.map(\.name))")
            #expect(job.traceID == hex(parent.traceID))
            #expect(job.parentID == hex(parent.parentID))
            #expect(job.kind == 5, "SPAN_KIND_CONSUMER")
            #expect(job.name == "process \(harness.topics.requests)")
            #expect(job.attributes["messaging.system"] as? String == "kafka")
            #expect(job.attributes["messaging.destination.name"] as? String == harness.topics.requests)
            #expect(job.attributes["messaging.kafka.destination.partition"] as? Int == 0)
            #expect(job.attributes["messaging.kafka.message.offset"] is Int)
            #expect(job.attributes["messaging.consumer.group.name"] as? String == harness.schema)
            #expect(job.attributes["avatar.outcome"] as? String == "applied")
            #expect(job.resource["service.name"] as? String == "avatar-cropper-test", "OTEL_SERVICE_NAME is honoured")

            // A span per step of the job's time, named by its stage (`JobStage`); the applied job reached each one.
            let children = Dictionary(spans.filter { $0.parentID == job.spanID }.map { ($0.name, $0) }) { a, _ in a }
            for name in JobStage.allCases.map(\.rawValue) + ["publish events"] {
                #expect(children[name] != nil, "no \(name) span under the job: \(children.keys.sorted())")
                #expect(children[name]?.traceID == job.traceID)
            }
            let render = try #require(children["render"])
            #expect(render.attributes["avatar.decoder"] is String)
            #expect(render.attributes["avatar.shrink_factor"] is Int)
            // A request without a pose (the worker's default: the face rule) looks for faces first.
            #expect(render.attributes["avatar.faces.count"] is Int)
            #expect(render.attributes["avatar.faces.rule_used"] is Bool)
            #expect(spans.allSatisfy { $0.parentID != render.spanID }, "a stage is one span, with no stages inside")
            #expect(children["publish events"]?.kind == 4, "SPAN_KIND_PRODUCER")

            // The result event continues the trace from the job's span.
            let result = try #require(message(harness, harness.topics.results, job: applied.jobID))
            let resultParent = try #require(result.headerString(TraceParent.headerName).flatMap(TraceParent.init))
            #expect(hex(resultParent.traceID) == job.traceID && hex(resultParent.parentID) == job.spanID)

            // The failure: its span says the code and class; its DLQ record and result name that span.
            let failed = try #require(jobSpan(tooSmall.jobID, in: spans))
            #expect(failed.traceID == hex(failedParent.traceID))
            #expect(failed.status == 2, "STATUS_CODE_ERROR")
            #expect(failed.attributes["error.type"] as? String == "TOO_SMALL")
            #expect(failed.attributes["avatar.error.class"] as? String == "permanent")
            let dlq = try #require(message(harness, harness.topics.dlq, job: tooSmall.jobID))
            let dlqParent = try #require(dlq.headerString(TraceParent.headerName).flatMap(TraceParent.init))
            #expect(hex(dlqParent.traceID) == failed.traceID && hex(dlqParent.parentID) == failed.spanID)
            #expect(dlq.headers.filter { $0.key == TraceParent.headerName }.count == 1)

            // No traceparent: a trace of its own.
            let fresh = try #require(jobSpan(untraced.jobID, in: spans))
            #expect(fresh.parentID.isEmpty && ![job.traceID, failed.traceID].contains(fresh.traceID))
            // Its log lines name that trace all the same (the span starts with the job), its result line the span.
            let freshLines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.filter { $0[LogKey.jobID] as? String == untraced.jobID }
            #expect(freshLines.count >= 2, "the job logs its steps and its result: \(freshLines)")
            for line in freshLines {
                #expect(line[LogKey.traceID] as? String == fresh.traceID, "a line without the job's trace: \(line)")
            }
            #expect(freshLines.contains { $0[LogKey.spanID] as? String == fresh.spanID })

            // Nothing private anywhere in any exported span: its name, status, attributes, events (and theirs), links
            // and resource, as the receiver wrote them. The published object keys are under `users/{uid}/`.
            let published = try #require(try harness.store.keys(withPrefix: AvatarKeys.userPrefix(user)).first)
            let forbidden = [
                user.uuidString.lowercased(), user.uuidString.uppercased(), untraced.userID.uuidString.lowercased(),
                untraced.userID.uuidString.uppercased(), source, smallSource, untracedSource, published,
                "uploads/", "users/", harness.storeRoot.path,
            ]
            for span in spans {
                for needle in forbidden where span.line.contains(needle) {
                    Issue.record("span \(span.name) holds something private (\(needle.prefix(8))…): \(span.line)")
                }
            }
            // Every span is one of the jobs' (no library exports spans of its own, e.g. an HTTP client's per
            // request, which would be roots of traces of their own).
            let jobTraces = Set(jobs.compactMap { jobSpan($0, in: spans)?.traceID })
            let strays = spans.filter { !jobTraces.contains($0.traceID) }
            #expect(strays.isEmpty, "spans outside the jobs' traces: \(strays.map(\.line))")
        }
    }

    @Test("one job's metrics record, its Prometheus observations and its spans give the same stage durations")
    func oneTimingVocabulary() async throws {
        try await withHarness(partitions: 1) { harness in
            let request = WorkerHarness.request(
                user: UUID(), source: try harness.upload("size/craft-beer_640x640.jpg"))
            try await send(harness, request, trace: TraceParent.random())
            let receiver = try OTLPReceiver()
            defer { receiver.stop() }
            try await withWorker(harness, endpoint: "http://127.0.0.1:\(receiver.port)") { httpPort in
                let results = try await harness.events.results(
                    harness.topics.results, jobs: [request.jobID], timeout: .seconds(120))
                #expect(results.first?.success.disposition == .applied, "\(results)")

                // The job's record: the only one on the test's metrics topic.
                let records = try await harness.events.waitFor(harness.topics.metrics, count: 1)
                try #require(records.count == 1)
                let record = try CropCodec.decode(
                    Avatar_Crop_V1_CropMetrics.self, from: records[0].value, format: .protobuf)
                let latency = record.latency
                // A switch: a stage added to `JobStage` does not compile here until the record carries it.
                func recorded(_ stage: JobStage) -> Double {
                    switch stage {
                    case .queueWait: record.queueWaitMs
                    case .fetch: latency.fetchMs
                    case .probe: latency.probeMs
                    case .render: latency.renderMs
                    case .encode: latency.encodeMs
                    case .upload: latency.uploadMs
                    case .database: latency.dbMs
                    }
                }

                // Its Prometheus observations: the worker ran this job only, so each histogram's sum is its one value.
                let exposition = try await TelemetryTestSupport.request("http://127.0.0.1:\(httpPort)/metrics").text
                func observed(_ stage: JobStage) -> Double {
                    exposition.split(separator: "\n").filter { line in
                        stage.inAttempt
                            ? line.hasPrefix(MetricName.stageDuration + "_sum{")
                                && line.contains("stage=\"\(stage.rawValue)\"")
                            : line.hasPrefix(MetricName.queueWait + "_sum")
                    }.compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +) * 1000
                }

                // Its spans: the job span's children, each stage's steps together.
                let spans = try await receiver.spans { jobSpan(request.jobID, in: $0) != nil }
                let job = try #require(jobSpan(request.jobID, in: spans))
                var traced: [String: Double] = [:]
                for span in spans where span.parentID == job.spanID {
                    traced[span.name, default: 0] += Double(span.end - span.start) / 1e6
                }

                // The same durations, within the clocks' resolution (span times are whole nanoseconds).
                for stage in JobStage.allCases {
                    let milliseconds = recorded(stage)
                    #expect(milliseconds > 0, "the applied job reached \(stage.rawValue)")
                    #expect(abs(observed(stage) - milliseconds) < 0.001, "\(stage.rawValue): Prometheus")
                    #expect(abs((traced[stage.rawValue] ?? 0) - milliseconds) < 0.001, "\(stage.rawValue): spans")
                }
                let attempt = JobStage.allCases.filter(\.inAttempt).map(recorded).reduce(0, +)
                #expect(attempt <= latency.totalMs, "the attempt's stages add up to at most its total")
            }
        }
    }

    @Test("with the collector down, jobs succeed and the lost spans are counted")
    func collectorDown() async throws {
        try await withHarness(partitions: 1) { harness in
            let requests = try (0..<3).map { _ in
                WorkerHarness.request(user: UUID(), source: try harness.upload("size/craft-beer_640x640.jpg"))
            }
            for request in requests { try await send(harness, request, trace: TraceParent.random()) }

            let closed = try TelemetryTestSupport.freePort()  // nothing listens there
            try await withWorker(harness, endpoint: "http://127.0.0.1:\(closed)") { httpPort in
                let results = try await harness.events.results(
                    harness.topics.results, jobs: requests.map(\.jobID), timeout: .seconds(120))
                #expect(results.count == 3)
                #expect(results.allSatisfy { $0.success.disposition == .applied }, "\(results)")

                // The exporter's failed batches show in the metric.
                var dropped = 0.0
                let deadline = ContinuousClock.now + .seconds(90)
                while dropped == 0, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(500))
                    let metrics = try? await TelemetryTestSupport.request("http://127.0.0.1:\(httpPort)/metrics")
                    dropped = (metrics?.text ?? "").split(separator: "\n")
                        .filter { $0.hasPrefix(MetricName.traceSpansDropped + "{") && $0.contains("export_failed") }
                        .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +)
                }
                #expect(
                    dropped > 0, "\(MetricName.traceSpansDropped) never counted the spans the collector did not take")
            }
        }
    }

    // MARK: - Helpers

    private func send(_ harness: WorkerHarness, _ request: ValidatedCropRequest, trace: TraceParent?) async throws {
        var headers = [KafkaHeader(key: "content-type", value: Array(CropWireFormat.protobuf.contentType.utf8))]
        if let trace { headers.append(KafkaHeader(key: TraceParent.headerName, value: Array(trace.header.utf8))) }
        try await harness.send(
            try CropCodec.encode(request.message, format: .protobuf), key: request.userID.uuidString.lowercased(),
            headers: headers)
    }

    /// `log`: a file for the worker's log lines (standard error, JSON, one a line); none: they are dropped.
    private func startWorker(
        _ harness: WorkerHarness, endpoint: String, extra: [String: String] = [:], log: URL? = nil
    ) throws -> Process {
        let process = Process()
        process.executableURL = WorkerTestSupport.executable
        process.arguments = ["worker"]
        var environment = try harness.processEnvironment()
        environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
        environment["OTEL_SERVICE_NAME"] = "avatar-cropper-test"
        environment["OTEL_BSP_SCHEDULE_DELAY"] = "200"
        environment["OTEL_EXPORTER_OTLP_TIMEOUT"] = "2000"
        environment.merge(extra) { _, new in new }
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        if let log {
            environment["AVATAR_LOG_FORMAT"] = nil  // the default: json, as stderr is a file
            environment["AVATAR_LOG_LEVEL"] = "debug"
            process.environment = environment
            try #require(FileManager.default.createFile(atPath: log.path, contents: nil))
            process.standardError = try FileHandle(forWritingTo: log)
        }
        try process.run()
        return process
    }

    /// A worker exporting its spans to `endpoint` and serving `/metrics` on a port of its own, given to `body`; the
    /// worker is stopped once `body` returns.
    private func withWorker(
        _ harness: WorkerHarness, endpoint: String, _ body: (_ metricsPort: Int) async throws -> Void
    ) async throws {
        let port = try TelemetryTestSupport.freePort()
        let worker = try startWorker(harness, endpoint: endpoint, extra: ["AVATAR_HTTP_PORT": "\(port)"])
        defer {
            kill(worker.processIdentifier, SIGTERM)
            worker.waitUntilExit()
        }
        try await body(port)
    }

    /// The result event (`job-id` header) or DLQ record (the request's bytes) of `job`.
    private func message(_ harness: WorkerHarness, _ topic: String, job: String) -> KafkaMessage? {
        harness.events.messages(on: topic).first { message in
            if let id = message.headerString(MessageHeader.jobID) { return id == job }
            let request = try? CropCodec.decodeRequest(
                message.value, contentType: message.headerString(MessageHeader.contentType))
            return request?.jobID == job
        }
    }

    private func jobSpan(_ job: String, in spans: [ExportedSpan]) -> ExportedSpan? {
        spans.first { $0.attributes["messaging.message.id"] as? String == job }
    }

    private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}

/// One span as python/otlp_receiver.py wrote it.
struct ExportedSpan {
    /// The receiver's whole JSON line: everything exported about the span.
    var line: String
    var traceID, spanID, parentID, name: String
    var kind, status: Int
    /// Nanoseconds since the epoch.
    var start, end: Int
    var attributes, resource: [String: Any]

    init?(_ line: Substring) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let traceID = object["trace_id"] as? String, let spanID = object["span_id"] as? String,
            let name = object["name"] as? String
        else { return nil }
        self.line = String(line)
        self.traceID = traceID
        self.spanID = spanID
        self.parentID = object["parent_span_id"] as? String ?? ""
        self.name = name
        self.kind = object["kind"] as? Int ?? 0
        self.status = (object["status"] as? [String: Any])?["code"] as? Int ?? 0
        self.start = object["start"] as? Int ?? 0
        self.end = object["end"] as? Int ?? 0
        self.attributes = object["attributes"] as? [String: Any] ?? [:]
        self.resource = object["resource"] as? [String: Any] ?? [:]
    }
}

/// python/otlp_receiver.py, running for one test.
final class OTLPReceiver {
    let port: Int
    private let process = Process()
    private let spansFile: URL

    init() throws {
        spansFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            WorkerTestSupport.uniqueName("spans") + ".jsonl")
        _ = FileManager.default.createFile(atPath: spansFile.path, contents: nil)
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: try TestService.python.require())
        process.arguments = [TestFiles.url("Tests/AvatarWorkerTests/python/otlp_receiver.py").path, spansFile.path]
        process.standardOutput = output
        try process.run()
        // Its first line: the port it listens on.
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) {
            line += byte
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw TelemetryTestSupport.Failure(description: "the OTLP receiver did not start")
        }
        self.port = port
    }

    /// The spans received so far, once `complete` holds for them (or after two minutes: what there is).
    func spans(until complete: ([ExportedSpan]) -> Bool) async throws -> [ExportedSpan] {
        let deadline = ContinuousClock.now + .seconds(120)
        while true {
            let text = (try? String(contentsOf: spansFile, encoding: .utf8)) ?? ""
            let spans = text.split(separator: "\n").compactMap(ExportedSpan.init)
            if complete(spans) || ContinuousClock.now >= deadline { return spans }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    func stop() {
        // SIGKILL: a child of a test thread may start with SIGTERM blocked.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: spansFile)
    }
}
