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
}
