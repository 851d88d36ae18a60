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

    /// A key that must be at least 1 when set: 0 or less is a configuration error at start,
    /// not a precondition failure deep in the pool or the budget.
    static func positive(_ key: ConfigurationKey, _ values: ConfigurationValues) throws -> Int? {
        guard let value = try values.int(key) else { return nil }
        guard value > 0 else {
            throw ConfigurationValues.Error(description: "\(key.name) must be at least 1, got \(value)")
        }
        return value
    }

    public static func build(_ values: ConfigurationValues, logger: Logger) throws -> Parts {
        let poolWidth = try positive(.poolWidth, values) ?? ProcessInfo.processInfo.activeProcessorCount
        let budgetMB = try positive(.memoryBudgetMB, values) ?? 1024
        try Vips.initialise(concurrency: try values.int(.vipsConcurrency))
        let budget = MemoryBudget(limit: budgetMB * 1024 * 1024)
        let database = PostgresClient(
            configuration: try databaseConfiguration(values),
            maxConnections: try values.int(.databasePoolSize) ?? poolWidth + 1, logger: logger)
        let avatars = try store(url: try values.require(.storageURL), values: values, logger: logger)
        let sources =
            try values[.storageSourcesURL].map { try store(url: $0, values: values, logger: logger) } ?? avatars
        var limits = ImageLimits()
        if let megabytes = try values.int(.maxImageMB) { limits.maxBytes = megabytes * 1024 * 1024 }
        if let megapixels = try values.int(.maxMegapixels) { limits.maxPixels = megapixels * 1_000_000 }
        let processor = CropJobProcessor(
            .init(
                renderer: AvatarRenderer(limits: limits, logger: logger), sources: sources, avatars: avatars,
                database: database, budget: budget, cacheControl: values[.storageCacheControl] ?? "no-cache",
                logger: logger))
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
        // librdkafka statistics feed the consumer-lag gauge and the /readyz consumer check.
        var consumerConfiguration = kafka
        consumerConfiguration.properties["statistics.interval.ms"] =
            consumerConfiguration.properties[
                "statistics.interval.ms"] ?? "\(Int(ConsumerReadiness.defaultStatisticsInterval.seconds * 1000))"
        let health = WorkerHealth()
        let service = try AvatarWorkerService(
            settings: .init(
                topic: try values.require(.topicRequests), groupID: try values.require(.kafkaGroupID),
                kafka: consumerConfiguration,
                poolWidth: poolWidth, maxBufferedPerPartition: try values.int(.maxBufferedPerPartition) ?? 32,
                drainDeadline: .seconds(try values.int(.drainSeconds) ?? 25),
                commitInterval: .milliseconds(try values.int(.commitIntervalMS) ?? 500)),
            processor: processor, publisher: publisher, health: health, logger: logger)
        return Parts(
            service: service, database: database, avatars: avatars, sources: sources, budget: budget,
            health: health)
    }
}
