import CropGeometry
import Imaging

/// Every configuration key the worker reads, in one place, with its default: no other
/// file states a key's default (`ConfigurationValues` falls back to it).
///
/// A key is written `section.name` in a config file or with `--set key=value`, and
/// `AVATAR_SECTION_NAME` in the environment (dots and dashes become underscores).
/// Librdkafka properties pass through as `kafka.property.<librdkafka.name>` or
/// `AVATAR_KAFKA_PROPERTY_<NAME>` (underscores become dots: `..._SASL_MECHANISMS` → `sasl.mechanisms`).
public struct ConfigurationKey: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public let defaultValue: String?
    public let help: String
    /// Secret values (credentials, a database URL with a password) are redacted wherever
    /// swift-configuration reports them.
    public let isSecret: Bool
    /// Former names still read (after this name, in every source), each logged as deprecated at start
    /// (`ConfigurationValues.deprecatedNamesInUse`).
    public let deprecatedNames: [String]

    public init(
        _ name: String, default defaultValue: String? = nil, secret: Bool = false, deprecatedNames: [String] = [],
        _ help: String
    ) {
        self.name = name
        self.defaultValue = defaultValue
        self.isSecret = secret
        self.deprecatedNames = deprecatedNames
        self.help = help
    }

    /// The environment variable for this key.
    public var environmentName: String { Self.environmentName(for: name) }

    public var description: String { name }

    public static func environmentName(for name: String) -> String {
        "AVATAR_" + name.uppercased().map { $0 == "." || $0 == "-" ? "_" : $0 }.map(String.init).joined()
    }

    /// The prefix of librdkafka pass-through properties.
    public static let kafkaPropertyPrefix = "kafka.property."
    static let kafkaPropertyEnvironmentPrefix = "AVATAR_KAFKA_PROPERTY_"
}

extension ConfigurationKey {
    public static let kafkaBrokers = ConfigurationKey(
        "kafka.brokers", default: "127.0.0.1:9092", "Kafka bootstrap servers")
    public static let kafkaGroupID = ConfigurationKey(
        "kafka.group-id", default: "avatar-cropper", "consumer group of the workers")
    public static let topicRequests = ConfigurationKey(
        "kafka.topic.requests", default: "avatar.crop.requests", "crop requests (consumed)")
    public static let topicResults = ConfigurationKey(
        "kafka.topic.results", default: "avatar.crop.results", "one result event per job")
    public static let topicMetrics = ConfigurationKey(
        "kafka.topic.metrics", default: "avatar.crop.metrics", "numeric-only metrics per job")
    public static let topicDLQ = ConfigurationKey(
        "kafka.topic.dlq", default: "avatar.crop.dlq", "failed jobs: original bytes + error headers")

    public static let databaseURL = ConfigurationKey(
        "database.url", secret: true, "Postgres conninfo or postgresql:// URL (required for worker and migrate)")
    public static let databaseTombstoneKey = ConfigurationKey(
        "database.tombstone-key", secret: true,
        "secret of at least \(TombstoneKey.minimumLength) characters (e.g. openssl rand -hex 32): forget tombstones "
            + "are kept as HMAC-SHA256 of the user id under it, never the id (docs/DATA.md, window 8); required "
            + "with database.url, and the same for every worker and command of a database")
    public static let databaseSchema = ConfigurationKey(
        "database.schema", "schema for the worker's tables (search_path); default: the role's")
    public static let databasePoolSize = ConfigurationKey(
        "database.pool-size", "Postgres connections; default: jobs in flight + 1")
    public static let databaseStatementTimeoutMS = ConfigurationKey(
        "database.statement-timeout-ms", default: "30000",
        "Postgres statement_timeout of every worker connection (0 = the server's default)")
    public static let databaseLockTimeoutMS = ConfigurationKey(
        "database.lock-timeout-ms", default: "5000",
        "Postgres lock_timeout of every worker connection (0 = the server's default)")
    public static let migrationsDirectory = ConfigurationKey(
        "database.migrations-dir", default: "migrations",
        "folder of NNNN_name.sql files `migrate` applies")

    public static let storageURL = ConfigurationKey(
        "storage.url", default: "file://./avatars",
        "where avatars are written: file:///dir or s3://bucket?endpoint=https://host&region=r")
    public static let storageSourcesURL = ConfigurationKey(
        "storage.sources-url", "where source photos are read; default: storage.url")
    public static let storagePublicBaseURL = ConfigurationKey(
        "storage.public-base-url", "base of the avatar URL in result events")
    public static let storageAccessKeyID = ConfigurationKey("storage.s3.access-key-id", "S3 access key id")
    public static let storageSecretAccessKey = ConfigurationKey(
        "storage.s3.secret-access-key", secret: true, "S3 secret access key")
    public static let storageCacheControl = ConfigurationKey(
        "storage.cache-control", default: "public, max-age=86400, immutable",
        "Cache-Control of uploaded avatars (URLs carry ?v=version; a day bounds how long caches keep a forgotten "
            + "user's avatar without a purge: docs/DATA.md)")

