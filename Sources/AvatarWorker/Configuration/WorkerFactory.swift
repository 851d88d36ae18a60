import CropGeometry
import CropProtocol
import Database
import Foundation
import Imaging
import Logging
import Messaging
import Metrics
import RenderHelpers
import Sandbox
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
        /// The render helpers; `shutdown()` once the service has drained.
        public var renderHelpers: RenderHelperPool
        /// The scheduled ledger prune, when `ledger.prune-interval-minutes` is above 0.
        public var pruner: LedgerPruner?
        /// The deletion of sources whose time has come, with `storage.delete-source = after-success`.
        public var sourceSweeper: SourceDeletionSweeper?
        /// Runs the forgets that did not complete again until they do (every worker).
        public var forgetSweeper: ForgetSweeper
        /// `worker.source-key-template`, for `/readyz`'s source-deletion check.
        public var sourceKeyTemplate: SourceKeyTemplate?
        /// Why the face model cannot be used (nil: loaded), for `/readyz`'s face-model check.
        public var faceModelProblem: FaceDetectionError? = nil
    }

    /// The ledger's retention settings (`ledger.*`), for the worker's pruner and `avatar-cropper prune`.
    public static func ledgerRetention(_ values: ConfigurationValues, client: PostgresClient) throws -> LedgerRetention
    {
        LedgerRetention(
            client: client, retention: try retentionPeriod(values),
            batchSize: try values.integer(.ledgerPruneBatch, minimum: 1))
    }

    /// `ledger.retention-hours`.
    public static func retentionPeriod(_ values: ConfigurationValues) throws -> Duration {
        .seconds(try values.integer(.ledgerRetentionHours, minimum: 0) * 3600)
    }

    /// The topics the worker's events go to (`kafka.topic.results`, `kafka.topic.metrics`, `kafka.topic.dlq`).
    public static func eventTopics(_ values: ConfigurationValues) throws -> JobEventPublisher.Topics {
        JobEventPublisher.Topics(
            results: try values.require(.topicResults), metrics: try values.require(.topicMetrics),
            dlq: try values.require(.topicDLQ))
    }

    /// `storage.delete-source`.
    public static func sourceDeletion(_ values: ConfigurationValues) throws -> SourceDeletion {
        try choice(values, .storageDeleteSource)
    }

    /// `image.default-crop`.
    public static func defaultCrop(_ values: ConfigurationValues) throws -> DefaultCrop {
        try choice(values, .defaultCrop)
    }

    /// `image.formats` and `image.extra-formats` (nil when unset or empty: the avatar's).
    public static func formats(_ values: ConfigurationValues) throws -> (
        avatar: [AvatarFormat], extras: [AvatarFormat]?
    ) {
        func list(_ key: ConfigurationKey) throws -> [AvatarFormat]? {
            guard let text = values[key], !text.isEmpty else { return nil }
            switch RenditionFormats.parse(text) {
            case .success(let formats): return formats
            case .failure(let error): throw ConfigurationValues.Error(description: "\(key.name): \(error)")
            }
        }
        guard let avatar = try list(.formats) else {
            throw ConfigurationValues.Error(description: "\(ConfigurationKey.formats.name) must name a format")
        }
        return (avatar, try list(.extraFormats))
    }

    /// `image.webp-quality`, `image.avif-quality`, `image.avif-speed`.
    public static func encoderSettings(_ values: ConfigurationValues) throws -> EncoderSettings {
        func value(_ key: ConfigurationKey, _ range: ClosedRange<Int>) throws -> Int {
            let number = try values.integer(key, minimum: range.lowerBound)
            guard number <= range.upperBound else {
                throw ConfigurationValues.Error(
                    description: "\(key.name) must be \(range.lowerBound)-\(range.upperBound), got \(number)")
            }
            return number
        }
        return EncoderSettings(
            webpQuality: try value(.webpQuality, EncoderSettings.qualities),
            avifQuality: try value(.avifQuality, EncoderSettings.qualities),
            avifSpeed: try value(.avifSpeed, EncoderSettings.avifSpeeds))
    }

    /// A key whose value names one of `Choice`'s cases; anything else is an error listing them.
    static func choice<Choice: RawRepresentable & CaseIterable>(
        _ values: ConfigurationValues, _ key: ConfigurationKey
    ) throws -> Choice where Choice.RawValue == String {
        let name = try values.require(key)
        guard let choice = Choice(rawValue: name) else {
            throw ConfigurationValues.Error(
                description: "\(key.name) must be one of "
                    + Choice.allCases.map(\.rawValue).joined(separator: ", ") + ", got \(name)")
        }
        return choice
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
        // worker.max-request-age-hours, read by avatar_forgotten and the prune in the database (migration 0011):
        // every connection of the worker and of the commands carries it.
        let maxAge = try values.integer(.maxRequestAgeHours, minimum: 0)
        if maxAge > 0 { configuration.sessionSettings[LedgerRetention.maxRequestAgeSetting] = "\(maxAge) hours" }
        try TombstoneKey.apply(try values.require(.databaseTombstoneKey), to: &configuration)
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

    /// docs/DATA.md, window 1: a bucket with Object Lock may keep what a forget deletes, so the worker refuses it,
    /// and so it does when it may not ask (`s3:GetBucketVersioning`); a bucket that keeps versions is forgotten
    /// version by version. An unreachable store is asked again at its first forget or publication.
    static func checkVersioning(_ store: any ObjectStore, logger: Logger) throws {
        let versioning: BucketVersioning
        do {
            versioning = try store.versioning()
        } catch let error where error.isTransient {
            logger.warning("could not ask the bucket whether it keeps versions", metadata: [LogKey.error: "\(error)"])
            return
        } catch {
            throw ConfigurationValues.Error(
                description: "cannot ask the bucket whether it keeps versions (\(error)); the worker needs "
                    + "s3:GetBucketVersioning and s3:GetBucketObjectLockConfiguration (docs/OPERATIONS.md)")
        }
        if versioning.objectLock {
            throw ConfigurationValues.Error(
                description: "the bucket has Object Lock: a forget could not delete every version of a user's "
                    + "objects (docs/DATA.md); use a bucket without it")
        }
        if versioning.keepsVersions {
            logger.info("the bucket keeps versions: forgets and publications delete old versions too")
        }
    }

    /// Renders at once (`worker.render-slots`, default: the cores) and jobs at once (`worker.jobs-in-flight`,
    /// default: `ConfigurationKey.jobsPerRender` per render).
    public static func concurrency(
        _ values: ConfigurationValues, cores: Int = ProcessInfo.processInfo.activeProcessorCount
    ) throws -> (renderSlots: Int, jobsInFlight: Int) {
        let renderSlots = try values.int(.renderSlots, minimum: 1) ?? cores
        let jobsInFlight = try values.int(.jobsInFlight, minimum: 1) ?? ConfigurationKey.jobsPerRender * renderSlots
        guard jobsInFlight >= renderSlots else {
            throw ConfigurationValues.Error(
                description:
                    "\(ConfigurationKey.jobsInFlight.name) must be at least \(ConfigurationKey.renderSlots.name) (\(renderSlots)), "
                    + "got \(jobsInFlight): every render is a job in flight")
        }
        return (renderSlots, jobsInFlight)
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

    /// `helperExecutable` is the binary whose `render-helper` subcommand the render helpers run: the worker's own
    /// (`RenderHelperPool.Launch.ownExecutable`), or for in-process test workers the built `avatar-cropper`.
    /// `testSeams` are for tests only (`JobTestSeams`): none unless the caller passes them.
    public static func build(
        _ values: ConfigurationValues, logger: Logger, helperExecutable: String, testSeams: (any JobTestSeams)? = nil
    ) throws -> Parts {
        // Every setting is parsed and range-checked first (zero render slots or a budget of 0 is a configuration
        // error here, at start, not a precondition failure deep in the pool or the budget).
        let settings = try WorkerSettings(values)
        for (deprecated, key) in values.deprecatedNamesInUse {
            logger.warning(
                "deprecated configuration key: use \(key.name) (environment \(key.environmentName))",
                metadata: [LogKey.deprecatedKey: "\(deprecated)"])
        }
        BuildInfo.current.record()
        // Configured: its environment holds the storage and database secrets. No process of its uid (a render helper
        // taken over by an upload) may read them through /proc or ptrace (docs/SECURITY.md).
        try ProcessLockdown.protectSecrets()
        try Vips.initialise(concurrency: settings.vipsConcurrency)
        let faceModelProblem = FaceModelCheck.run(path: settings.faceModel, logger: logger)
        let budget = MemoryBudget(limit: settings.memoryBudgetBytes)
        // One helper per render slot and a warm spare (docs/ARCHITECTURE.md §3, "Render helpers").
        let helpers = try RenderHelperPool(
            launch: .init(
                executable: helperExecutable, vipsConcurrency: settings.vipsConcurrency, faceModel: settings.faceModel,
                cores: try DecodeCores(count: settings.decodeCores)),
            size: settings.renderSlots + 1,
            addressSpaceCeiling: settings.memoryBudgetBytes + 2 * settings.limits.maxBytes, logger: logger,
            onDeath: { signal in
                Counter(
                    label: MetricName.renderHelperDeaths,
                    dimensions: [("signal", signal.map(RenderHelperCrash.name(of:)) ?? "exit")]
                ).increment()
            },
            onRefusedReply: {
                Counter(label: MetricName.renderHelperDeaths, dimensions: [("signal", MetricName.refusedReply)])
                    .increment()
            })
        let database = PostgresClient(
            configuration: settings.database, maxConnections: settings.databasePoolSize, logger: logger)
        let avatars = try store(url: settings.avatarsURL, values: values, logger: logger)
        let sources = try settings.sourcesURL.map { try store(url: $0, values: values, logger: logger) } ?? avatars
        try checkVersioning(avatars, logger: logger)
        if settings.sourcesURL != nil { try checkVersioning(sources, logger: logger) }
        var dependencies = CropJobProcessor.Dependencies(
            limits: settings.limits, renders: .helpers(helpers),
            sources: sources, avatars: avatars,
            database: database, budget: budget, renderSlots: RenderSlots(width: settings.renderSlots),
            cacheControl: settings.cacheControl, maxClockSkew: settings.maxClockSkew,
            maxCrashAttempts: settings.maxCrashAttempts, userLockTimeout: settings.userLockTimeout, logger: logger)
        dependencies.testSeams = testSeams
        dependencies.sourceKeyTemplate = settings.sourceKeyTemplate
        dependencies.deleteSource = settings.deleteSource
        dependencies.sourceDeletionDelay = settings.deleteSourceDelay
        dependencies.defaultCrop = settings.defaultCrop
        (dependencies.formats, dependencies.extraFormats) = settings.formats
        dependencies.encoder = settings.encoder
        let processor = CropJobProcessor(dependencies)
        var producerConfiguration = settings.service.kafka
        producerConfiguration.properties["linger.ms"] = producerConfiguration.properties["linger.ms"] ?? "2"
        producerConfiguration.properties["enable.idempotence"] =
            producerConfiguration.properties["enable.idempotence"] ?? "true"
        let producer = try KafkaProducer(configuration: producerConfiguration, logger: logger)
        let publisher = JobEventPublisher(
            producer: producer, topics: settings.topics, publicBaseURL: settings.publicBaseURL)
        let service = try AvatarWorkerService(
            settings: settings.service, processor: processor, publisher: publisher, logger: logger)
        return Parts(
            service: service, database: database, avatars: avatars, sources: sources, budget: budget,
            renderHelpers: helpers,
            pruner: settings.ledgerPruneInterval.map { interval in
                LedgerPruner(
                    retention: LedgerRetention(
                        client: database, retention: settings.ledgerRetention, batchSize: settings.ledgerPruneBatch),
                    interval: interval, logger: logger)
            },
            sourceSweeper: settings.deleteSource == .afterSuccess
                ? SourceDeletionSweeper(
                    queue: SourceDeletionQueue(client: database, sources: sources, delay: settings.deleteSourceDelay),
                    logger: logger) : nil,
            forgetSweeper: ForgetSweeper(
                forgetting: UserForgetting(
                    database: database, avatars: avatars, lockTimeout: settings.userLockTimeout,
                    clockSkew: settings.maxClockSkew, sources: sources,
                    results: ResultsErasure(producer: producer, topic: settings.topics.results), logger: logger),
                logger: logger),
            sourceKeyTemplate: settings.sourceKeyTemplate, faceModelProblem: faceModelProblem)
    }
}
