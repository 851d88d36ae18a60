import AvatarWorker
import CropGeometry
import CropProtocol
import Database
import Foundation
import Logging
import Messaging
import ServiceLifecycle
import Storage
import Synchronization
import TestEnvironment
import Testing

/// Where a harness's worker keeps avatars and reads sources. The suites that prove a promise about what is stored
/// or exported (traces, logs, publication, source deletion) run on both: the local directory, and SeaweedFS over
/// S3 with SigV4 (async-http-client, its connection pool and whatever it does on its own), each test in a bucket
/// of its own.
enum WorkerStore: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case localDirectory = "local directory"
    case s3 = "SeaweedFS (S3)"

    var testDescription: String { rawValue }
}

/// One isolated worker environment on the real services: its own Postgres schema
/// (migrated), its own four topics, its own object store (a local directory, or a SeaweedFS bucket: `WorkerStore`),
/// and a reader of the results, metrics and DLQ topics.
final class WorkerHarness: Sendable {
    let schema: String
    let topics: (requests: String, results: String, metrics: String, dlq: String)
    /// A directory of the harness's own: the local store's root, and a scratch directory on S3.
    let storeRoot: URL
    let store: any ObjectStore
    /// The SeaweedFS bucket, for `WorkerStore.s3`.
    let bucket: S3TestBucket?
    let database: PostgresClient
    let kafka: KafkaConfiguration
    let producer: KafkaProducer
    let events: EventReader
    let logger: Logger
    private let running = Mutex<[(ServiceGroup, Task<Void, Error>)]>([])

    init(partitions: Int32 = 2, store kind: WorkerStore = .localDirectory, denyDelete: String? = nil) throws {
        var logger = Logger(label: "test.worker")
        logger.logLevel =
            TestService.environment("AVATAR_TEST_LOG_LEVEL").flatMap { Logger.Level(rawValue: $0) }
            ?? .warning
        self.logger = logger
        let url = try TestService.database.require()
        let brokers = try TestService.kafka.require()

        schema = WorkerTestSupport.uniqueName("t_worker")
        let admin = try PostgresConnection.connect(DatabaseConfiguration(url: url), logger: logger)
        try admin.query("CREATE SCHEMA \(schema)")
        let migrations = try Migrator.load(directory: TestFiles.url("migrations"))
        let migrating = try PostgresConnection.connect(
            WorkerTestSupport.database(url, schema: schema), logger: logger)
        _ = try Migrator(migrations: migrations, logger: logger).migrate(migrating)
        database = try PostgresClient(
            configuration: WorkerTestSupport.database(url, schema: schema), maxConnections: 2, logger: logger)

        let suffix = UUID().uuidString.prefix(8).lowercased()
        topics = ("t.\(suffix).requests", "t.\(suffix).results", "t.\(suffix).metrics", "t.\(suffix).dlq")
        kafka = KafkaConfiguration(bootstrapServers: brokers, properties: Self.kafkaProperties)
        // With the settings `avatar-cropper topics` creates them with (the results topic compacted).
        try KafkaAdmin.createTopics(
            [topics.requests, topics.results, topics.metrics, topics.dlq], partitions: partitions,
            configs: JobEventPublisher.Topics(
                results: topics.results, metrics: topics.metrics, dlq: topics.dlq
            ).configs,
            configuration: kafka, timeout: .seconds(30))
        producer = try KafkaProducer(configuration: kafka, logger: logger)
        events = try EventReader(kafka: kafka, topics: [topics.results, topics.metrics, topics.dlq], logger: logger)

        storeRoot = FileManager.default.temporaryDirectory.appendingPathComponent(WorkerTestSupport.uniqueName("store"))
        let local = try LocalDirectoryStore(root: storeRoot)
        switch kind {
        case .localDirectory:
            bucket = nil
            store = local
        case .s3:
            let bucket = try S3TestBucket(denyDelete: denyDelete)
            self.bucket = bucket
            store = try bucket.store()
        }
    }

    /// librdkafka settings for every client here, the worker's too: a quick group, and requests the broker leaves
    /// unanswered given up after 10 s instead of 60, then sent again on a new connection. Tansu once left a
    /// producer's requests unanswered for 63 s, longer than a test waits for the record they carried.
    static let kafkaProperties = ["session.timeout.ms": "6000", "socket.timeout.ms": "10000"]

    /// The worker's `storage.url` (and its credentials): this harness's store.
    var storeOverrides: [String] {
        guard let bucket else { return ["storage.url=\(storeRoot.absoluteString)"] }
        return ["storage.url=\(bucket.url)"] + bucket.credentialOverrides
    }

