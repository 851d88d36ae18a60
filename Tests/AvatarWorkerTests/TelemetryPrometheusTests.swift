import CropGeometry
import CropProtocol
import Foundation
import Logging
import ServiceLifecycle
import TestEnvironment
import Testing

@testable import AvatarWorker

/// The rules file passes `promtool check rules` and its unit tests (`dashboards/alerts.test.yml`).
@Suite("Alert rules (promtool)", .requires(.tool("prometheus"), .tool("promtool")))
struct TelemetryRulesTests {
    @Test("promtool accepts the rules and their unit tests pass")
    func promtool() throws {
        let promtool = try #require(TelemetryTestSupport.executable("promtool"), "promtool (Debian package prometheus)")
        let (checkStatus, checkOutput) = try TelemetryTestSupport.run(
            promtool, ["check", "rules", "alerts.rules.yml"], in: TelemetryTestSupport.dashboards)
        #expect(checkStatus == 0, "promtool check rules: \(checkOutput)")
        let (testStatus, testOutput) = try TelemetryTestSupport.run(
            promtool, ["test", "rules", "alerts.test.yml"], in: TelemetryTestSupport.dashboards)
        #expect(testStatus == 0, "promtool test rules: \(testOutput)")
    }
}

/// A real Prometheus (Debian's `prometheus`) scrapes a running worker while it runs jobs; then every
/// query of the Grafana dashboard and every rule of the alert rules file is run through Prometheus'
/// HTTP API. A query fails the test on any API error, and on an empty (or all-NaN) answer unless the
/// table below says its series may legitimately not exist yet.
@Suite(
    "Telemetry with Prometheus (integration)",
    .requires(.database, .kafka, .tool("prometheus"), .tool("promtool")))
struct TelemetryPrometheusTests {
    /// Metrics that exist only once their event happened (a commit failed, a delivery failed, librdkafka
    /// reported an error). A query whose every metric is one of these may answer nothing.
    static let eventOnlyMetrics: Set<String> = [
        MetricName.kafkaCommitFailures, MetricName.kafkaDeliveryFailures, MetricName.kafkaClientErrors,
        // Only with tracing on (WorkerTracingTests scrapes it).
        MetricName.traceSpansDropped,
    ]

