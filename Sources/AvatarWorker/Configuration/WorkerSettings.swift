import CropGeometry
import CropProtocol
import Database
import Foundation
import Imaging
import Logging
import Messaging
import Storage

/// Every setting `worker` reads, parsed and range-checked without touching the network or the disk, so that
/// `WorkerFactory.build` and `config --check` read configuration the same way. A bad configuration is
/// refused with every problem at once, not one per restart.
public struct WorkerSettings: Sendable {
    public var renderSlots: Int
    public var jobsInFlight: Int
    /// `worker.decode-cores`.
    public var decodeCores: Int
    public var vipsConcurrency: Int
    public var memoryBudgetBytes: Int
    public var databasePoolSize: Int
    public var database: DatabaseConfiguration
    public var avatarsURL: String
    public var sourcesURL: String?
    public var limits: ImageLimits
    /// `image.default-crop` and `image.face-model` (resolved: the installed model without the key).
    public var defaultCrop: DefaultCrop
    public var faceModel: String
    /// `image.formats` and `image.extra-formats` (nil: the avatar's).
    public var formats: (avatar: [AvatarFormat], extras: [AvatarFormat]?)
    /// `image.webp-quality`, `image.avif-quality`, `image.avif-speed`.
    public var encoder: EncoderSettings
    public var cacheControl: String
    /// `storage.delete-source`.
    public var deleteSource: SourceDeletion
    /// `storage.delete-source-delay-seconds`.
    public var deleteSourceDelay: Duration
    /// `ledger.retention-hours` and `ledger.prune-batch`, for the scheduled prune.
    public var ledgerRetention: Duration
    public var ledgerPruneBatch: Int
    /// `ledger.prune-interval-minutes`: nil when 0 (this worker never prunes).
    public var ledgerPruneInterval: Duration?
    public var maxClockSkew: TimeInterval
    /// `worker.source-key-template`: nil when unset (producers are trusted; docs/ARCHITECTURE.md §7).
    public var sourceKeyTemplate: SourceKeyTemplate?
    public var maxCrashAttempts: Int
    public var userLockTimeout: Duration
    public var topics: JobEventPublisher.Topics
    public var publicBaseURL: String?
    public var service: AvatarWorkerService.Settings
    public var logLevel: Logger.Level
    /// The HTTP endpoints' address, or nil when `http.port` is 0.
    public var http: (host: String, port: Int)?

    /// Keys `worker` cannot start without (and `config` marks required).
    public static let required: [ConfigurationKey] = [.databaseURL]

