/// Every configuration key the worker reads, in one place (DESIGN §5).
///
/// A key is written `section.name` in a config file or with `--set key=value`, and
/// `AVATAR_SECTION_NAME` in the environment (dots and dashes become underscores).
/// Librdkafka properties pass through as `kafka.property.<librdkafka.name>` or
/// `AVATAR_KAFKA_PROPERTY_<NAME>` (underscores become dots: `..._SASL_MECHANISMS` → `sasl.mechanisms`).
public struct ConfigurationKey: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public let defaultValue: String?
    public let help: String

    public init(_ name: String, default defaultValue: String? = nil, _ help: String) {
        self.name = name
        self.defaultValue = defaultValue
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
        "database.url", "Postgres conninfo or postgresql:// URL (required for worker and migrate)")
    public static let databaseSchema = ConfigurationKey(
        "database.schema", "schema for the worker's tables (search_path); default: the role's")
    public static let databasePoolSize = ConfigurationKey(
        "database.pool-size", "Postgres connections; default: pool width + 1")
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
    public static let storageSecretAccessKey = ConfigurationKey("storage.s3.secret-access-key", "S3 secret access key")
    public static let storageCacheControl = ConfigurationKey(
        "storage.cache-control", default: "public, max-age=31536000, immutable",
        "Cache-Control of uploaded avatars (URLs carry ?v=version)")

    public static let poolWidth = ConfigurationKey("worker.pool-width", "render threads; default: CPU cores")
    public static let memoryBudgetMB = ConfigurationKey(
        "worker.memory-budget-mb", default: "1024",
        "memory jobs may reserve for decoding; jobs that do not fit use the thumbnail-resolution fallback")
    public static let maxBufferedPerPartition = ConfigurationKey(
        "worker.max-buffered-per-partition", default: "32",
        "jobs buffered per partition before it is paused (backpressure)")
    public static let drainSeconds = ConfigurationKey(
        "worker.drain-seconds", default: "25",
        "on SIGTERM or revocation, how long in-flight jobs may finish before they are abandoned")
    public static let vipsConcurrency = ConfigurationKey(
        "worker.vips-concurrency", default: "1", "libvips threads per render")
    public static let commitIntervalMS = ConfigurationKey(
        "worker.commit-interval-ms", default: "500", "how often finished offsets are committed")

    public static let maxImageMB = ConfigurationKey(
        "image.max-mb", default: "40", "largest source photo accepted, in MiB")
    public static let maxMegapixels = ConfigurationKey(
        "image.max-megapixels", default: "100", "largest source accepted, in megapixels")
    public static let outputSize = ConfigurationKey(
        "image.output-size", default: "512", "default avatar side in pixels")

    public static let httpPort = ConfigurationKey(
        "http.port", default: "8080", "port of /metrics, /healthz, /readyz (0 = off)")
    public static let httpHost = ConfigurationKey(
        "http.host", default: "0.0.0.0", "address the HTTP endpoints listen on")
    public static let logLevel = ConfigurationKey(
        "log.level", default: "info", "trace, debug, info, notice, warning, error")

    /// Every key, for `--help`, the README and the deploy-file checks.
    public static let all: [ConfigurationKey] = [
        kafkaBrokers, kafkaGroupID, topicRequests, topicResults, topicMetrics, topicDLQ,
        databaseURL, databaseSchema, databasePoolSize, databaseStatementTimeoutMS, databaseLockTimeoutMS,
        migrationsDirectory,
        storageURL, storageSourcesURL, storagePublicBaseURL, storageAccessKeyID, storageSecretAccessKey,
        storageCacheControl,
        poolWidth, memoryBudgetMB, maxBufferedPerPartition, drainSeconds, vipsConcurrency, commitIntervalMS,
        maxImageMB, maxMegapixels, outputSize,
        httpPort, httpHost, logLevel,
    ]
}
