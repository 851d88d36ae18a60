import Foundation
import Logging
import TestEnvironment

@testable import Storage

/// A bucket of its own on the test SeaweedFS (`AVATAR_TEST_S3_*`), for one harness: created with a signed
/// `PUT /bucket`, emptied and deleted by `remove()`. With `denyDelete`, a bucket policy refuses `s3:DeleteObject`
/// under that prefix (as an operator's policy without the delete right would): SeaweedFS then answers 403 to a
/// DELETE there, also of a key that does not exist.
struct S3TestBucket: Sendable {
    let settings: S3Settings
    let name: String
    let client: S3HTTPClient
    let builder: S3RequestBuilder

    init(denyDelete prefix: String? = nil) throws {
        settings = try TestService.s3Settings()
        name = "t-" + UUID().uuidString.prefix(13).lowercased().replacingOccurrences(of: "-", with: "")
        guard let endpoint = URL(string: settings.endpoint) else { throw MissingService(service: "AVATAR_TEST_S3_*") }
        builder = try S3RequestBuilder(
            configuration: S3Configuration(
                endpoint: endpoint, region: settings.region, bucket: name, accessKeyID: settings.accessKey,
                secretAccessKey: settings.secretKey))
        client = S3HTTPClient(timeout: .seconds(10), maxConnectionsPerHost: 2)
        try send("PUT", expecting: 200...299)
        if let prefix {
            let policy = """
                {"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:DeleteObject",\
                "Resource":"arn:aws:s3:::\(name)/\(prefix)*"}]}
                """
            try send(
                "PUT", query: [("policy", "")], body: Array(policy.utf8),
                headers: [("content-type", "application/json")], expecting: 200...299)
        }
    }

    /// The worker's `storage.url` (or `storage.sources-url`) for this bucket.
    var url: String { "s3://\(name)?endpoint=\(settings.endpoint)&region=\(settings.region)&pathStyle=true" }

    /// The credentials as configuration overrides.
    var credentialOverrides: [String] {
        ["storage.s3.access-key-id=\(settings.accessKey)", "storage.s3.secret-access-key=\(settings.secretKey)"]
    }

    /// A store on this bucket, as the tests' own view of it.
    func store() throws -> S3Store {
        guard let endpoint = URL(string: settings.endpoint) else { throw MissingService(service: "AVATAR_TEST_S3_*") }
        return S3Store(
            configuration: S3Configuration(
                endpoint: endpoint, region: settings.region, bucket: name, accessKeyID: settings.accessKey,
                secretAccessKey: settings.secretKey, publicBaseURL: "https://cdn.example.test"),
            logger: Logger(label: "test.s3"))
    }

    /// Drops the policy, every object and the bucket. Best effort: a test run's leftovers are in a bucket of
    /// their own either way.
    func remove() async {
        _ = try? send("DELETE", query: [("policy", "")], expecting: 200...299)
        if let store = try? store() {
            // A page of keys at a time, until none is left (or the store stops answering).
            for _ in 0..<100 {
                guard let keys = try? store.listKeys(prefix: ""), !keys.isEmpty else { break }
                for key in keys { try? store.delete(key) }
            }
            await store.shutdown()
        }
        _ = try? send("DELETE", expecting: 200...299)
        await client.shutdown()
    }

    struct Refused: Error, CustomStringConvertible {
        var description: String
    }

    @discardableResult
    private func send(
        _ method: String, query: [(name: String, value: String)] = [], body: [UInt8]? = nil,
        headers: [(name: String, value: String)] = [], expecting statuses: ClosedRange<Int>
    ) throws -> HTTPResponse {
        let request = try builder.request(method: method, key: nil, query: query, body: body, extraHeaders: headers)
        let response = try client.send(request).get()
        guard statuses.contains(response.status) else {
            throw Refused(
                description:
                    "\(method) bucket: HTTP \(response.status) \(String(decoding: response.body, as: UTF8.self))"
            )
        }
        return response
    }
}