    public init(_ values: ConfigurationValues, cores: Int = ProcessInfo.processInfo.activeProcessorCount) throws {
        let problems = Problems()
        func read<T>(_ parse: () throws -> T) -> T? {
            do {
                return try parse()
            } catch {
                // database.url's requirement is found twice (the required keys, the database settings).
                if !problems.list.contains("\(error)") { problems.list.append("\(error)") }
                return nil
            }
        }
        for key in Self.required { _ = read { try values.require(key) } }
        let concurrency = read { try WorkerFactory.concurrency(values, cores: cores) }
        let decodeCores = read { try values.int(.decodeCores, minimum: 1) ?? cores }
        let vipsConcurrency = read { try values.integer(.vipsConcurrency, minimum: 1) }
        let memoryBudgetMB = read { try values.integer(.memoryBudgetMB, minimum: 1) }
        let databasePoolSize = read { try values.int(.databasePoolSize, minimum: 1) }
        let database = read { try WorkerFactory.databaseConfiguration(values) }
        // libpq would refuse this URL at the first connect; say why now.
        if let problem = database?.connectionProblem() { problems.list.append(problem) }
        let avatarsURL = read { try values.require(.storageURL) }
        let maxImageMB = read { try values.integer(.maxImageMB, minimum: 1) }
        let maxMegapixels = read { try values.integer(.maxMegapixels, minimum: 1) }
        let cacheControl = read { try values.require(.storageCacheControl) }
        let defaultCrop = read { try WorkerFactory.defaultCrop(values) }
        let formats = read { try WorkerFactory.formats(values) }
        let encoder = read { try WorkerFactory.encoderSettings(values) }
        let deleteSource = read { try WorkerFactory.sourceDeletion(values) }
        let deleteSourceDelay = read { try values.integer(.storageDeleteSourceDelaySeconds, minimum: 0) }
        let ledgerRetention = read { try WorkerFactory.retentionPeriod(values) }
        let ledgerPruneBatch = read { try values.integer(.ledgerPruneBatch, minimum: 1) }
        let ledgerPruneMinutes = read { try values.integer(.ledgerPruneIntervalMinutes, minimum: 0) }
        let maxClockSkew = read { try values.integer(.maxClockSkewSeconds, minimum: 0) }
        let sourceKeyTemplate = read {
            try values[.sourceKeyTemplate].map { text in
                do { return try SourceKeyTemplate(text) } catch {
                    throw ConfigurationValues.Error(
                        description: "\(ConfigurationKey.sourceKeyTemplate.name): \(error)")
                }
            }
        }
        let maxCrashAttempts = read { try values.integer(.maxCrashAttempts, minimum: 1) }
        let userLockTimeout = read { try values.integer(.userLockTimeoutSeconds, minimum: 1) }
        let kafka = read { try WorkerFactory.kafkaConfiguration(values) }
        let topics = read { try WorkerFactory.eventTopics(values) }
        let requests = read { try values.require(.topicRequests) }
        let groupID = read { try values.require(.kafkaGroupID) }
        let maxBuffered = read { try values.integer(.maxBufferedPerPartition, minimum: 2) }
        let drainSeconds = read { try values.integer(.drainSeconds, minimum: 1) }
        let commitMS = read { try values.integer(.commitIntervalMS, minimum: 1) }
        let jobTimeout = read { try values.integer(.jobTimeoutSeconds, minimum: 1) }
        let logLevel = read { try WorkerFactory.logLevel(values) }
        _ = read { try LogFormat.configured(values) }
        let http = read { try WorkerFactory.httpAddress(values) }
        guard problems.list.isEmpty, let concurrency, let decodeCores, let vipsConcurrency, let memoryBudgetMB,
            let databasePoolSize, let database, let avatarsURL, let maxImageMB,
            let maxMegapixels, let cacheControl, let defaultCrop, let formats, let encoder, let deleteSource,
            let deleteSourceDelay,
            let ledgerRetention,
            let ledgerPruneBatch,
            let ledgerPruneMinutes, let maxClockSkew, let maxCrashAttempts, let userLockTimeout,
            let kafka, let topics, let requests, let groupID, let maxBuffered, let drainSeconds, let commitMS,
            let jobTimeout, let logLevel, let http
        else {
            throw ConfigurationValues.Error(description: problems.list.joined(separator: "\n"))
        }
        renderSlots = concurrency.renderSlots
        jobsInFlight = concurrency.jobsInFlight
        self.decodeCores = decodeCores
        self.vipsConcurrency = vipsConcurrency
        memoryBudgetBytes = memoryBudgetMB * 1024 * 1024
        self.databasePoolSize = databasePoolSize ?? concurrency.jobsInFlight + 1
        self.database = database
        self.avatarsURL = avatarsURL
        sourcesURL = values[.storageSourcesURL]
        limits = ImageLimits()
        limits.maxBytes = maxImageMB * 1024 * 1024
        limits.maxPixels = maxMegapixels * 1_000_000
        self.cacheControl = cacheControl
        self.defaultCrop = defaultCrop
        self.formats = formats
        self.encoder = encoder
        faceModel = values[.faceModel] ?? FaceModel.defaultPath()
        self.deleteSource = deleteSource
        self.deleteSourceDelay = .seconds(deleteSourceDelay)
        self.ledgerRetention = ledgerRetention
        self.ledgerPruneBatch = ledgerPruneBatch
        ledgerPruneInterval = ledgerPruneMinutes == 0 ? nil : .seconds(ledgerPruneMinutes * 60)
        self.maxClockSkew = TimeInterval(maxClockSkew)
        self.sourceKeyTemplate = sourceKeyTemplate ?? nil
        self.maxCrashAttempts = maxCrashAttempts
        self.userLockTimeout = .seconds(userLockTimeout)
        self.topics = topics
        publicBaseURL = values[.storagePublicBaseURL]
        service = AvatarWorkerService.Settings(
            topic: requests, groupID: groupID, kafka: kafka, renderSlots: concurrency.renderSlots,
            jobsInFlight: concurrency.jobsInFlight, maxBufferedPerPartition: maxBuffered,
            drainDeadline: .seconds(drainSeconds), commitInterval: .milliseconds(commitMS),
            jobTimeout: .seconds(jobTimeout))
        self.logLevel = logLevel
        self.http = http
    }

    /// Collects problems from the nested `read` (a class, so the closure can append without `inout`).
    private final class Problems {
        var list: [String] = []
    }
}
