import ArgumentParser
import AvatarWorker
import Foundation
import Imaging
import Logging
import RenderHelpers
import ServiceLifecycle
import UnixSignals

struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Consume crop requests and publish avatars until SIGTERM or SIGINT.",
        discussion: """
            On SIGTERM the worker stops fetching, lets running jobs finish within worker.drain-seconds, commits \
            what finished and leaves the consumer group. It serves /metrics, /healthz and /readyz on \
            http.host:http.port (0 = off) until it has drained.
            """)

    @OptionGroup var config: ConfigOptions

    func run() async throws {
        let values = try config.values()
        let logger = try makeLogger("avatar-cropper.worker", values: values)
        // Before anything records a metric: metrics created earlier would go nowhere.
        let exporter = PrometheusExporter.bootstrap()
        let build = BuildInfo.current
        logger.info("avatar-cropper \(build.version) starting", metadata: build.startMetadata(values))
        // Test-only, debug builds only: the crash and chaos tests name their seams here (a release build has none,
        // and `config.values()` has refused the variable as unknown).
        #if AVATAR_TEST_SEAMS
            let testSeams = try JobTestSeamsSetting.seams(
                named: ProcessInfo.processInfo.environment[JobTestSeamsSetting.environmentVariable])
            if testSeams != nil {
                logger.warning("TEST-ONLY seams installed (\(JobTestSeamsSetting.environmentVariable))")
            }
        #else
            let testSeams: (any JobTestSeams)? = nil
        #endif
        // Before the worker exists: its jobs find the tracer installed (docs/ARCHITECTURE.md §3).
        let tracing = try TracingSettings.configured(values, environment: ProcessInfo.processInfo.environment).map {
            settings in
            logger.info("exporting traces over OTLP/HTTP", metadata: [LogKey.sampleRatio: "\(settings.sampleRatio)"])
            return try TracingBootstrap.start(settings, logger: logger)
        }
        let parts = try WorkerFactory.build(
            values, logger: logger, helperExecutable: RenderHelperPool.Launch.ownExecutable, testSeams: testSeams)
        if HEIFSupport.isCurrent {
            logger.info("\(HEIFSupport.summary)")
        } else {
            logger.warning("\(HEIFSupport.summary)")
        }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        // First, so shut down last: the drain's spans are still exported.
        if let tracing { services.append(.init(service: tracing)) }
        // First in the list, so shut down last: /metrics and /readyz answer while the worker drains.
        if let http = try TelemetryEndpoints.server(values, parts: parts, exporter: exporter, logger: logger) {
            services.append(.init(service: http))
        }
        services.append(.init(service: parts.service))
        if let pruner = parts.pruner { services.append(.init(service: pruner)) }
        if let sweeper = parts.sourceSweeper { services.append(.init(service: sweeper)) }
        services.append(.init(service: parts.forgetSweeper))
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        // Drained: nothing uses the stores or the database any more.
        await parts.avatars.shutdown()
        await parts.sources.shutdown()
        parts.database.shutdown()
        parts.renderHelpers.shutdown()
    }
}
