import Database
import Foundation
import Imaging
import Logging
import Messaging
import Storage

/// Builds the worker's parts from configuration. `main` and the integration tests both
/// call these, so what is tested is what runs.
public enum WorkerFactory {
    public struct Parts: Sendable {
        public var service: AvatarWorkerService
        public var database: PostgresClient
        public var avatars: any ObjectStore
        public var sources: any ObjectStore
        public var budget: MemoryBudget
        public var health: WorkerHealth
        /// The scheduled ledger prune, when `ledger.prune-interval-minutes` is above 0.
        public var pruner: LedgerPruner?
    }

    /// The ledger's retention settings (`ledger.*`), for the worker's pruner and `avatar-cropper prune`.
    public static func ledgerRetention(_ values: ConfigurationValues, client: PostgresClient) throws -> LedgerRetention
    {
        LedgerRetention(
            client: client, retention: .seconds(try values.integer(.ledgerRetentionHours, minimum: 0) * 3600),
            batchSize: try values.integer(.ledgerPruneBatch, minimum: 1))
    }

    /// `storage.delete-source`.
    public static func sourceDeletion(_ values: ConfigurationValues) throws -> SourceDeletion {
        let name = try values.require(.storageDeleteSource)
        guard let deletion = SourceDeletion(rawValue: name) else {
            throw ConfigurationValues.Error(
                description: "\(ConfigurationKey.storageDeleteSource.name) must be one of "
                    + SourceDeletion.allCases.map(\.rawValue).joined(separator: ", ") + ", got \(name)")
        }
        return deletion
    }

    public static func kafkaConfiguration(_ values: ConfigurationValues) throws -> KafkaConfiguration {
        KafkaConfiguration(bootstrapServers: try values.require(.kafkaBrokers), properties: values.kafkaProperties)
    }

    public static func databaseConfiguration(_ values: ConfigurationValues) throws -> DatabaseConfiguration {
        var configuration = DatabaseConfiguration(
            url: try values.require(.databaseURL), searchPath: values[.databaseSchema])
        // Deadlines everywhere: no statement or lock wait holds a pool thread for ever (0 = server default).
        if let milliseconds = try values.int(.databaseStatementTimeoutMS), milliseconds > 0 {
            configuration.statementTimeout = .milliseconds(milliseconds)
        }
        if let milliseconds = try values.int(.databaseLockTimeoutMS), milliseconds > 0 {
            configuration.lockTimeout = .milliseconds(milliseconds)
        }
        return configuration
    }

