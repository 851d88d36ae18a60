import Foundation
import Logging
import TestEnvironment
import Testing

@testable import AvatarWorker

@Suite("Configuration")
struct ConfigurationTests {
    @Test("flags beat the environment, which beats the file, which beats defaults")
    func precedence() throws {
        let file = """
            # worker settings
            kafka.brokers = file:9092
            worker.render-slots = 3
            database.url = postgresql://file
            """
        let values = try ConfigurationValues(
            flags: ["kafka.brokers=flag:9092"],
            environment: ["AVATAR_KAFKA_BROKERS": "env:9092", "AVATAR_WORKER_RENDER_SLOTS": "5", "HOME": "/root"],
            file: file)
        #expect(values[.kafkaBrokers] == "flag:9092")
        #expect(try values.int(.renderSlots) == 5)
        #expect(values[.databaseURL] == "postgresql://file")
        #expect(values[.topicRequests] == "avatar.crop.requests")
    }

    @Test("librdkafka properties pass through from the environment and the file")
    func kafkaPassThrough() throws {
        let values = try ConfigurationValues(
            environment: [
                "AVATAR_KAFKA_PROPERTY_SECURITY_PROTOCOL": "SASL_SSL", "AVATAR_KAFKA_PROPERTY_SASL_MECHANISMS": "PLAIN",
            ],
            file: "kafka.property.ssl.ca.location = /etc/ssl/ca.pem")
        #expect(
            values.kafkaProperties == [
                "security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN", "ssl.ca.location": "/etc/ssl/ca.pem",
            ])
    }

    @Test("unknown keys, malformed lines and bad numbers are refused")
    func refusals() throws {
        #expect(throws: ConfigurationValues.Error.self) { try ConfigurationValues(file: "kafka.brokerz = x") }
        #expect(throws: ConfigurationValues.Error.self) { try ConfigurationValues(file: "just words") }
        #expect(throws: ConfigurationValues.Error.self) { try ConfigurationValues(flags: ["novalue"]) }
        let values = try ConfigurationValues(flags: ["worker.render-slots=many"])
        #expect(throws: ConfigurationValues.Error.self) { try values.int(.renderSlots) }
        #expect(throws: ConfigurationValues.Error.self) { try values.require(.databaseURL) }
        let zero = try ConfigurationValues(flags: ["worker.render-slots=0", "worker.memory-budget-mb=0"])
        #expect(throws: ConfigurationValues.Error.self) { try zero.int(.renderSlots, minimum: 1) }
        #expect(throws: ConfigurationValues.Error.self) { try zero.integer(.memoryBudgetMB, minimum: 1) }
    }

    @Test("an unknown AVATAR_* variable is refused with the nearest name; the scripts' own are not")
    func unknownEnvironmentVariables() throws {
        #expect {
            try ConfigurationValues(environment: ["AVATAR_WORKER_RENDER_SLOST": "2"])
        } throws: { error in
            "\(error)".contains("AVATAR_WORKER_RENDER_SLOST; did you mean AVATAR_WORKER_RENDER_SLOTS?")
        }
        let tooling = ["AVATAR_TEST_DATABASE_URL": "x", "AVATAR_RUN_DIR": "/tmp", "AVATAR_CONFIG": "f"]
        #expect(try ConfigurationValues(environment: tooling).problems.isEmpty)
        let both = ConfigurationValues.inspect(environment: [
            "AVATAR_LOG_LEVELS": "x", "AVATAR_HTTP_PORTS": "1", "HOME": "/root",
        ])
        #expect(both.problems.count == 2)
        #expect(
            ConfigurationValues.inspect(file: "kafka.brokerz = x").problems.first?.contains("kafka.brokers") == true)
    }

    @Test("only the test harness's own variables pass unread; a look-alike of a real key gets the name it meant")
    func harnessVariables() throws {
        for name in ConfigurationValues.harnessVariables {
            #expect(ConfigurationValues.environmentProblem(name) == nil, "\(name)")
        }
        let meant = [
            "AVATAR_S3_SECRET_KEY": "AVATAR_STORAGE_S3_SECRET_ACCESS_KEY",
            "AVATAR_S3_ACCESS_KEY": "AVATAR_STORAGE_S3_ACCESS_KEY_ID",
            "AVATAR_DATABASE_URL_FIEL": "AVATAR_DATABASE_URL_FILE", "AVATAR_SECRET_DIR": "AVATAR_SECRETS_DIR",
            "AVATAR_CONFIG_FILE": "AVATAR_CONFIG", "AVATAR_PORT": "AVATAR_HTTP_PORT",
        ]
        for (name, key) in meant {
            #expect(
                ConfigurationValues.environmentProblem(name)
                    == "unknown environment variable \(name); did you mean \(key)?")
        }
        for name in ["AVATAR_S3_BUCKET", "AVATAR_S3_KEEP_DATA", "AVATAR_TEST_ANYTHING", "AVATAR_TEST_S3_SECRET"] {
            #expect(ConfigurationValues.environmentProblem(name)?.hasPrefix("unknown environment variable") == true)
        }
        #expect(throws: ConfigurationValues.Error.self) {
            try ConfigurationValues(environment: ["AVATAR_S3_SECRET_KEY": "x", "AVATAR_S3_BUCKET": "avatars"])
        }
    }

    /// Each variable the scripts export that is not configuration (their own `export` lines and the `.run/env` they
    /// write) is on the list, and each name on the list is still used by a script or the test harness.
    @Test("the harness list is exactly what the scripts export and the harness reads")
    func harnessVariablesMatchTheScripts() throws {
        // The make entry points and their helpers (scripts/, scripts/dev/, the chaos package) and the bench drivers.
        let root = TestFiles.repositoryRoot
        var files: [URL] = []
        for folder in ["scripts", "bench"] {
            let base = root.appendingPathComponent(folder)
            let walk = FileManager.default.enumerator(at: base, includingPropertiesForKeys: [.isRegularFileKey])
            while let file = walk?.nextObject() as? URL {
                guard ["sh", "py", "txt"].contains(file.pathExtension), !file.path.contains("/.build"),
                    (try? file.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true
                else { continue }
                files.append(file)
            }
        }
        var exported: Set<String> = []
        var used = ""
        for file in files.sorted(by: { $0.path < $1.path }) {
            let name = file.lastPathComponent
            let text = try String(contentsOf: file, encoding: .utf8)
            used += text
            guard name.hasSuffix(".sh") else { continue }
            for line in text.replacingOccurrences(of: "\\\n", with: " ").split(separator: "\n") {
                guard let export = line.range(of: "export ") else { continue }
                for match in line[export.upperBound...].matches(of: /(AVATAR_[A-Z0-9_]+)=/) {
                    let variable = String(match.output.1)
                    if ConfigurationValues.environmentProblem(variable, testSeams: false) != nil {
                        exported.insert(variable)
                    }
                }
            }
        }
        #expect(exported.isSubset(of: ConfigurationValues.harnessVariables), "\(exported)")
        for folder in ["Tests/TestEnvironment", "Tests/AvatarWorkerTests/Support"] {
            let directory = TestFiles.repositoryRoot.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
                used += try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            }
        }
        for variable in ConfigurationValues.harnessVariables {
            #expect(used.contains(variable), "\(variable) is on the list but nothing sets or reads it")
        }
    }

    @Test("AVATAR_TEST_SEAMS is read only by a build with test seams: a release build refuses it as unknown")
    func testSeamsVariable() {
        #expect(ConfigurationValues.buildHasTestSeams, "the tests run on a debug build, which has the seams")
        #expect(ConfigurationValues.environmentProblem(ConfigurationValues.testSeamsVariable) == nil)
        #expect(
            ConfigurationValues.environmentProblem("AVATAR_TEST_SEAMS", testSeams: false)
                == "unknown environment variable AVATAR_TEST_SEAMS")
    }

    @Test("secrets come from AVATAR_X_FILE and from a directory of files named by key; both forms of one key clash")
    func fileSecrets() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = directory.appendingPathComponent("password")
        try "s3cret\n".write(to: secret, atomically: true, encoding: .utf8)
        let viaFile = try ConfigurationValues(environment: [
            "AVATAR_STORAGE_S3_SECRET_ACCESS_KEY_FILE": secret.path,
            "AVATAR_KAFKA_PROPERTY_SASL_PASSWORD_FILE": secret.path,
        ])
        #expect(viaFile[.storageSecretAccessKey] == "s3cret")
        #expect(viaFile.kafkaProperties == ["sasl.password": "s3cret"])
        #expect(throws: ConfigurationValues.Error.self) {
            try ConfigurationValues(environment: [
                "AVATAR_DATABASE_URL": "a", "AVATAR_DATABASE_URL_FILE": secret.path,
            ])
        }
        #expect(throws: ConfigurationValues.Error.self) {
            try ConfigurationValues(environment: ["AVATAR_DATABASE_URL_FILE": directory.path + "/missing"])
        }

        let mounted = directory.appendingPathComponent("mounted")
        try FileManager.default.createDirectory(
            at: mounted.appendingPathComponent("..data"), withIntermediateDirectories: true)
        try "postgresql://dir".write(
            to: mounted.appendingPathComponent("database.url"), atomically: true, encoding: .utf8)
        try "from-dir".write(
            to: mounted.appendingPathComponent("kafka.property.sasl.username"), atomically: true, encoding: .utf8)
        let viaDirectory = try ConfigurationValues(
            environment: ["AVATAR_KAFKA_PROPERTY_SASL_USERNAME": "from-env"], file: "database.url = postgresql://file",
            secretsDirectory: mounted.path)
        #expect(viaDirectory[.databaseURL] == "postgresql://dir")
        #expect(viaDirectory.sources["database.url"] == "secrets directory")
        #expect(viaDirectory.kafkaProperties["sasl.username"] == "from-env")
        try "x".write(to: mounted.appendingPathComponent("database.uri"), atomically: true, encoding: .utf8)
        #expect(throws: ConfigurationValues.Error.self) {
            try ConfigurationValues(secretsDirectory: mounted.path)
        }
    }

    @Test("the worker's settings list every bad value and missing key at once")
    func everyProblemAtOnce() throws {
        let values = try ConfigurationValues(flags: [
            "worker.render-slots=0", "worker.drain-seconds=soon", "log.level=loud", "http.port=70000",
        ])
        #expect {
            try WorkerSettings(values)
        } throws: { error in
            let lines = "\(error)".split(separator: "\n")
            return lines.count == 5 && lines.contains { $0.contains("database.url is required") }
        }
        let good = try WorkerSettings(
            try ConfigurationValues(flags: [
                "database.url=postgresql://x", "database.tombstone-key=\(TestService.tombstoneKey)",
                "worker.render-slots=2",
            ]), cores: 8)
        #expect(good.renderSlots == 2 && good.jobsInFlight == 4 && good.databasePoolSize == 5)
    }

    @Test("secrets are masked in the effective configuration")
    func masking() throws {
        let values = try ConfigurationValues(
            flags: ["database.url=postgresql://u:pw-value@h/db", "kafka.property.sasl.password=kafka-pw"])
        let text = ConfigurationReference.effective(values)
        #expect(text.contains("database.url = ******  (flags)"))
        #expect(text.contains("kafka.property.sasl.password = ******  (flags)"))
        #expect(!text.contains("pw-value") && !text.contains("kafka-pw"))
    }

    @Test("a key's default comes from its declaration, and an empty value unsets it")
    func defaults() throws {
        let values = try ConfigurationValues(environment: ["AVATAR_STORAGE_CACHE_CONTROL": ""])
        #expect(try values.integer(.memoryBudgetMB) == Int(ConfigurationKey.memoryBudgetMB.defaultValue ?? ""))
        #expect(values[.storageCacheControl] == nil)
        #expect(try values.int(.renderSlots) == nil)
    }

    @Test("environment names are derived from key names")
    func environmentNames() {
        #expect(ConfigurationKey.memoryBudgetMB.environmentName == "AVATAR_WORKER_MEMORY_BUDGET_MB")
        #expect(ConfigurationKey.storageAccessKeyID.environmentName == "AVATAR_STORAGE_S3_ACCESS_KEY_ID")
        #expect(Set(ConfigurationKey.all.map(\.name)).count == ConfigurationKey.all.count)
    }

    @Test("jobs in flight default to twice the renders at once and may not be fewer")
    func jobsInFlight() throws {
        let defaults = try WorkerFactory.concurrency(try ConfigurationValues(), cores: 3)
        #expect(defaults.renderSlots == 3 && defaults.jobsInFlight == 6)
        let width = try WorkerFactory.concurrency(try ConfigurationValues(flags: ["worker.render-slots=2"]), cores: 8)
        #expect(width.renderSlots == 2 && width.jobsInFlight == 4)
        let same = try WorkerFactory.concurrency(
            try ConfigurationValues(flags: ["worker.render-slots=2", "worker.jobs-in-flight=2"]), cores: 8)
        #expect(same.renderSlots == 2 && same.jobsInFlight == 2)
        #expect(throws: ConfigurationValues.Error.self) {
            try WorkerFactory.concurrency(
                try ConfigurationValues(flags: ["worker.render-slots=3", "worker.jobs-in-flight=2"]), cores: 8)
        }
        #expect(throws: ConfigurationValues.Error.self) {
            try WorkerFactory.concurrency(try ConfigurationValues(flags: ["worker.jobs-in-flight=0"]), cores: 8)
        }
    }

    @Test("worker.pool-width is a deprecated alias of worker.render-slots: read, reported, and never preferred")
    func deprecatedPoolWidth() throws {
        let flag = try ConfigurationValues(flags: ["worker.pool-width=3"])
        #expect(try flag.int(.renderSlots) == 3)
        #expect(flag.deprecatedNamesInUse.map(\.deprecated) == ["worker.pool-width"])
        #expect(flag.deprecatedNamesInUse.first?.key == .renderSlots)
        let environment = try ConfigurationValues(environment: ["AVATAR_WORKER_POOL_WIDTH": "4"])
        #expect(try environment.int(.renderSlots) == 4)
        let both = try ConfigurationValues(
            flags: ["worker.pool-width=3"], environment: ["AVATAR_WORKER_RENDER_SLOTS": "5"])
        #expect(try both.int(.renderSlots) == 5, "the current name wins in any source")
        #expect(try ConfigurationValues(flags: ["worker.render-slots=2"]).deprecatedNamesInUse.isEmpty)
    }

    @Test("zero render slots or a memory budget of 0 is a configuration error at start, not a crash")
    func zeroWidthOrBudgetIsRefused() throws {
        for flag in ["worker.render-slots=0", "worker.memory-budget-mb=0", "worker.render-slots=-2"] {
            let values = try ConfigurationValues(flags: [flag, "database.url=postgresql://unused"])
            #expect(throws: ConfigurationValues.Error.self, "\(flag)") {
                _ = try WorkerFactory.build(
                    values, logger: Logger(label: "test"), helperExecutable: try TestFiles.requireCropperBinary())
            }
        }
    }

    @Test("every worker connection gets a statement and a lock timeout by default; 0 keeps the server's")
    func databaseDeadlines() throws {
        let defaults = try WorkerFactory.databaseConfiguration(
            ConfigurationValues(flags: ["database.url=x", "database.tombstone-key=\(TestService.tombstoneKey)"]))
        #expect(defaults.statementTimeout == .seconds(30))
        #expect(defaults.lockTimeout == .seconds(5))
        let off = try WorkerFactory.databaseConfiguration(
            ConfigurationValues(
                flags: [
                    "database.url=x", "database.tombstone-key=\(TestService.tombstoneKey)",
                    "database.statement-timeout-ms=0", "database.lock-timeout-ms=0",
                ]))
        #expect(off.statementTimeout == nil)
        #expect(off.lockTimeout == nil)
    }
}
