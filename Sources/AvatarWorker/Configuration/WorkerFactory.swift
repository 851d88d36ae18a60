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

    /// The log level (`log.level`), one of swift-log's.
    public static func logLevel(_ values: ConfigurationValues) throws -> Logger.Level {
        let name = try values.require(.logLevel)
        guard let level = Logger.Level(rawValue: name) else {
            let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
            throw ConfigurationValues.Error(
                description: "\(ConfigurationKey.logLevel.name) must be one of \(levels), got '\(name)'")
        }
        return level
    }

    /// Where the HTTP endpoints listen, or nil when `http.port` is 0.
    public static func httpAddress(_ values: ConfigurationValues) throws -> (host: String, port: Int)? {
        let port = try values.integer(.httpPort)
        guard port != 0 else { return nil }
        guard (1...65535).contains(port) else {
            throw ConfigurationValues.Error(description: "\(ConfigurationKey.httpPort.name) must be 0 to 65535")
        }
        return (try values.require(.httpHost), port)
    }

    /// `testHooks` are for tests only (`JobTestHooks`); by default the environment decides (off in production).
    public static func build(
        _ values: ConfigurationValues, logger: Logger, testHooks: JobTestHooks = .fromEnvironment()
    ) throws -> Parts {
        // Every setting is parsed and range-checked first (a pool width or budget of 0 is a configuration
        // error here, at start, not a precondition failure deep in the pool or the budget).
        let settings = try WorkerSettings(values)
        try Vips.initialise(concurrency: settings.vipsConcurrency)
        let budget = MemoryBudget(limit: settings.memoryBudgetBytes)
        let database = PostgresClient(
            configuration: settings.database, maxConnections: settings.databasePoolSize, logger: logger)
        let avatars = try store(url: settings.avatarsURL, values: values, logger: logger)
        let sources = try settings.sourcesURL.map { try store(url: $0, values: values, logger: logger) } ?? avatars
        var dependencies = CropJobProcessor.Dependencies(
            renderer: AvatarRenderer(limits: settings.limits, logger: logger), sources: sources, avatars: avatars,
            database: database, budget: budget, renderSlots: RenderSlots(width: settings.poolWidth),
            cacheControl: settings.cacheControl,
            logger: logger)
        dependencies.maxClockSkew = settings.maxClockSkew
        dependencies.maxCrashAttempts = settings.maxCrashAttempts
        dependencies.userLockTimeout = settings.userLockTimeout
        dependencies.testHooks = testHooks
        let processor = CropJobProcessor(dependencies)
        var producerConfiguration = settings.service.kafka
        producerConfiguration.properties["linger.ms"] = producerConfiguration.properties["linger.ms"] ?? "2"
        producerConfiguration.properties["enable.idempotence"] =
            producerConfiguration.properties["enable.idempotence"] ?? "true"
        let publisher = JobEventPublisher(
            producer: try KafkaProducer(configuration: producerConfiguration, logger: logger),
            topics: settings.topics, publicBaseURL: settings.publicBaseURL, logger: logger)
        let health = WorkerHealth()
        let service = try AvatarWorkerService(
            settings: settings.service, processor: processor, publisher: publisher, health: health, logger: logger)
        return Parts(
            service: service, database: database, avatars: avatars, sources: sources, budget: budget,
            health: health)
    }
}
