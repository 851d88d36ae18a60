import CoreMetrics
import Prometheus

/// The process's Prometheus registry: swift-metrics is bootstrapped with it once, and `/metrics`
/// renders it in the text exposition format.
public final class PrometheusExporter: Sendable {
    private let registry: PrometheusCollectorRegistry

    private init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    /// Bootstraps swift-metrics with a Prometheus factory (latency buckets: `MetricName.durationBuckets`)
    /// the first time it is called and returns the same exporter on every call, so `main` and the tests
    /// can both ask for it. Call it before building the worker: metrics created earlier go nowhere.
    public static func bootstrap() -> PrometheusExporter { shared }

    private static let shared: PrometheusExporter = {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = MetricName.durationBuckets
        MetricsSystem.bootstrap(factory)
        return PrometheusExporter(registry: registry)
    }()

    /// Content type of `render()`: Prometheus text exposition format 0.0.4.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Every metric, in the text exposition format.
    public func render() -> [UInt8] {
        registry.emitToBuffer()
    }
}
