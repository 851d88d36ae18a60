import Foundation
import Testing

@testable import Database

@Suite struct MigrationLoadTests {
    private func withDirectory<T>(_ files: [String: String], _ body: (URL) throws -> T) throws -> T {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("migrations-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (name, contents) in files {
            try Data(contents.utf8).write(to: directory.appendingPathComponent(name))
        }
        return try body(directory)
    }

    private func expectMigrationError(_ files: [String: String], mentioning text: String) throws {
        try withDirectory(files) { directory in
            do {
                let loaded = try Migrator.load(directory: directory)
                Issue.record("expected a migration error, loaded \(loaded.map(\.version))")
            } catch let error as DatabaseError {
                #expect(error.code == .migration)
                #expect(error.message.contains(text), "\(error)")
            }
        }
    }

    @Test func ordersByVersionNotByListing() throws {
        let files = [
            "0003_third.sql": "SELECT 3;",
            "0001_first.sql": "SELECT 1;",
            "0002_second-step.sql": "SELECT 2;",
            "README.md": "not a migration",
            ".0004_hidden.sql": "ignored",
        ]
        let migrations = try withDirectory(files) { try Migrator.load(directory: $0) }
        #expect(migrations.map(\.version) == [1, 2, 3])
        #expect(migrations.map(\.name) == ["first", "second-step", "third"])
        #expect(migrations[1].sql == "SELECT 2;")
        #expect(migrations[1].checksum == Migration.checksum(of: "SELECT 2;"))
    }

    @Test func versionsBeyondNineThousandNineHundredNinetyNine() throws {
        var files: [String: String] = [:]
        for version in 1...12 { files[String(format: "%05d_m%d.sql", version, version)] = "SELECT \(version);" }
        let migrations = try withDirectory(files) { try Migrator.load(directory: $0) }
        #expect(migrations.map(\.version) == Array(1...12))
    }

    @Test func gapIsAnError() throws {
        try expectMigrationError(["0001_a.sql": "", "0003_c.sql": ""], mentioning: "expected 2, found 3")
    }

    @Test func firstVersionMustBeOne() throws {
        try expectMigrationError(["0002_b.sql": ""], mentioning: "expected 1, found 2")
    }

    @Test func duplicateVersionIsAnError() throws {
        try expectMigrationError(
            ["0001_a.sql": "", "0002_b.sql": "", "0002_other.sql": ""],
            mentioning: "duplicate migration version 2"
        )
    }

    @Test(arguments: ["1_short.sql", "0001-dash.sql", "0001_.sql", "abcd_name.sql", "0001_sp ace.sql"])
    func badFileNameIsAnError(_ name: String) throws {
        try expectMigrationError(["0001_ok.sql": "", name: ""], mentioning: "is not named NNNN_name.sql")
    }

    @Test func emptyDirectoryIsAnError() throws {
        try expectMigrationError(["notes.txt": ""], mentioning: "no NNNN_name.sql files")
    }

    @Test func missingDirectoryIsAnError() {
        #expect {
            try Migrator.load(directory: URL(fileURLWithPath: "/nonexistent/\(UUID().uuidString)"))
        } throws: { error in
            (error as? DatabaseError)?.code == .migration
        }
    }

    @Test func migratorRejectsGapsInItsList() {
        let migrations = [
            Migration(version: 1, name: "a", sql: ""), Migration(version: 3, name: "c", sql: ""),
        ]
        #expect(throws: DatabaseError.self) { try Migrator.validateSequence(migrations) }
        #expect(throws: Never.self) { try Migrator.validateSequence([Migration(version: 1, name: "a", sql: "")]) }
    }

    @Test func checksumIgnoresLineEndingsOnly() {
        #expect(Migration.checksum(of: "a\r\nb\r\n") == Migration.checksum(of: "a\nb\n"))
        #expect(Migration.checksum(of: "a\rb") == Migration.checksum(of: "a\nb"))
        #expect(Migration.checksum(of: "a\nb") != Migration.checksum(of: "a\nc"))
        #expect(Migration.checksum(of: "") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    /// The checksum is the lower-case hex SHA-256 of the LF-normalised text (FIPS 180-4 vectors).
    @Test func checksumIsSHA256Hex() {
        #expect(Migration.checksum(of: "abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            Migration.checksum(of: "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(
            Migration.checksum(of: String(repeating: "a", count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Databases migrated by earlier versions recorded these checksums (`sha256sum migrations/*.sql`);
    /// a change of checksum function would make the migrator refuse them as edited.
    @Test func recordedChecksumsStillMatch() throws {
        let recorded = [
            1: "5534a0459d3e633bac272dbfa340498532e5343e9c42904c99cf099e701aa425",
            2: "144bd6ec2fb5650d22df8a86cd1af2fdcad85bc855d731dbea28404130da134b",
            3: "42006c2f370ee9892d4abd6bfc68c9fa769346adff26a7c90b27474ecd463d34",
        ]
        let migrations = try Migrator.load(directory: TestDatabase.migrationsDirectory)
        for migration in migrations {
            guard let checksum = recorded[migration.version] else { continue }
            #expect(migration.checksum == checksum, "\(migration.name)")
        }
    }

    @Test func repositoryMigrationsLoad() throws {
        let migrations = try Migrator.load(directory: TestDatabase.migrationsDirectory)
        #expect(migrations.map(\.version) == Array(1...migrations.count))
        #expect(
            Array(migrations.map(\.name).prefix(6)) == [
                "profiles", "avatar_crop_jobs", "avatar_worker_role", "avatar_publication", "avatar_publication_calls",
                "pin_search_path",
            ])
        #expect(
            Set(migrations.map(\.name)).isSuperset(of: [
                "data_lifecycle", "ledger_finished_index", "forget_guarantee", "source_deletions",
            ]))
        #expect(migrations.filter { !$0.runsInTransaction }.map(\.name) == ["ledger_finished_index"])
        for migration in migrations {
            // Objects land in the current schema: the files never name one.
            #expect(!migration.sql.lowercased().contains("public."), "\(migration.name)")
        }
    }
}
