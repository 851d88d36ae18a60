import Imaging
import Logging

/// Builds the worker's HTTP endpoints from configuration. `main` and the telemetry tests both call
/// these, so what is tested is what runs.
public enum TelemetryEndpoints {
    /// The `/readyz` checks of a worker: `kafka` (consumer assigned, statistics recent, broker up),
    /// `database` (`SELECT 1`), `storage` (the avatar store), and `sources` when source photos
    /// live in another store (`storage.sources-url`); `heif` names libheif's version and passes, saying
    /// when it is too old for iOS 18 HEICs (`HEIFSupport`).
    /// A failed probe answers a fixed detail; its error goes to `logger`.
    public static func readiness(
        for parts: WorkerFactory.Parts, values: ConfigurationValues, logger: Logger? = nil
    ) -> Readiness {
        let service = parts.service
        let database = parts.database
        let avatars = parts.avatars
        var checks = [
            ReadinessCheck(name: "kafka") { service.consumerReadiness() },
            ReadinessCheck.probing("database", logger: logger) { try database.ping() },
            ReadinessCheck.probing("storage", logger: logger) { try avatars.ping() },
            ReadinessCheck(name: "heif") { .ok(HEIFSupport.summary) },
        ]
        if values[.storageSourcesURL] != nil {
            let sources = parts.sources
            checks.append(.probing("sources", logger: logger) { try sources.ping() })
        }
        return Readiness(checks: checks)
    }

    /// The HTTP server of `/metrics`, `/healthz` and `/readyz` on `http.host`:`http.port`, or nil when
    /// `http.port` is 0 (off).
    public static func server(
        _ values: ConfigurationValues, parts: WorkerFactory.Parts, exporter: PrometheusExporter, logger: Logger
    ) throws -> TelemetryHTTPServer? {
        guard let (host, port) = try WorkerFactory.httpAddress(values) else { return nil }
        let routes = TelemetryRoutes(
            metrics: { exporter.render() }, readiness: readiness(for: parts, values: values, logger: logger))
        return TelemetryHTTPServer(host: host, port: port, routes: routes, logger: logger)
    }
}
