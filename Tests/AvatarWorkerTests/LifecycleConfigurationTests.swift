import CropProtocol
import Database
import Foundation
import Logging
import TestEnvironment
import Testing

@testable import AvatarWorker

@Suite("Lifecycle configuration")
struct LifecycleConfigurationTests {
    @Test("storage.delete-source is never by default, after-success on request, anything else refused")
    func sourceDeletion() throws {
        #expect(try WorkerFactory.sourceDeletion(ConfigurationValues()) == .never)
        let after = try ConfigurationValues(flags: ["storage.delete-source=after-success"])
        #expect(try WorkerFactory.sourceDeletion(after) == .afterSuccess)
        let wrong = try ConfigurationValues(environment: ["AVATAR_STORAGE_DELETE_SOURCE": "sometimes"])
        #expect(throws: ConfigurationValues.Error.self) { try WorkerFactory.sourceDeletion(wrong) }
    }

    @Test("window 8: worker.max-request-age-hours goes to every database session; unset, none")
    func maxRequestAgeSetting() throws {
        let url = ["database.url=postgresql://u@h/d", "database.tombstone-key=\(TestService.tombstoneKey)"]
        let unset = try WorkerFactory.databaseConfiguration(ConfigurationValues(flags: url))
        #expect(unset.sessionSettings.isEmpty)
        let set = try WorkerFactory.databaseConfiguration(
            ConfigurationValues(flags: url + ["worker.max-request-age-hours=336"]))
        #expect(set.sessionSettings == [LedgerRetention.maxRequestAgeSetting: "336 hours"])
    }

    @Test(
        "window 8: database.tombstone-key is required, 32 characters at least, and goes hex in every connection's startup packet, never in a statement"
    )
    func tombstoneKeySetting() throws {
        let url = ["database.url=postgresql://u@h/d?options=-c%20work_mem%3D8MB"]
        #expect(throws: ConfigurationValues.Error.self) {
            try WorkerFactory.databaseConfiguration(ConfigurationValues(flags: url))
        }
        #expect(throws: ConfigurationValues.Error.self) {
            try WorkerFactory.databaseConfiguration(
                ConfigurationValues(flags: url + ["database.tombstone-key=\(TestService.tombstoneKey.dropLast())"]))
        }
        let keyed = try WorkerFactory.databaseConfiguration(
            ConfigurationValues(flags: url + ["database.tombstone-key=\(TestService.tombstoneKey)"]))
        let hex = TestService.tombstoneKey.utf8.map { String(format: "%02x", $0) }.joined()
        #expect(keyed.startupSettings == [TombstoneKey.setting: hex])
        #expect(keyed.sessionSettings[TombstoneKey.setting] == nil)
        #expect(!keyed.description.contains(hex))
    }

    @Test("window 6: the default Cache-Control lets a cache keep an avatar a day at most (a forgotten user's too)")
    func cacheControlBoundsCaches() throws {
        let value = try #require(ConfigurationValues()[.storageCacheControl])
        let maxAge = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .first { $0.hasPrefix("max-age=") }.flatMap { Int($0.dropFirst("max-age=".count)) }
        #expect(try #require(maxAge) <= 86_400)
        #expect(!value.contains("s-maxage"), "no longer life for shared caches")
    }

    @Test("only a job done with its source deletes it: applied, duplicate or superseded, never failed or forget")
    func deletesAfter() {
        let done: [JobReport.Outcome] = [
            .applied(version: 1, path: "p"), .duplicate(version: 1, path: nil), .superseded(version: 2, path: nil),
        ].map { .success($0) }
        for outcome in done {
            #expect(SourceDeletion.afterSuccess.deletes(after: outcome))
            #expect(!SourceDeletion.never.deletes(after: outcome))
        }
        #expect(!SourceDeletion.afterSuccess.deletes(after: .failure(JobFailure(.tooSmall, detail: "small"))))
        #expect(!SourceDeletion.afterSuccess.deletes(after: .success(.forgotten(objects: 3))))
    }

    @Test("ledger retention: 336 h and batches of 1000 by default; the worker prunes only when asked")
    func retention() throws {
        let client = PostgresClient(
            configuration: DatabaseConfiguration(url: "postgresql://unused"), maxConnections: 1,
            logger: Logger(label: "test"))
        let defaults = try WorkerFactory.ledgerRetention(ConfigurationValues(), client: client)
        #expect(defaults.retention == .seconds(336 * 3600))
        #expect(defaults.batchSize == 1000)
        let custom = try WorkerFactory.ledgerRetention(
            ConfigurationValues(flags: ["ledger.retention-hours=24", "ledger.prune-batch=50"]), client: client)
        #expect(custom.retention == .seconds(86_400) && custom.batchSize == 50)
        #expect(throws: (any Error).self) {
            try WorkerFactory.ledgerRetention(ConfigurationValues(flags: ["ledger.prune-batch=0"]), client: client)
        }
        #expect(try ConfigurationValues().integer(.ledgerPruneIntervalMinutes) == 0)
    }
}
