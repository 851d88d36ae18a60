import CropProtocol
import Imaging
import Logging
import Storage

/// Builds the worker's HTTP endpoints from configuration. `main` and the telemetry tests both call
/// these, so what is tested is what runs.
public enum TelemetryEndpoints {
    /// The `/readyz` checks of a worker: `kafka` (consumer assigned, statistics recent, broker up),
    /// `database` (`SELECT 1`), `storage` (the avatar store), and `sources` when source photos
    /// live in another store (`storage.sources-url`); `heif` names libheif's version and passes, saying
    /// when it is too old for iOS 18 HEICs (`HEIFSupport`); `face-model` passes, saying whether the face model
    /// loaded (`FaceModelCheck`); `source-deletion` with
    /// `storage.delete-source = after-success` (below).
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
            FaceModelCheck.readiness(parts.faceModelProblem),
        ]
        if values[.storageSourcesURL] != nil {
            let sources = parts.sources
            checks.append(.probing("sources", logger: logger) { try sources.ping() })
        }
        if parts.sourceSweeper != nil {
            checks.append(sourceDeletion(parts.sources, template: parts.sourceKeyTemplate, logger: logger))
        }
        return Readiness(checks: checks)
    }

    /// `source-deletion` (with `storage.delete-source = after-success`): a DELETE of a key no upload has, under the
    /// sources' prefix (`SourceDeletionQueue.probeKey`). It fails when the store refuses it (HTTP 403: the credentials
    /// lack the delete right there, and every source would stay), and when the store cannot be reached.
    static func sourceDeletion(_ sources: any ObjectStore, template: SourceKeyTemplate?, logger: Logger?)
        -> ReadinessCheck
    {
        let key = SourceDeletionQueue.probeKey(template: template)
        return ReadinessCheck(name: "source-deletion") {
            do throws(StorageError) {
                try sources.delete(key)
                return .ok()
            } catch {
                logger?.warning(
                    "readiness check failed",
                    metadata: [LogKey.check: "source-deletion", LogKey.error: "\(String(describing: error))"])
                return .failed(error.code == .accessDenied ? accessDeniedDetail : ReadinessCheck.unavailableDetail)
            }
        }
    }

    /// The `source-deletion` check's detail when the store refuses the delete.
    static let accessDeniedDetail = "the credentials may not delete sources (access denied)"

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
