import Foundation
import Logging
import Testing

@testable import Storage

@Suite struct ObjectStoreFactoryTests {
    static let logger = Logger(label: "storage-tests")

    @Test func fileURLsMakeALocalDirectoryStore() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanup() }
        let store = try ObjectStoreFactory.make(
            url: directory.url.absoluteString + "?publicBaseURL=https://cdn.example.com", logger: Self.logger)
        let local = try #require(store as? LocalDirectoryStore)
        #expect(local.root.standardizedFileURL.path == directory.url.standardizedFileURL.path)
        #expect(store.publicURL(for: "a.png") == "https://cdn.example.com/a.png")
        try store.put("a.png", data: [1], options: PutOptions(contentType: "image/png"))
        #expect(directory.allFiles() == ["a.png"])
    }

    @Test func s3URLsTakeEndpointRegionAndFlagsFromTheQuery() throws {
        let components = try #require(
            URLComponents(
                string: "s3://avatars?endpoint=http://127.0.0.1:9000/prefix&region=eu-central-1&pathStyle=false"
                    + "&publicBaseURL=https://cdn.example.com&timeout=2.5"))
        var options: [String: String] = [:]
        for item in components.queryItems ?? [] { options[item.name] = item.value }
        let configuration = try ObjectStoreFactory.s3Configuration(
            components: components, options: options, credentials: nil,
            environment: ["AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_SESSION_TOKEN": "ST"])
        #expect(configuration.bucket == "avatars")
        #expect(configuration.endpoint.absoluteString == "http://127.0.0.1:9000/prefix")
        #expect(configuration.region == "eu-central-1")
        #expect(configuration.pathStyle == false)
        #expect(configuration.publicBaseURL == "https://cdn.example.com")
        #expect(configuration.requestTimeout == .milliseconds(2500))
        #expect(configuration.accessKeyID == "AK")
        #expect(configuration.secretAccessKey == "SK")
        #expect(configuration.sessionToken == "ST")
    }

    @Test func s3DefaultsToAWSAndExplicitCredentialsWin() throws {
        let store = try ObjectStoreFactory.make(
            url: "s3://my-bucket",
            credentials: .init(accessKeyID: "explicit", secretAccessKey: "secret"),
            environment: ["AWS_ACCESS_KEY_ID": "env", "AWS_SECRET_ACCESS_KEY": "env"], logger: Self.logger)
        #expect(store is S3Store)
        let components = try #require(URLComponents(string: "s3://my-bucket"))
        let configuration = try ObjectStoreFactory.s3Configuration(
            components: components, options: [:],
            credentials: .init(accessKeyID: "explicit", secretAccessKey: "secret"),
            environment: ["AWS_ACCESS_KEY_ID": "env", "AWS_SECRET_ACCESS_KEY": "env"])
        #expect(configuration.endpoint.absoluteString == "https://s3.us-east-1.amazonaws.com")
        #expect(configuration.region == "us-east-1")
        #expect(configuration.pathStyle)
        #expect(configuration.accessKeyID == "explicit")
    }

    @Test(arguments: [
        "s3://bucket",  // no credentials in the (empty) environment
        "s3://user:pass@bucket?endpoint=http://h",
        "s3://bucket?pathStyle=maybe",
        "s3://bucket?timeout=-1",
        "s3://?endpoint=http://h",
        "ftp://host/dir",
        "file://remotehost/dir",
        "not a url at all",
    ])
    func badURLsAreInvalidConfiguration(_ url: String) {
        do {
            _ = try ObjectStoreFactory.make(url: url, environment: [:], logger: Self.logger)
            Issue.record("accepted \(url)")
        } catch {
            #expect(error.code == .invalidConfiguration)
            #expect(!error.debugDescription.contains("pass"))
        }
    }
}