    public static let storageDeleteSource = ConfigurationKey(
        "storage.delete-source", default: "never",
        "never, or after-success: delete a job's source photo once it is applied, duplicate or superseded, "
            + "delete-source-delay-seconds after the last such job (failed jobs keep it)")
    public static let storageDeleteSourceDelaySeconds = ConfigurationKey(
        "storage.delete-source-delay-seconds", default: "3600",
        "with delete-source=after-success: a source is deleted this long after the last job done with it, so a "
            + "re-crop of the same upload still finds it (a worker sweeps every delay/2, at most every 60 s)")

    public static let ledgerRetentionHours = ConfigurationKey(
        "ledger.retention-hours", default: "336",
        "ledger rows last written longer ago than this are pruned (never the row behind a profile's current "
            + "version; forget tombstones are kept), and so are source deletions the store still refuses this long "
            + "after they were due")
    public static let ledgerPruneIntervalMinutes = ConfigurationKey(
        "ledger.prune-interval-minutes", default: "0",
        "how often a worker prunes the ledger, one worker at a time (0 = never; run `avatar-cropper prune`)")
    public static let ledgerPruneBatch = ConfigurationKey(
        "ledger.prune-batch", default: "1000", "ledger rows deleted per statement when pruning")

    public static let renderSlots = ConfigurationKey(
        "worker.render-slots", deprecatedNames: ["worker.pool-width"],
        "renders at once (one core each; formerly worker.pool-width, still read); default: CPU cores")
    public static let jobsInFlight = ConfigurationKey(
        "worker.jobs-in-flight",
        "jobs held at once: render-slots of them render, the others fetch, upload and commit; "
            + "default: \(jobsPerRender) x render-slots")
    /// `worker.jobs-in-flight`'s default per render slot: a job's upload and commit overlap the next render.
    public static let jobsPerRender = 2
    public static let memoryBudgetMB = ConfigurationKey(
        "worker.memory-budget-mb", default: "1024",
        "memory jobs may reserve for decoding; jobs that do not fit use the thumbnail-resolution fallback")
    public static let maxBufferedPerPartition = ConfigurationKey(
        "worker.max-buffered-per-partition", default: "32",
        "jobs buffered per partition before it is paused (backpressure)")
    public static let drainSeconds = ConfigurationKey(
        "worker.drain-seconds", default: "25",
        "on SIGTERM or revocation, how long in-flight jobs may finish before they are abandoned")
    public static let decodeCores = ConfigurationKey(
        "worker.decode-cores",
        "cores the worker's renders share: each render holds one, and a HEIC/AVIF grid's tiles also decode on "
            + "the idle ones (1 = every render decodes on its own thread alone); default: CPU cores")
    public static let vipsConcurrency = ConfigurationKey(
        "worker.vips-concurrency", default: "1", "libvips threads per render")
    public static let commitIntervalMS = ConfigurationKey(
        "worker.commit-interval-ms", default: "500", "how often finished offsets are committed")
    public static let jobTimeoutSeconds = ConfigurationKey(
        "worker.job-timeout-seconds", default: "60",
        "a job still running past this ends as TIMEOUT (result + DLQ); its render helper is killed")
    public static let maxClockSkewSeconds = ConfigurationKey(
        "worker.max-clock-skew-seconds", default: "300",
        "a request whose requested_at is further in the future is INVALID_REQUEST")
    public static let maxCrashAttempts = ConfigurationKey(
        "worker.max-crash-attempts", default: "2",
        "renders of one job that may die with their worker before the job fails as PROCESSING_FAILED")
    public static let sourceKeyTemplate = ConfigurationKey(
        "worker.source-key-template",
        "prefix every source_key must start with, {user_id} the request's user (e.g. uploads/{user_id}/); "
            + "others are INVALID_REQUEST. Unset: producers are trusted to name only the user's own upload")
    public static let userLockTimeoutSeconds = ConfigurationKey(
        "worker.user-lock-timeout-seconds", default: "30",
        "longest wait for another worker's publication of the same user (then a transient failure)")
    public static let maxRequestAgeHours = ConfigurationKey(
        "worker.max-request-age-hours", default: "0",
        "a crop request whose requested_at is older is SUPERSEDED and publishes nothing, and forget tombstones are "
            + "pruned once that old (docs/DATA.md, window 8); 0: no limit, tombstones kept for good")