    @Test("every dashboard query and rule works against Prometheus scraping a worker that ran jobs")
    func dashboardAndRules() async throws {
        let exporter = PrometheusExporter.bootstrap()
        try await withHarness { harness in
            let port = try TelemetryTestSupport.freePort()
            let values = try harness.values([
                "http.host=127.0.0.1", "http.port=\(port)",
                // Nothing fits at full resolution: every job reserves its thumbnail-resolution decode.
                "worker.memory-budget-mb=8",
            ])
            let parts = try WorkerFactory.build(
                values, logger: harness.logger, helperExecutable: try TestFiles.requireCropperBinary())
            defer { parts.renderHelpers.shutdown() }
            let server = try #require(
                try TelemetryEndpoints.server(
                    values, parts: parts, exporter: exporter,
                    logger: harness.logger))
            let group = ServiceGroup(services: [server, parts.service], logger: harness.logger)
            let worker = Task { try await group.run() }
            let prometheus: PrometheusServer
            do {
                prometheus = try PrometheusServer(
                    scraping: "127.0.0.1:\(port)",
                    rules: TelemetryTestSupport.dashboards.appendingPathComponent("alerts.rules.yml"))
                #expect(try await server.listeningPort() == port)
                try await run(harness, port: port, prometheus: prometheus)
            } catch {
                await group.triggerGracefulShutdown()
                _ = try? await worker.value
                throw error
            }
            prometheus.stop()
            await group.triggerGracefulShutdown()
            try await worker.value
            parts.database.shutdown()
        }
    }

    private func run(_ harness: WorkerHarness, port: Int, prometheus: PrometheusServer) async throws {
        do {
            try await runJobsAndQueries(harness, port: port, prometheus: prometheus)
        } catch {
            print("prometheus log:\n\(prometheus.logText)")
            prometheus.stop()
            throw error
        }
    }

    private func runJobsAndQueries(_ harness: WorkerHarness, port: Int, prometheus: PrometheusServer) async throws {
        let base = "http://127.0.0.1:\(port)"
        #expect(try await TelemetryTestSupport.request(base + "/healthz").status == 200)
        try await TelemetryTestSupport.waitUntil("/readyz to answer 200") {
            try await TelemetryTestSupport.request(base + "/readyz").status == 200
        }
        let readiness =
            try JSONSerialization.jsonObject(
                with: try await TelemetryTestSupport.request(base + "/readyz").body) as? [String: Any]
        let checks = (readiness?["checks"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(checks == ["kafka", "database", "storage", "heif", "face-model"])
        let details = (readiness?["checks"] as? [[String: Any]] ?? []).reduce(into: [String: String]()) {
            $0[$1["name"] as? String ?? ""] = $1["detail"] as? String
        }
        #expect(details["heif"]?.hasPrefix("libheif ") == true, "\(details["heif"] ?? "no heif check")")
        // The test build has the model beside the binary (scripts/fetch-face-model.sh), or says why not.
        #expect(details["face-model"] == "loaded" || details["face-model"]?.hasPrefix("model_") == true)

        let scraped = #"up{job="avatar-cropper"} == 1"#
        try await TelemetryTestSupport.waitUntil("Prometheus to scrape the worker") {
            try await !prometheus.query(scraped).isEmpty
        }

        // A success with zoom and pan clamped on a 3 MP RGBA PNG (decoded whole, 12 MiB: larger than the
        // 8 MiB budget, so the fallback), a plain success, and a photo too small for an avatar (a failure
        // and a DLQ record).
        let clamped = WorkerHarness.request(
            source: try harness.upload("colour/rgba_blackbug_2048x1536.png"),
            input: .pose(EditorPose(scale: 100, tx: 100_000, ty: 0), reference: PixelSize(width: 1024, height: 768)))
        let plain = WorkerHarness.request(source: try harness.upload("size/craft-beer_640x640.jpg"))
        let tooSmall = WorkerHarness.request(source: try harness.upload("size/craft-beer_319x479.jpg"))
        for request in [clamped, plain, tooSmall] { try await harness.enqueue(request) }
        let results = try await harness.events.results(
            harness.topics.results, jobs: [clamped.jobID, plain.jobID, tooSmall.jobID])
        #expect(results.count == 3)

        // Wait until Prometheus holds what the dashboard shows: the jobs, this worker's lag
        // (librdkafka statistics, every 5 s, once offsets are committed), and evaluated rules.
        let requestsTopic = harness.topics.requests
        try await TelemetryTestSupport.waitUntil("the jobs in Prometheus") {
            let failed = try await prometheus.query(#"avatar_jobs_total{outcome="failed",error_code="TOO_SMALL"}"#)
            let fallbacks = try await prometheus.query("avatar_fallback_renders_total > 0")
            return !failed.isEmpty && !fallbacks.isEmpty
        }
        try await TelemetryTestSupport.waitUntil("the consumer lag of \(requestsTopic) in Prometheus") {
            try await !prometheus.query(#"kafka_consumer_lag{topic="\#(requestsTopic)"}"#).isEmpty
        }
        try await TelemetryTestSupport.waitUntil("the recording rules to be evaluated") {
            let lag = try await prometheus.query(#"avatar:consumer_lag:by_topic{topic="\#(requestsTopic)"}"#)
            let dlq = try await prometheus.query("avatar:dlq_records:rate5m")
            return !lag.isEmpty && !dlq.isEmpty
        }

        try await checkMetricNames(prometheus)
        try await checkDashboard(prometheus)
        try await checkRules(prometheus)
    }

    /// Every name in `MetricName.all` is scraped (histograms as `_bucket`), but the event-only ones.
    private func checkMetricNames(_ prometheus: PrometheusServer) async throws {
        let response = try await TelemetryTestSupport.request(prometheus.url + "/api/v1/label/__name__/values")
        let json = try JSONSerialization.jsonObject(with: response.body) as? [String: Any]
        let names = Set(json?["data"] as? [String] ?? [])
        let histograms: Set<String> = [
            MetricName.stageDuration, MetricName.endToEnd, MetricName.queueWait, MetricName.encodeDuration,
        ]
        for name in MetricName.all where !Self.eventOnlyMetrics.contains(name) {
            let scraped = histograms.contains(name) ? name + "_bucket" : name
            #expect(names.contains(scraped), "\(scraped) is not exported")
        }
    }

    /// Grafana's variables, replaced the way Grafana would for "All" workers.
    static func substitute(_ expression: String) -> String {
        expression
            .replacingOccurrences(of: "${__rate_interval}", with: "2m")
            .replacingOccurrences(of: "$__rate_interval", with: "2m")
            .replacingOccurrences(of: "$__interval", with: "15s")
            .replacingOccurrences(of: "$__range", with: "5m")
            .replacingOccurrences(of: "${instance}", with: ".*")
            .replacingOccurrences(of: "$instance", with: ".*")
            .replacingOccurrences(of: "${source_format}", with: ".*")
            .replacingOccurrences(of: "$source_format", with: ".*")
    }

    /// The metric names an expression reads (words followed by `{`), for the event-only table.
    static func metrics(in expression: String) -> Set<String> {
        let pattern = try! NSRegularExpression(pattern: #"([a-zA-Z_:][a-zA-Z0-9_:]*)\{"#)
        let range = NSRange(expression.startIndex..., in: expression)
        return Set(
            pattern.matches(in: expression, range: range).compactMap {
                Range($0.range(at: 1), in: expression).map { String(expression[$0]) }
            })
    }

    /// Every `expr` in the dashboard JSON, wherever it sits (panels, rows, targets).
    static func expressions(in json: Any) -> [String] {
        if let object = json as? [String: Any] {
            return object.sorted { $0.key < $1.key }.flatMap { key, value -> [String] in
                if key == "expr", let text = value as? String { return [text] }
                return expressions(in: value)
            }
        }
        if let array = json as? [Any] { return array.flatMap { expressions(in: $0) } }
        return []
    }

    /// Runs a query; when data must exist but none came back, asks again a few times. On a loaded
    /// machine one scrape can exceed its 1 s timeout, and Prometheus then marks every series of the
    /// target stale until the next scrape: an empty answer for a second, not a missing metric.
    static func queryWithData(
        _ prometheus: PrometheusServer, _ expression: String, retry: Bool
    ) async throws -> [PrometheusServer.Sample] {
        var samples = try await prometheus.query(expression)
        var attempts = 1
        while retry && !samples.contains(where: { $0.value.isFinite }) && attempts < 5 {
            try await Task.sleep(for: .seconds(1))
            samples = try await prometheus.query(expression)
            attempts += 1
        }
        return samples
    }

    private func checkDashboard(_ prometheus: PrometheusServer) async throws {
        let file = TelemetryTestSupport.dashboards.appendingPathComponent("avatar-cropper.grafana.json")
        let dashboard = try JSONSerialization.jsonObject(with: Data(contentsOf: file))
        let expressions = Self.expressions(in: dashboard)
        #expect(expressions.count >= 30, "the dashboard has its queries")
        for raw in expressions {
            let expression = Self.substitute(raw)
            #expect(!expression.contains("$"), "unknown Grafana variable in \(raw)")
            let mayBeEmpty = Self.metrics(in: raw).isSubset(of: Self.eventOnlyMetrics)
            let samples: [PrometheusServer.Sample]
            do {
                samples = try await Self.queryWithData(prometheus, expression, retry: !mayBeEmpty)
            } catch {
                Issue.record("dashboard query failed: \(raw): \(error)")
                continue
            }
            if !mayBeEmpty {
                #expect(
                    samples.contains { $0.value.isFinite },
                    "dashboard query has no data: \(raw) → \(samples.map(\.value))")
            }
        }
    }

    /// The rules as Prometheus loaded them from `alerts.rules.yml`: as many as promtool counts, all
    /// healthy; every expression runs; recording rules have data, under their own name too.
    private func checkRules(_ prometheus: PrometheusServer) async throws {
        let data = try await prometheus.api("/api/v1/rules")
        let groups = data["groups"] as? [[String: Any]] ?? []
        let rules = groups.flatMap { $0["rules"] as? [[String: Any]] ?? [] }

        let promtool = try #require(TelemetryTestSupport.executable("promtool"))
        let (_, output) = try TelemetryTestSupport.run(promtool, ["check", "rules", prometheus.rulesFile.path])
        let counted = output.split(separator: "\n").first { $0.contains("rules found") }
            .flatMap { $0.split(separator: " ").compactMap { Int($0) }.first }
        #expect(
            counted != nil && rules.count == counted,
            "Prometheus loaded \(rules.count) rules, promtool counts \(String(describing: counted))")
        let types = Set(rules.compactMap { $0["type"] as? String })
        #expect(types == ["alerting", "recording"])

        for rule in rules {
            let name = rule["name"] as? String ?? "?"
            let expression = try #require(rule["query"] as? String)
            #expect(
                rule["health"] as? String == "ok",
                "rule \(name): \(rule["health"] ?? "") \(rule["lastError"] ?? "")")
            let samples: [PrometheusServer.Sample]
            do {
                samples = try await Self.queryWithData(
                    prometheus, expression, retry: rule["type"] as? String == "recording")
            } catch {
                Issue.record("rule \(name) failed: \(expression): \(error)")
                continue
            }
            // Alert expressions are conditions: they answer nothing while all is well. Their inputs,
            // the recording rules, must have data.
            guard rule["type"] as? String == "recording" else { continue }
            #expect(
                samples.contains { $0.value.isFinite },
                "recording rule \(name) has no data: \(samples.map(\.value))")
            // The series appears at the rule's next evaluation (every second, later on a loaded machine), which
            // may come after its expression first has data.
            var recorded = try await prometheus.query(name)
            for _ in 0..<15 where recorded.isEmpty {
                try await Task.sleep(for: .seconds(1))
                recorded = try await prometheus.query(name)
            }
            #expect(!recorded.isEmpty, "Prometheus recorded nothing under \(name)")
        }
    }
}
