import ArgumentParser
import AvatarWorker
import CropProtocol
import Database
import Foundation
import Logging

struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Re-enqueue failed jobs from the DLQ onto the requests topic.",
        discussion: """
            Reads the whole DLQ once without joining a consumer group (it commits nothing and never \
            disturbs the workers), keeps the latest record of each job, selects by the filters below \
            (transient failures only unless --error-class permanent is given) and puts each selected job \
            back on the requests topic with its original key, bytes and headers plus replay-count and \
            replayed-from. A job already replayed --max-replays times is refused, and so is, when database.url \
            is set, a request whose user was forgotten after it. Replaying a job that \
            already succeeded is a no-op for the worker, so running a replay twice is safe. \
            Times are ISO 8601 (2025-01-31T09:30:00Z), a day (2025-01-31, UTC) or an age (30m, 2h, 7d).
            """)

    @OptionGroup var config: ConfigOptions

    @Flag(name: .customLong("dry-run"), help: "List what would be replayed (counts by error code, then the jobs).")
    var dryRun = false
    @Option(name: .customLong("error-code"), help: "Only this error code, e.g. STORAGE_UNAVAILABLE (repeatable).")
    var errorCodes: [String] = []
    @Option(name: .customLong("error-class"), help: "transient, permanent or any (repeatable; default: transient).")
    var errorClasses: [String] = []
    @Option(help: "Only jobs that first failed at or after this time.") var from: String?
    @Option(help: "Only jobs that first failed before this time.") var to: String?
    @Option(name: .customLong("user"), help: "Only this user id (repeatable).") var users: [String] = []
    @Option(name: .customLong("job-id"), help: "Only this job id (repeatable).") var jobIDs: [String] = []
    @Option(name: .customLong("max-replays"), help: "Refuse jobs already replayed this many times.")
    var maxReplays: Int = 3
    @Option(name: .customLong("idle-seconds"), help: "Stop reading the DLQ after this long without a new record.")
    var idleSeconds: Double = 3
    @Flag(name: .customLong("no-progress"), help: "No progress bar on stderr.") var noProgress = false

    func validate() throws {
        guard maxReplays >= 0 else { throw ValidationError("--max-replays must not be negative") }
        guard idleSeconds > 0, idleSeconds.isFinite else { throw ValidationError("--idle-seconds must be positive") }
        _ = try filter()
    }

    func run() async throws {
        let values = try config.values()
        var logger = try makeLogger("avatar-cropper.replay", values: values)
        logger.logLevel = max(logger.logLevel, .warning)
        var settings = try DLQReplayer.Settings(values: values)
        settings.maxReplays = maxReplays
        settings.idleTimeout = .milliseconds(Int(idleSeconds * 1000))
        let replayer = try DLQReplayer(settings: settings, logger: logger)
        // With the database, requests of users forgotten since are refused (docs/DATA.md, window 5).
        let database = try values[.databaseURL].map { _ in
            PostgresClient(
                configuration: try WorkerFactory.databaseConfiguration(values), maxConnections: 1, logger: logger)
        }
        defer { database?.shutdown() }
        let plan = try await replayer.plan(try filter(), forgotten: database.map(ForgottenUsers.init))
        if dryRun {
            ReplayListing.dryRun(plan, dlqTopic: settings.dlqTopic).forEach { print($0) }
            return
        }
        let progress = ProgressBar(total: plan.toReplay.count, enabled: !noProgress && plan.toReplay.count > 1)
        let outcome = try await replayer.replay(plan) { _, _ in progress.advance() }
        progress.finish()
        ReplayListing.summary(outcome, plan: plan, dlqTopic: settings.dlqTopic).forEach { print($0) }
        if !outcome.failed.isEmpty { throw ExitCode(1) }
    }

    private func filter() throws -> ReplayFilter {
        var codes = Set<String>()
        for code in errorCodes.map({ $0.uppercased() }) {
            guard CropErrorCode(rawValue: code) != nil else {
                let known = CropErrorCode.allCases.map(\.rawValue).joined(separator: ", ")
                throw ValidationError("unknown error code '\(code)'; known: \(known)")
            }
            codes.insert(code)
        }
        var classes: Set<CropErrorClass> = errorClasses.isEmpty ? [.transient] : []
        for name in errorClasses.map({ $0.lowercased() }) {
            if name == "any" || name == "all" {
                classes.formUnion(CropErrorClass.allCases)
            } else if let errorClass = CropErrorClass(rawValue: name) {
                classes.insert(errorClass)
            } else {
                throw ValidationError("--error-class is transient, permanent or any, got '\(name)'")
            }
        }
        let now = Date()
        func bound(_ text: String?, _ flag: String) throws -> Date? {
            guard let text else { return nil }
            guard let date = ReplayTime.parseBound(text, now: now) else {
                throw ValidationError("\(flag) expects an ISO 8601 time, a day (2025-01-31) or an age (30m, 2h, 7d)")
            }
            return date
        }
        let fromDate = try bound(from, "--from")
        let toDate = try bound(to, "--to")
        if let fromDate, let toDate, fromDate >= toDate { throw ValidationError("--from must be before --to") }
        for user in users where UUID(uuidString: user) == nil {
            throw ValidationError("--user expects a UUID, got '\(user)'")
        }
        return ReplayFilter(
            errorCodes: codes, errorClasses: classes, from: fromDate, to: toDate, userIDs: Set(users),
            jobIDs: Set(jobIDs))
    }
}