    /// Configuration values for a worker of this environment; `overrides` are `key=value`.
    func values(_ overrides: [String] = []) throws -> ConfigurationValues {
        try ConfigurationValues(
            flags: [
                "kafka.brokers=\(kafka.bootstrapServers)",
                "kafka.topic.requests=\(topics.requests)", "kafka.topic.results=\(topics.results)",
                "kafka.topic.metrics=\(topics.metrics)", "kafka.topic.dlq=\(topics.dlq)",
                "kafka.group-id=\(schema)",
                "database.url=\(TestService.database.value ?? "")", "database.schema=\(schema)",
                "database.tombstone-key=\(TestService.tombstoneKey)",
                "storage.public-base-url=https://cdn.example.test",
                "worker.render-slots=2", "worker.commit-interval-ms=200", "worker.drain-seconds=10", "http.port=0",
            ] + Self.kafkaProperties.sorted { $0.key < $1.key }.map { "kafka.property.\($0.key)=\($0.value)" }
                + storeOverrides + overrides)
    }

    /// This environment's configuration as `AVATAR_*` variables, for running the real binary.
    func processEnvironment() throws -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        let values = try values()
        for key in ConfigurationKey.all {
            if let value = values[key] { environment[key.environmentName] = value }
        }
        for (property, value) in Self.kafkaProperties {
            environment[ConfigurationKey.environmentName(for: ConfigurationKey.kafkaPropertyPrefix + property)] = value
        }
        environment["AVATAR_LOG_LEVEL"] = "warning"
        return environment
    }

    /// Starts an in-process worker; it stops with `stopWorkers()` (graceful shutdown).
    @discardableResult
    func startWorker(_ overrides: [String] = [], testSeams: (any JobTestSeams)? = nil) throws
        -> WorkerFactory.Parts
    {
        let parts = try WorkerFactory.build(
            try values(overrides), logger: logger, helperExecutable: try TestFiles.requireCropperBinary(),
            testSeams: testSeams)
        let group = ServiceGroup(services: [parts.service] + (parts.sourceSweeper.map { [$0] } ?? []), logger: logger)
        let helpers = parts.renderHelpers
        let task = Task {
            defer { helpers.shutdown() }
            try await group.run()
        }
        running.withLock { $0.append((group, task)) }
        return parts
    }

    func stopWorkers() async {
        let groups = running.withLock { all in
            defer { all = [] }; return all
        }
        for (group, task) in groups {
            await group.triggerGracefulShutdown()
            _ = try? await task.value
        }
    }

    /// Copies a test photo (the first of `paths` present, see `WorkerTestSupport.photo`) into the store as
    /// `uploads/NAME` (with `trailer` appended after the image, where decoders ignore it: the test hooks'
    /// markers); returns the key.
    func upload(_ paths: String..., trailer: String = "") throws -> String {
        let file = try WorkerTestSupport.photo(paths)
        let data = try Data(contentsOf: file) + Data(trailer.utf8)
        let key = "uploads/\(UUID().uuidString.lowercased())-\(file.lastPathComponent)"
        try store.put(key, data: Array(data), options: PutOptions(contentType: "application/octet-stream"))
        return key
    }

    /// Puts a request on the requests topic, keyed by user id, as the app would (with `traceParent`, as the app's
    /// traced producer would).
    func enqueue(
        _ request: ValidatedCropRequest, format: CropWireFormat = .protobuf, traceParent: TraceParent? = nil
    ) async throws {
        var headers = [KafkaHeader(key: "content-type", value: Array(format.contentType.utf8))]
        if let traceParent {
            headers.append(KafkaHeader(key: TraceParent.headerName, value: Array(traceParent.header.utf8)))
        }
        try await send(
            try CropCodec.encode(request.message, format: format), key: request.userID.uuidString.lowercased(),
            headers: headers)
    }

    func send(_ value: [UInt8], key: String?, headers: [KafkaHeader] = [], partition: Int32? = nil) async throws {
        _ = try await producer.send(
            KafkaRecord(
                topic: topics.requests, key: key.map { Array($0.utf8) }, value: value, headers: headers,
                partition: partition))
    }

    static func request(
        user: UUID = UUID(), source: String, input: CropInput = .centred, requestedAt: Date = Date(),
        jobID: String = UUID().uuidString.lowercased()
    ) -> ValidatedCropRequest {
        ValidatedCropRequest(jobID: jobID, userID: user, sourceKey: source, input: input, requestedAt: requestedAt)
    }

    /// The profile's avatar version and path.
    func profile(_ user: UUID) throws -> (version: Int64, path: String?)? {
        try database.withConnection { connection in
            let result = try connection.query(
                "SELECT avatar_version, avatar_path FROM profiles WHERE id = $1", [.uuid(user)])
            guard let row = result.rows.first else { return nil }
            return (try row.int("avatar_version") ?? 0, try row.text("avatar_path"))
        }
    }

    /// The ledger row's status of one job (`started`, `succeeded`, `failed`), nil before it has one.
    func ledgerStatus(jobID: String) throws -> String? {
        try database.withConnection { connection in
            try connection.query("SELECT status FROM avatar_crop_jobs WHERE job_id = $1", [.text(jobID)])
                .rows.first?.text("status")
        }
    }

    func ledgerCount(status: String) throws -> Int64 {
        try database.withConnection { connection in
            try connection.query("SELECT count(*) AS n FROM avatar_crop_jobs WHERE status = $1", [.text(status)])
                .rows.first?.int("n") ?? 0
        }
    }

    func tearDown() async {
        await stopWorkers()
        await offPool { [self] in
            events.close()
            producer.close(timeout: .seconds(5))
            database.shutdown()
            if let url = TestService.database.value,
                let admin = try? PostgresConnection.connect(DatabaseConfiguration(url: url), logger: logger)
            {
                _ = try? admin.query("DROP SCHEMA \(schema) CASCADE")
            }
            try? FileManager.default.removeItem(at: storeRoot)
        }
        await store.shutdown()
        await bucket?.remove()
    }
}