    /// A store from a `file://` or `s3://` URL; a relative `file://./dir` or a plain path is
    /// taken relative to the working directory.
    public static func store(url: String, values: ConfigurationValues, logger: Logger) throws -> any ObjectStore {
        var url = url
        if url.hasPrefix("file://./") || !url.contains("://") {
            let relative = url.hasPrefix("file://") ? String(url.dropFirst("file://".count)) : url
            let absolute = URL(
                fileURLWithPath: relative, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
            url = absolute.standardizedFileURL.absoluteString
        }
        var credentials: ObjectStoreFactory.Credentials?
        if let id = values[.storageAccessKeyID], let secret = values[.storageSecretAccessKey] {
            credentials = .init(accessKeyID: id, secretAccessKey: secret)
        }
        return try ObjectStoreFactory.make(url: url, credentials: credentials, logger: logger)
    }

    /// Renders at once (`worker.pool-width`, default: the cores) and jobs at once (`worker.jobs-in-flight`,
    /// default: twice that, so a job's upload and commit overlap the next render).
    public static func concurrency(
        _ values: ConfigurationValues, cores: Int = ProcessInfo.processInfo.activeProcessorCount
    ) throws -> (poolWidth: Int, jobsInFlight: Int) {
        let poolWidth = try values.int(.poolWidth, minimum: 1) ?? cores
        let jobsInFlight = try values.int(.jobsInFlight, minimum: 1) ?? 2 * poolWidth
        guard jobsInFlight >= poolWidth else {
            throw ConfigurationValues.Error(
                description: "\(ConfigurationKey.jobsInFlight.name) must be at least worker.pool-width (\(poolWidth)), "
                    + "got \(jobsInFlight): every render is a job in flight")
        }
        return (poolWidth, jobsInFlight)
    }

    /// `testHooks` are for tests only (`JobTestHooks`); by default the environment decides (off in production).
    public static func build(
        _ values: ConfigurationValues, logger: Logger, testHooks: JobTestHooks = .fromEnvironment()
    ) throws -> Parts {
        // Out-of-range numbers (a pool width or budget of 0) are configuration errors here, at start,
        // not precondition failures deep in the pool or the budget.
        let (poolWidth, jobsInFlight) = try concurrency(values)
        try Vips.initialise(concurrency: try values.int(.vipsConcurrency, minimum: 1))
        let budget = MemoryBudget(limit: try values.integer(.memoryBudgetMB, minimum: 1) * 1024 * 1024)
        let database = PostgresClient(
            configuration: try databaseConfiguration(values),
            maxConnections: try values.int(.databasePoolSize, minimum: 1) ?? jobsInFlight + 1, logger: logger)
        let avatars = try store(url: try values.require(.storageURL), values: values, logger: logger)
        let sources =
            try values[.storageSourcesURL].map { try store(url: $0, values: values, logger: logger) } ?? avatars
        var limits = ImageLimits()
        limits.maxBytes = try values.integer(.maxImageMB, minimum: 1) * 1024 * 1024
        limits.maxPixels = try values.integer(.maxMegapixels, minimum: 1) * 1_000_000
        var dependencies = CropJobProcessor.Dependencies(
            renderer: AvatarRenderer(limits: limits, logger: logger), sources: sources, avatars: avatars,
            database: database, budget: budget, renderSlots: RenderSlots(width: poolWidth),
            cacheControl: try values.require(.storageCacheControl),
            logger: logger)
        dependencies.maxClockSkew = TimeInterval(try values.integer(.maxClockSkewSeconds, minimum: 0))
        dependencies.maxCrashAttempts = try values.integer(.maxCrashAttempts, minimum: 1)
        dependencies.userLockTimeout = .seconds(try values.integer(.userLockTimeoutSeconds, minimum: 1))
        dependencies.testHooks = testHooks
        dependencies.deleteSource = try sourceDeletion(values)
        let retention = try ledgerRetention(values, client: database)
        let pruneMinutes = try values.integer(.ledgerPruneIntervalMinutes, minimum: 0)
        let processor = CropJobProcessor(dependencies)
        let kafka = try kafkaConfiguration(values)
        var producerConfiguration = kafka
        producerConfiguration.properties["linger.ms"] = producerConfiguration.properties["linger.ms"] ?? "2"
        producerConfiguration.properties["enable.idempotence"] =
            producerConfiguration.properties["enable.idempotence"] ?? "true"
        let publisher = JobEventPublisher(
            producer: try KafkaProducer(configuration: producerConfiguration, logger: logger),
            topics: .init(
                results: try values.require(.topicResults), metrics: try values.require(.topicMetrics),
                dlq: try values.require(.topicDLQ)),
            publicBaseURL: values[.storagePublicBaseURL], logger: logger)
        let health = WorkerHealth()
        let service = try AvatarWorkerService(
            settings: .init(
                topic: try values.require(.topicRequests), groupID: try values.require(.kafkaGroupID),
                kafka: kafka, poolWidth: poolWidth, jobsInFlight: jobsInFlight,
                maxBufferedPerPartition: try values.integer(.maxBufferedPerPartition, minimum: 2),
                drainDeadline: .seconds(try values.integer(.drainSeconds, minimum: 1)),
                commitInterval: .milliseconds(try values.integer(.commitIntervalMS, minimum: 1)),
                jobTimeout: .seconds(try values.integer(.jobTimeoutSeconds, minimum: 1)),
                maxStuckThreads: try values.integer(.maxStuckThreads, minimum: 1)),
            processor: processor, publisher: publisher, health: health, logger: logger)
        return Parts(
            service: service, database: database, avatars: avatars, sources: sources, budget: budget,
            health: health,
            pruner: pruneMinutes == 0
                ? nil : LedgerPruner(retention: retention, interval: .seconds(pruneMinutes * 60), logger: logger))
    }
}
