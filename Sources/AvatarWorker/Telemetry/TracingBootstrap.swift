import Foundation
import Logging
import Metrics
import OTel
import ServiceLifecycle
import Tracing

/// Whether and where the worker exports its traces (docs/ARCHITECTURE.md §3): off by default; on with
/// `tracing.enabled`, or with the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (`…_TRACES_ENDPOINT`) alone. The other
/// standard variables (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`/`_ARG`,
/// `OTEL_BSP_*`) are read by swift-otel and win over the keys.
public struct TracingSettings: Sendable, Equatable {
    /// The collector's OTLP/HTTP base URL (spans go to `<endpoint>/v1/traces`); nil: swift-otel's default.
    public var endpoint: String?
    /// Share of new traces sampled; a request's own sampled flag is followed (parent-based).
    public var sampleRatio: Double

    /// The service name spans carry unless `OTEL_SERVICE_NAME` says otherwise.
    public static let serviceName = "avatar-cropper"

    /// The settings, or nil when tracing is off.
    public static func configured(_ values: ConfigurationValues, environment: [String: String]) throws
        -> TracingSettings?
    {
        let enabled: Bool
        switch values[.tracingEnabled]?.lowercased() {
        case "true": enabled = true
        case "false": enabled = false
        case nil:
            let otlp = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
            enabled =
                otlp.contains { environment[$0]?.isEmpty == false }
                && environment["OTEL_SDK_DISABLED"]?.lowercased() != "true"
                && environment["OTEL_TRACES_EXPORTER"]?.lowercased() != "none"
        case let other?:
            throw ConfigurationValues.Error(
                description: "\(ConfigurationKey.tracingEnabled.name) must be true or false, got '\(other)'")
        }
        guard enabled else { return nil }
        let text = try values.require(.tracingSampleRatio)
        guard let ratio = Double(text), (0...1).contains(ratio) else {
            throw ConfigurationValues.Error(
                description: "\(ConfigurationKey.tracingSampleRatio.name) must be between 0 and 1, got '\(text)'")
        }
        let endpoint = values[.tracingEndpoint]
        if let endpoint, !(endpoint.hasPrefix("http://") || endpoint.hasPrefix("https://")) {
            throw ConfigurationValues.Error(
                description: "\(ConfigurationKey.tracingEndpoint.name) must be an http:// or https:// URL")
        }
        return TracingSettings(endpoint: endpoint, sampleRatio: ratio)
    }
}

/// Installs swift-otel's tracer as the process's (`InstrumentationSystem`) and returns the service that exports
/// its spans over OTLP/HTTP in batches, for the worker's `ServiceGroup`. Export never holds up a job: a finished
/// span is handed to the batch processor's bounded queue (`OTEL_BSP_MAX_QUEUE_SIZE`, 2048 by default); spans
/// over it, and batches the collector did not take, are dropped and counted in
/// `avatar_trace_spans_dropped_total` (`TraceExportDiagnostics`).
public enum TracingBootstrap {
    public static func start(_ settings: TracingSettings, logger: Logger) throws -> any Service {
        var configuration = OTel.Configuration.default
        configuration.serviceName = TracingSettings.serviceName
        configuration.propagators = [.traceContext]
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        if let endpoint = settings.endpoint {
            // Set in code, swift-otel takes the URL as is: the signal's path is ours to add.
            configuration.traces.otlpExporter.endpoint =
                endpoint.hasSuffix("/") ? endpoint + "v1/traces" : endpoint + "/v1/traces"
        }
        if let sampler = OTel.Configuration.TracesConfiguration.SamplerConfiguration.parentBasedTraceIDRatio(
            ratio: settings.sampleRatio)
        {
            configuration.traces.sampler = sampler
        }
        let diagnostics = TraceExportDiagnostics(forwardingTo: logger)
        configuration.diagnosticLogger = .custom(Logger(label: logger.label) { _ in diagnostics })
        let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(tracer)
        return service
    }
}