/// Reads results, metrics and DLQ records as they arrive: every partition of `topics` from its first record, joining
/// no group, so it reads from the start (no group join to wait for: the test broker once held one up for more than
/// a minute).
final class EventReader: KafkaConsumerDelegate, Sendable {
    private let consumer: KafkaConsumer
    private let received = Mutex<[KafkaMessage]>([])

    init(kafka: KafkaConfiguration, topics: [String], logger: Logger) throws {
        let start = try KafkaAdmin.startOfEveryPartition(of: topics, configuration: kafka, timeout: .seconds(30))
        consumer = try KafkaConsumer(
            configuration: kafka, reading: start, groupID: WorkerTestSupport.uniqueName("reader"), logger: logger)
        consumer.run(delegate: self)
    }

    func close() { consumer.close() }

    func messages(on topic: String) -> [KafkaMessage] { received.withLock { $0.filter { $0.topic == topic } } }

    /// Results of the given jobs, in arrival order, waiting until each has at least `count` (or the timeout).
    func results(_ topic: String, jobs: [String], count: Int = 1, timeout: Duration = .seconds(90)) async throws
        -> [Avatar_Crop_V1_CropResult]
    {
        let deadline = ContinuousClock.now + timeout
        while true {
            let all = messages(on: topic).compactMap {
                try? CropCodec.decode(Avatar_Crop_V1_CropResult.self, from: $0.value, format: .protobuf)
            }
            let seen = Dictionary(all.map { ($0.jobID, 1) }, uniquingKeysWith: +)
            if jobs.allSatisfy({ seen[$0, default: 0] >= count }) { return all.filter { jobs.contains($0.jobID) } }
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out waiting for results of \(jobs.filter { seen[$0, default: 0] < count })")
                return all.filter { jobs.contains($0.jobID) }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Waits until `topic` holds at least `count` records.
    func waitFor(_ topic: String, count: Int, timeout: Duration = .seconds(60)) async throws -> [KafkaMessage] {
        let deadline = ContinuousClock.now + timeout
        while messages(on: topic).count < count && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        return messages(on: topic)
    }

    func consumer(_ c: KafkaConsumer, received message: KafkaMessage) { received.withLock { $0.append(message) } }
    func consumer(_ c: KafkaConsumer, assigned: [TopicPartition]) {}
    func consumer(_ c: KafkaConsumer, revoking: [TopicPartition]) -> [TopicPartition: Int64] { [:] }
}

/// Runs `body` with a fresh harness and always tears it down.
func withHarness(
    partitions: Int32 = 2, store: WorkerStore = .localDirectory, denyDelete: String? = nil,
    _ body: (WorkerHarness) async throws -> Void
) async throws {
    // Its setup (a schema migrated over libpq, topics created, a bucket) blocks: on a thread of its own (`offPool`).
    let harness = try await offPool { try WorkerHarness(partitions: partitions, store: store, denyDelete: denyDelete) }
    do {
        try await body(harness)
    } catch {
        await harness.tearDown()
        throw error
    }
    await harness.tearDown()
}
