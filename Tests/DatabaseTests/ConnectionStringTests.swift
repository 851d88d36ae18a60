import Foundation
import TestEnvironment
import Testing

@testable import Database

/// The URLs operators are told to use, read with libpq's own parser and TLS rules (no server needed).
@Suite("Connection strings, checked as libpq reads them")
struct ConnectionStringTests {
    /// The image's CA bundle, which the example Secret names (deploy/Dockerfile installs ca-certificates).
    static let imageBundle = "/etc/ssl/certs/ca-certificates.crt"
    static func inImage(_ path: String) -> Bool { path == imageBundle }
    static let environment = ["HOME": "/app"]

    /// The `database-url` and `migrate-database-url` values of deploy/kubernetes/secret.example.yaml.
    static func exampleURLs() throws -> [String] {
        let text = try String(
            contentsOf: TestFiles.repositoryRoot.appendingPathComponent("deploy/kubernetes/secret.example.yaml"),
            encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("database-url:") || trimmed.hasPrefix("migrate-database-url:") else { return nil }
            return trimmed.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces)
        }
    }

    @Test("the example Secret's URLs verify the server against the image's CA bundle")
    func exampleSecretConnects() throws {
        let urls = try Self.exampleURLs()
        #expect(urls.count == 2)
        for url in urls {
            let options = try #require(PQConninfo.parse(url))
            #expect(options["sslmode"] == "verify-full")
            #expect(options["sslrootcert"] == Self.imageBundle)
            let problem = DatabaseConfiguration(url: url).connectionProblem(
                environment: Self.environment, fileExists: Self.inImage)
            #expect(problem == nil, "\(problem ?? "")")
        }
    }

    @Test("verify-full without a root certificate is refused, naming the file libpq would look for")
    func verifyFullNeedsRootCertificate() throws {
        for url in try Self.exampleURLs() {
            let without = url.replacingOccurrences(of: "&sslrootcert=" + Self.imageBundle, with: "")
            #expect(without != url)
            let problem = try #require(
                DatabaseConfiguration(url: without).connectionProblem(
                    environment: Self.environment, fileExists: Self.inImage))
            #expect(problem.contains("/app/.postgresql/root.crt"))
            #expect(!problem.contains("REPLACE_ME"), "the message never quotes the URL")
        }
        let conninfo = "host=db dbname=app sslmode=verify-ca"
        #expect(
            DatabaseConfiguration(url: conninfo).connectionProblem(
                environment: Self.environment, fileExists: { _ in false })
                != nil)
        #expect(
            DatabaseConfiguration(url: conninfo).connectionProblem(
                environment: ["HOME": "/app", "PGSSLROOTCERT": Self.imageBundle], fileExists: Self.inImage) == nil)
    }

    @Test("modes that do not verify, and strings libpq cannot parse")
    func otherModes() {
        for url in ["postgresql://u@h/db", "postgresql://u@h/db?sslmode=require", "host=h sslmode=disable"] {
            #expect(
                DatabaseConfiguration(url: url).connectionProblem(environment: [:], fileExists: { _ in false }) == nil)
        }
        let broken = DatabaseConfiguration(url: "postgresql://u:pw-secret@h/db?nonsense=1")
            .connectionProblem(environment: [:], fileExists: { _ in false })
        #expect(broken != nil)
        #expect(broken?.contains("pw-secret") == false)
    }

    @Test("startup settings go in libpq's options after the URL's own (or PGOPTIONS), so both apply")
    func startupOptions() {
        var configuration = DatabaseConfiguration(url: "postgresql://u@h/db?options=-c%20work_mem%3D8MB")
        #expect(configuration.startupOptions(environment: [:]) == nil)
        configuration.startupSettings = ["avatar.tombstone_key": "ab12"]
        #expect(configuration.startupOptions(environment: [:]) == "-c work_mem=8MB -c avatar.tombstone_key=ab12")
        configuration.url = "host=h dbname=db"
        #expect(
            configuration.startupOptions(environment: ["PGOPTIONS": "-c geqo=off"])
                == "-c geqo=off -c avatar.tombstone_key=ab12")
        #expect(!configuration.description.contains("ab12"))
    }
}
