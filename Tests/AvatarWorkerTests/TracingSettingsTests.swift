import Foundation
import Logging
import Testing

@testable import AvatarWorker

/// When tracing is on and where it exports (`TracingSettings`), and which swift-otel messages count lost spans
/// (`TraceExportDiagnostics`). The export itself is WorkerTracingTests' (real worker, real receiver).
@Suite("Tracing settings")
struct TracingSettingsTests {
    @Test("off by default; on with tracing.enabled or OTEL_EXPORTER_OTLP_ENDPOINT alone; OTEL_SDK_DISABLED wins")
    func enabled() throws {
        let none = try ConfigurationValues()
        #expect(try TracingSettings.configured(none, environment: [:]) == nil)
        let otlp = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"]
        #expect(
            try TracingSettings.configured(none, environment: otlp) == TracingSettings(endpoint: nil, sampleRatio: 1))
        #expect(
            try TracingSettings.configured(
                none, environment: ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"]) != nil)
        #expect(
            try TracingSettings.configured(none, environment: otlp.merging(["OTEL_SDK_DISABLED": "true"]) { a, _ in a })
                == nil)
        let on = try ConfigurationValues(
            flags: ["tracing.enabled=true", "tracing.endpoint=http://127.0.0.1:4318", "tracing.sample-ratio=0.25"])
        #expect(
            try TracingSettings.configured(on, environment: [:])
                == TracingSettings(endpoint: "http://127.0.0.1:4318", sampleRatio: 0.25))
        let off = try ConfigurationValues(flags: ["tracing.enabled=false"])
        #expect(try TracingSettings.configured(off, environment: otlp) == nil, "the key beats the variable")
    }

    @Test("bad values are refused with the key's name")
    func refused() throws {
        for flag in ["tracing.enabled=yes", "tracing.sample-ratio=1.5", "tracing.endpoint=collector:4318"] {
            let values = try ConfigurationValues(
                flags: flag.hasPrefix("tracing.enabled") ? [flag] : ["tracing.enabled=true", flag])
            #expect(throws: ConfigurationValues.Error.self) { try TracingSettings.configured(values, environment: [:]) }
        }
    }

    @Test("swift-otel's messages that report lost spans, and where their count is")
    func drops() {
        #expect(TraceExportDiagnostics.drop("Failed to export batch.")?.0 == .exportFailed)
        #expect(TraceExportDiagnostics.drop("Failed to export batch.")?.1 == "batch_size")
        #expect(
            TraceExportDiagnostics.drop("Spans were dropped this iteration because queue was full")?.0 == .queueFull)
        #expect(TraceExportDiagnostics.drop("Exported batch.") == nil)
    }

    @Test("the drop warnings are counted whatever level swift-otel is told to log at (OTEL_LOG_LEVEL=error)")
    func dropsAtAnyLevel() {
        var handler = TraceExportDiagnostics(forwardingTo: Logger(label: "test.otel"))
        handler.logLevel = .error  // what swift-otel's makeDiagnosticLogger does under OTEL_LOG_LEVEL=error
        #expect(handler.logLevel <= .warning)
        handler.logLevel = .trace
        #expect(handler.logLevel == .trace)
    }

    /// The words `drop` matches, as swift-otel's batch span processor logs them: an upgrade that rewords them fails
    /// here, not silently in production (swift-otel has no API for lost spans).
    @Test("swift-otel still words its lost-span warnings as TraceExportDiagnostics reads them")
    func swiftOTelWording() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let path = root.appendingPathComponent(
            ".build/checkouts/swift-otel/Sources/OTel/OTelCore/Tracing/Processing/Batch/OTelBatchSpanProcessor.swift")
        let source = try String(contentsOf: path, encoding: .utf8)
        for words in [
            #""Spans were dropped this iteration because queue was full""#, #""dropped_count""#,
            #""Failed to export batch.""#, #""batch_size""#,
        ] {
            #expect(source.contains(words), "swift-otel no longer logs \(words)")
        }
    }
}
