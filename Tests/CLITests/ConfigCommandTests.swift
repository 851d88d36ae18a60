import Foundation
import TestEnvironment
import Testing

@Suite("config and config --check, run as the built binary")
struct ConfigCommandTests {
    /// A clean environment: only what the test sets, so the developer's AVATAR_* variables cannot leak in.
    static func environment(_ variables: [String: String]) -> [String: String] {
        var environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
        environment.merge(variables) { $1 }
        return environment
    }

    static let valid = [
        "AVATAR_DATABASE_URL": "postgresql://avatar_worker:hunter2-secret@db/app", "AVATAR_HTTP_PORT": "0",
        "AVATAR_DATABASE_TOMBSTONE_KEY": TestService.tombstoneKey,
    ]

    @Test("config lists every key with its environment variable, default and help")
    func listsKeys() throws {
        let run = try CLI.run(["config"], environment: Self.environment([:]))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("worker.drain-seconds  (AVATAR_WORKER_DRAIN_SECONDS)"))
        #expect(run.stdout.contains("database.url  (AVATAR_DATABASE_URL, required, secret)"))
        #expect(run.stdout.contains("default: 25"))
    }

    @Test("a good configuration passes, printed with its secret masked")
    func checkPasses() throws {
        let run = try CLI.run(["config", "--check"], environment: Self.environment(Self.valid))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("database.url = ******  (environment)"))
        #expect(run.stdout.contains("worker.drain-seconds = 25  (default)"))
        #expect(!run.stdout.contains("hunter2") && !run.stdout.contains(TestService.tombstoneKey))
        #expect(!run.stderr.contains("hunter2"))
    }

    @Test("every problem is listed at once, and the exit status says so")
    func checkListsEveryProblem() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("worker.conf")
        try "worker.render-slost = 2\nworker.drain-seconds = soon\n".write(to: file, atomically: true, encoding: .utf8)
        let run = try CLI.run(
            ["config", "--check", "--config", file.path, "--set", "log.level=loud"],
            environment: Self.environment([
                "AVATAR_KAFKA_BROKER": "b:9092", "AVATAR_KAFKA_PROPERTY_SASL_PASSWORD": "kafka-secret-value",
            ]))
        #expect(run.status != 0)
        #expect(
            run.stderr.contains("unknown environment variable AVATAR_KAFKA_BROKER; did you mean AVATAR_KAFKA_BROKERS?"))
        #expect(run.stderr.contains("unknown configuration key 'worker.render-slost'"))
        #expect(run.stderr.contains("did you mean worker.render-slots?"))
        #expect(run.stderr.contains("worker.drain-seconds must be a whole number, got 'soon'"))
        #expect(run.stderr.contains("log.level must be one of"))
        #expect(run.stderr.contains("database.url is required"))
        #expect(run.stdout.contains("kafka.property.sasl.password = ******"))
        #expect(!run.stdout.contains("kafka-secret-value"))
    }

    @Test("worker refuses an unknown AVATAR_* variable before it connects to anything")
    func workerRefusesUnknownVariable() throws {
        var variables = Self.valid
        variables["AVATAR_WORKER_DRAIN_SECOND"] = "10"
        let run = try CLI.run(["worker"], hangGuard: .seconds(60), environment: Self.environment(variables))
        #expect(!run.timedOut)
        #expect(run.status != 0)
        #expect(run.stderr.contains("did you mean AVATAR_WORKER_DRAIN_SECONDS?"))
    }

    @Test("secrets come from AVATAR_…_FILE and from a mounted directory named by key")
    func fileSecrets() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = directory.appendingPathComponent("db-url")
        try "postgresql://u:file-secret@db/app\n".write(to: secret, atomically: true, encoding: .utf8)
        let viaFile = try CLI.run(
            ["config", "--check"],
            environment: Self.environment([
                "AVATAR_DATABASE_URL_FILE": secret.path, "AVATAR_HTTP_PORT": "0",
                "AVATAR_DATABASE_TOMBSTONE_KEY": TestService.tombstoneKey,
            ]))
        #expect(viaFile.status == 0, "\(viaFile.stderr)")
        #expect(viaFile.stdout.contains("database.url = ******  (environment)"))

        let mounted = directory.appendingPathComponent("secrets")
        try FileManager.default.createDirectory(at: mounted, withIntermediateDirectories: true)
        try "postgresql://u:dir-secret@db/app".write(
            to: mounted.appendingPathComponent("database.url"), atomically: true, encoding: .utf8)
        let viaDirectory = try CLI.run(
            [
                "config", "--check", "--secrets-dir", mounted.path, "--set", "http.port=0",
                "--set", "database.tombstone-key=\(TestService.tombstoneKey)",
            ],
            environment: Self.environment([:]))
        #expect(viaDirectory.status == 0, "\(viaDirectory.stderr)")
        #expect(viaDirectory.stdout.contains("database.url = ******  (secrets directory)"))
        #expect(!viaDirectory.stdout.contains("dir-secret"))
    }

    @Test("an unreadable config file is named")
    func unreadableConfigFile() throws {
        let run = try CLI.run(
            ["config", "--check", "--config", "/nonexistent/worker.conf"], environment: Self.environment([:]))
        #expect(run.status != 0)
        #expect(run.stderr.contains("/nonexistent/worker.conf"))
    }
}