    public static let maxImageMB = ConfigurationKey(
        "image.max-mb", default: "\(ImageLimits.defaultMaxMiB)", "largest source photo accepted, in MiB")
    public static let maxMegapixels = ConfigurationKey(
        "image.max-megapixels", default: "\(ImageLimits.defaultMaxMegapixels)",
        "largest source accepted, in megapixels")
    public static let defaultCrop = ConfigurationKey(
        "image.default-crop", default: DefaultCrop.face.rawValue,
        "the square of a request without a pose that does not choose (CropRequest.default_crop): face (on the "
            + "faces found; none: centred) or centre")
    public static let formats = ConfigurationKey(
        "image.formats", default: AvatarFormat.png.rawValue,
        "the avatar's formats for a request that names none (CropRequest.output.formats), comma-separated, the "
            + "first the one avatar_path names: png, jpeg, webp, avif (docs/FORMATS.md)")
    public static let extraFormats = ConfigurationKey(
        "image.extra-formats",
        "the extra sizes' formats for a request that names none (CropRequest.extra_formats), comma-separated; "
            + "default: the avatar's formats")
    public static let webpQuality = ConfigurationKey(
        "image.webp-quality", default: "\(EncoderSettings.defaultWebPQuality)", "WebP quality, 1-100")
    public static let avifQuality = ConfigurationKey(
        "image.avif-quality", default: "\(EncoderSettings.defaultAVIFQuality)", "AVIF (AV1) quality, 1-100")
    public static let avifSpeed = ConfigurationKey(
        "image.avif-speed", default: "\(EncoderSettings.defaultAVIFSpeed)",
        "AV1 encoder speed, 0 (slowest, smallest) to 9 (bench/RESULTS.md, Avatar formats: the default's time and bytes)"
    )
    public static let faceModel = ConfigurationKey(
        "image.face-model",
        "the face detector's model file (YuNet 2023mar; its SHA-256 is checked, a wrong or missing file leaves "
            + "every default crop centred); default: \(FaceModel.fileName) beside the executable or in "
            + "../share/avatar-cropper/")

    public static let httpPort = ConfigurationKey(
        "http.port", default: "8080", "port of /metrics, /healthz, /readyz (0 = off)")
    public static let httpHost = ConfigurationKey(
        "http.host", default: "0.0.0.0", "address the HTTP endpoints listen on")
    public static let logLevel = ConfigurationKey(
        "log.level", default: "info", "trace, debug, info, notice, warning, error")
    public static let logFormat = ConfigurationKey(
        "log.format", "json (one object per line) or text; default: json when stderr is not a terminal, else text")
    public static let tracingEnabled = ConfigurationKey(
        "tracing.enabled",
        "true or false: export traces over OTLP/HTTP; unset: on when OTEL_EXPORTER_OTLP_ENDPOINT (or "
            + "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, unless OTEL_SDK_DISABLED=true")
    public static let tracingEndpoint = ConfigurationKey(
        "tracing.endpoint",
        "the collector's OTLP/HTTP base URL (spans go to <url>/v1/traces); OTEL_EXPORTER_OTLP_ENDPOINT wins; "
            + "unset: http://localhost:4318")
    public static let tracingSampleRatio = ConfigurationKey(
        "tracing.sample-ratio", default: "1",
        "share of new traces sampled, 0 to 1 (a request's traceparent flag is followed); OTEL_TRACES_SAMPLER wins")

    /// Every key, for `--help`, the README and the deploy-file checks.
    public static let all: [ConfigurationKey] = [
        kafkaBrokers, kafkaGroupID, topicRequests, topicResults, topicMetrics, topicDLQ,
        databaseURL, databaseTombstoneKey, databaseSchema, databasePoolSize, databaseStatementTimeoutMS,
        databaseLockTimeoutMS,
        migrationsDirectory,
        storageURL, storageSourcesURL, storagePublicBaseURL, storageAccessKeyID, storageSecretAccessKey,
        storageCacheControl, storageDeleteSource, storageDeleteSourceDelaySeconds,
        ledgerRetentionHours, ledgerPruneIntervalMinutes, ledgerPruneBatch,
        renderSlots, jobsInFlight, memoryBudgetMB, maxBufferedPerPartition, drainSeconds, decodeCores,
        vipsConcurrency,
        commitIntervalMS,
        jobTimeoutSeconds, maxClockSkewSeconds, sourceKeyTemplate, maxCrashAttempts,
        userLockTimeoutSeconds, maxRequestAgeHours,
        maxImageMB, maxMegapixels, defaultCrop, formats, extraFormats, webpQuality, avifQuality, avifSpeed,
        faceModel,
        httpPort, httpHost, logLevel, logFormat,
        tracingEnabled, tracingEndpoint, tracingSampleRatio,
    ]
}
