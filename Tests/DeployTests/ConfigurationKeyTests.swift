import AvatarWorker
import Foundation
import Testing

@Suite("Every configuration key the deploy files set is one the worker reads")
struct ConfigurationKeyTests {
    /// The settings of every deploy file, read structurally: Dockerfile ENV/CMD, compose environments and
    /// commands, Kubernetes env lists and args, ConfigMap config files, and any standalone *.conf file.
    static func deploySettings() throws -> [ConfigurationSetting] {
        var settings = ConfigurationAudit.dockerfileSettings(try Deploy.dockerfile(), source: Deploy.dockerfilePath)
        settings += ConfigurationAudit.yamlSettings(try Deploy.compose(), source: Deploy.composePath)
        for object in try Deploy.kubernetesObjects() {
            settings += ConfigurationAudit.yamlSettings(object.object, source: "\(object.file) \(object.kind)")
        }
        for file in Repo.files(under: "deploy") where file.hasSuffix(".conf") {
            settings += ConfigurationAudit.fileSettings(try Repo.text(file), source: file)
        }
        return settings
    }

    @Test("the structured readers find the settings of every file, and each one is known")
    func structuredSettings() throws {
        let settings = try Self.deploySettings()
        func count(_ prefix: String, _ form: ConfigurationSetting.Form) -> Int {
            settings.filter { $0.source.hasPrefix(prefix) && $0.form == form }.count
        }
        // The readers really read each kind of file (a reader that finds nothing would pass vacuously).
        #expect(count(Deploy.dockerfilePath, .environment) >= 1)
        #expect(count(Deploy.composePath, .environment) >= 15)
        #expect(count(Deploy.kubernetesFolder + "/configmap.yaml", .file) >= 20)
        #expect(count(Deploy.kubernetesFolder + "/deployment.yaml", .environment) >= 2)
        #expect(count(Deploy.kubernetesFolder + "/migrate-job.yaml", .environment) >= 2)
        let problems = ConfigurationAudit.problems(settings)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test("every AVATAR_* name and kafka.property.* key mentioned anywhere under deploy/ is known")
    func mentionedSettings() throws {
        var settings: [ConfigurationSetting] = []
        var read = 0
        for file in Repo.files(under: "deploy") {
            guard let text = try? Repo.text(file) else { continue }
            settings += ConfigurationAudit.mentionedSettings(text, source: file)
            read += 1
        }
        #expect(read >= 15)
        #expect(settings.count >= 40)
        let problems = ConfigurationAudit.problems(settings)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test("the values parse as the worker parses them", arguments: ["compose", "kubernetes"])
    func valuesParse(stack: String) throws {
        let values = try stack == "compose" ? Deploy.composeWorkerConfiguration() : Deploy.kubernetesConfiguration()
        let whole: [ConfigurationKey] = [
            .poolWidth, .memoryBudgetMB, .maxBufferedPerPartition, .drainSeconds, .vipsConcurrency,
            .commitIntervalMS, .maxImageMB, .maxMegapixels, .httpPort, .databasePoolSize,
        ]
        for key in whole {
            _ = try values.int(key)
        }
        #expect(try values.int(.poolWidth) != nil, "set worker.pool-width: the default is the node's core count")
        #expect(values[.storageURL]?.hasPrefix("s3://") == true, "containers keep no avatars on local disk")
        let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
        #expect(levels.contains(values[.logLevel] ?? "info"), "log.level must be one of swift-log's levels")
        _ = try WorkerFactory.kafkaConfiguration(values)
    }

    @Test("every allow-listed librdkafka property survives the worker's environment mapping")
    func allowList() throws {
        for property in ConfigurationAudit.librdkafkaProperties {
            #expect(ConfigurationValues.isKnown(ConfigurationKey.kafkaPropertyPrefix + property))
            // AVATAR_KAFKA_PROPERTY_<NAME>: underscores become dots, so a property with an underscore could
            // not be set from the environment.
            #expect(!property.contains("_"), "\(property)")
            let name = "AVATAR_KAFKA_PROPERTY_" + property.uppercased().replacingOccurrences(of: ".", with: "_")
            let values = try ConfigurationValues(environment: [name: "x"])
            #expect(values.kafkaProperties[property] == "x", "\(name) does not reach \(property)")
        }
    }

    @Test("every configuration key's environment name reaches that key")
    func environmentNames() throws {
        #expect(ConfigurationKey.all.count >= 20)
        for key in ConfigurationKey.all {
            let values = try ConfigurationValues(environment: [key.environmentName: "7"])
            #expect(values[key] == "7", "\(key.environmentName)")
            #expect(ConfigurationAudit.problem(.init(name: key.environmentName, form: .environment, source: "")) == nil)
            #expect(ConfigurationAudit.problem(.init(name: key.name, form: .file, source: "")) == nil)
        }
    }

    @Test("no source file restates a default that ConfigurationKey states")
    func defaultsStatedOnce() throws {
        let declarations = try Repo.text("Sources/AvatarWorker/Configuration/ConfigurationKey.swift")
        // `static let memoryBudgetMB = ConfigurationKey(\n "worker.memory-budget-mb", default: "1024", ...`
        let declared = try Regex(#"static let (\w+) = ConfigurationKey\(\s*"[^"]+",\s*default:"#)
        let members = declarations.matches(of: declared).map { String($0.output[1].substring ?? "") }
        #expect(members.count >= 15, "the declarations were not found: \(members)")
        var restated: [String] = []
        for file in Repo.files(under: "Sources") where file.hasSuffix(".swift") {
            for (number, line) in try Repo.text(file).split(separator: "\n").enumerated() where line.contains("??") {
                for member in members where line.contains("(.\(member))") || line.contains("[.\(member)]") {
                    restated.append("\(file):\(number + 1): \(member)")
                }
            }
        }
        #expect(restated.isEmpty, "read these with values.integer / values.require: the key has a default")
    }

    // MARK: The audit can fail

    struct Fixture: Sendable, CustomTestStringConvertible {
        enum Kind: Sendable { case yaml, dockerfile, configFile }
        var kind: Kind
        var text: String
        /// The one name the audit must reject; every other setting in the text is valid.
        var bad: String
        var testDescription: String { bad }

        func settings() throws -> [ConfigurationSetting] {
            switch kind {
            case .yaml:
                return try YAMLFile.documents(text: text).flatMap {
                    ConfigurationAudit.yamlSettings($0, source: "fixture")
                }
            case .dockerfile:
                return ConfigurationAudit.dockerfileSettings(Dockerfile(text: text), source: "fixture")
            case .configFile:
                return ConfigurationAudit.fileSettings(text, source: "fixture")
            }
        }
    }

    static let badFixtures: [Fixture] = [
        // compose, mapping form: the _MB suffix is missing.
        Fixture(
            kind: .yaml,
            text: """
                services:
                  worker:
                    environment:
                      AVATAR_KAFKA_BROKERS: kafka:9092
                      AVATAR_WORKER_MEMORY_BUDGET: "512"
                """, bad: "AVATAR_WORKER_MEMORY_BUDGET"),
        // compose, list form.
        Fixture(
            kind: .yaml,
            text: """
                services:
                  worker:
                    environment:
                      - AVATAR_LOG_LEVEL=info
                      - AVATAR_HTTP_PORTS=9000
                """, bad: "AVATAR_HTTP_PORTS"),
        // Kubernetes env: a misspelt librdkafka property.
        Fixture(
            kind: .yaml,
            text: """
                apiVersion: apps/v1
                kind: Deployment
                spec:
                  template:
                    spec:
                      containers:
                        - name: worker
                          env:
                            - name: AVATAR_CONFIG
                              value: /etc/avatar-cropper/avatar-cropper.conf
                            - name: AVATAR_KAFKA_PROPERTY_SASL_PASWORD
                              valueFrom:
                                secretKeyRef: {name: avatar-cropper, key: kafka-sasl-password}
                """, bad: "AVATAR_KAFKA_PROPERTY_SASL_PASWORD"),
        // A ConfigMap's config file: a key that does not exist.
        Fixture(
            kind: .yaml,
            text: """
                apiVersion: v1
                kind: ConfigMap
                data:
                  avatar-cropper.conf: |
                    # comment
                    worker.pool-width = 2
                    worker.pool-size = 2
                """, bad: "worker.pool-size"),
        // A ConfigMap's config file: a librdkafka property that is not a real one.
        Fixture(
            kind: .yaml,
            text: """
                apiVersion: v1
                kind: ConfigMap
                data:
                  worker.conf: |
                    kafka.property.security.protocol = SASL_SSL
                    kafka.property.bootstrap.server = broker:9092
                """, bad: "kafka.property.bootstrap.server"),
        // Kubernetes args with --set.
        Fixture(
            kind: .yaml,
            text: """
                apiVersion: batch/v1
                kind: Job
                spec:
                  template:
                    spec:
                      containers:
                        - name: worker
                          args: ["worker", "--set", "log.level=debug", "--set", "image.max-megabytes=30"]
                """, bad: "image.max-megabytes"),
        // A compose command string with --set=.
        Fixture(
            kind: .yaml,
            text: """
                services:
                  worker:
                    command: worker --set=log.levels=debug --set=http.port=8081
                """, bad: "log.levels"),
        // A Dockerfile ENV.
        Fixture(
            kind: .dockerfile,
            text: """
                FROM debian:bookworm-slim
                ENV AVATAR_DATABASE_MIGRATIONS_DIR=/app/migrations AVATAR_STORAGE_BUCKET="avatars"
                CMD ["worker"]
                """, bad: "AVATAR_STORAGE_BUCKET"),
        // A standalone config file.
        Fixture(
            kind: .configFile, text: "storage.url = s3://avatars\nstorage.bucket = avatars\n",
            bad: "storage.bucket"),
    ]

    @Test("the audit rejects a key the worker does not read, and only that one", arguments: badFixtures)
    func rejectsUnknownKeys(fixture: Fixture) throws {
        let settings = try fixture.settings()
        #expect(settings.count >= 2, "the fixture's settings were not all found: \(settings)")
        let rejected = settings.filter { ConfigurationAudit.problem($0) != nil }.map(\.name)
        #expect(rejected == [fixture.bad])
    }

    @Test("the worker's own parser rejects an unknown key in a config file too")
    func workerRejectsUnknownKeys() {
        #expect(throws: ConfigurationValues.Error.self) {
            try ConfigurationValues(file: "worker.pool-size = 2\n")
        }
    }

    @Test("the mention scanner finds names in comments and shell text")
    func mentionScanner() {
        let text =
            "# set AVATAR_HTTP_PORT or http.port; AVATAR_* is a family\nexport AVATAR_LOG_LEVELS=x"
            + " # kafka.property.sasl.mechanisms and kafka.property.sasl.mechanism"
        let found = ConfigurationAudit.mentionedSettings(text, source: "fixture")
        #expect(
            found.map(\.name) == [
                "AVATAR_HTTP_PORT", "AVATAR_LOG_LEVELS", "kafka.property.sasl.mechanisms",
                "kafka.property.sasl.mechanism",
            ])
        let rejected = found.filter { ConfigurationAudit.problem($0) != nil }.map(\.name)
        #expect(rejected == ["AVATAR_LOG_LEVELS", "kafka.property.sasl.mechanism"])
    }
}
