import Foundation
import Logging
import TestEnvironment
import Testing

@testable import Storage

/// Against the real S3 service (SeaweedFS locally, which verifies SigV4). Each test uses its own key prefix.
@Suite(.requires(.s3))
struct S3StoreIntegrationTests {
    static let png = PutOptions(contentType: "image/png", cacheControl: "public, max-age=31536000, immutable")

    @Test func putGetRoundTripKeepsContentTypeAndCacheControl() throws {
        let store = try S3TestEnvironment.store(S3TestEnvironment.require())
        let key = S3TestEnvironment.uniquePrefix("roundtrip") + "/avatar_512.png"
        let bytes = (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) }

        #expect(try store.exists(key) == false)
        try store.put(key, data: bytes, options: Self.png)
        #expect(try store.exists(key))

        let object = try store.get(key)
        #expect(object.data == bytes)
        #expect(object.contentType == "image/png")
        #expect(object.cacheControl == "public, max-age=31536000, immutable")

        let headers = try #require(try store.head(key))
        #expect(headers["content-type"] == "image/png")
        #expect(headers["cache-control"] == "public, max-age=31536000, immutable")
        #expect(headers["content-length"] == "4096")

        try store.delete(key)
        #expect(try store.exists(key) == false)
        #expect(try store.head(key) == nil)
    }

    @Test func putIsAnUpsert() throws {
        let store = try S3TestEnvironment.store(S3TestEnvironment.require())
        let key = S3TestEnvironment.uniquePrefix("upsert") + "/avatar_512.png"
        try store.put(key, data: Array(repeating: 1, count: 10_000), options: Self.png)
        try store.put(key, data: [2, 3], options: PutOptions(contentType: "image/jpeg", cacheControl: "no-cache"))
        let object = try store.get(key)
        #expect(object.data == [2, 3])
        #expect(object.contentType == "image/jpeg")
        #expect(object.cacheControl == "no-cache")
        try store.delete(key)
    }

    @Test func copyReplacesTheDestinationServerSideWithNewMetadata() throws {
        let store = try S3TestEnvironment.store(S3TestEnvironment.require())
        let prefix = S3TestEnvironment.uniquePrefix("copy")
        let source = prefix + "/versions/2/avatar_512.png"
        let destination = prefix + "/avatar_512.png"
        try store.put(destination, data: [1], options: PutOptions(contentType: "image/jpeg", cacheControl: "no-cache"))
        try store.put(source, data: [7, 8, 9], options: PutOptions(contentType: "application/octet-stream"))
        try store.copy(from: source, to: destination, options: Self.png)
        let object = try store.get(destination)
        #expect(object.data == [7, 8, 9])
        #expect(object.contentType == "image/png")
        #expect(object.cacheControl == "public, max-age=31536000, immutable")
        #expect(try store.get(source).data == [7, 8, 9], "the source stays")
        do {
            try store.copy(from: prefix + "/versions/3/avatar_512.png", to: destination, options: Self.png)
            Issue.record("copied a missing object")
        } catch {
            #expect(error.code == .notFound)
        }
        #expect(try store.get(destination).data == [7, 8, 9], "a failed copy leaves the destination")
        try store.delete(source)
        try store.delete(destination)
    }

    @Test func missingObjectsAreNotFound() throws {
        let store = try S3TestEnvironment.store(S3TestEnvironment.require())
        let key = S3TestEnvironment.uniquePrefix("missing") + "/nothing.png"
        do {
            _ = try store.get(key)
            Issue.record("no error")
        } catch {
            #expect(error.code == .notFound)
            #expect(error.httpStatus == 404)
            #expect(!error.isTransient)
            #expect(!error.description.contains("nothing.png"))
        }
        #expect(try store.exists(key) == false)
        try store.delete(key)  // deleting a missing key succeeds
    }

    @Test func aWrongSecretIsAccessDenied() throws {
        var configuration = try S3TestEnvironment.require()
        let good = try S3TestEnvironment.store(configuration)
        configuration.secretAccessKey += "-wrong"
        let bad = try S3TestEnvironment.store(configuration)
        let key = S3TestEnvironment.uniquePrefix("wrong-secret") + "/avatar.png"

        for (name, call) in [
            ("put", { () throws(StorageError) in try bad.put(key, data: [1], options: Self.png) }),
            ("get", { () throws(StorageError) in _ = try bad.get(key) }),
            ("exists", { () throws(StorageError) in _ = try bad.exists(key) }),
            ("ping", { () throws(StorageError) in try bad.ping() }),
        ] as [(String, () throws(StorageError) -> Void)] {
            do {
                try call()
                Issue.record("\(name) succeeded with a wrong secret")
            } catch {
                #expect(error.code == .accessDenied, "\(name)")
                #expect(error.httpStatus == 403, "\(name)")
                #expect(!error.isTransient, "\(name)")
            }
        }
        #expect(try good.exists(key) == false)
    }

    /// A store that cannot be reached fails transiently, so the worker's `uploadRetry`/`fetchRetry` retry it
    /// (`RetryPolicyTests` in AvatarWorkerTests prove the retries).
    @Test func aClosedPortIsTransientlyUnavailable() throws {
        var configuration = try S3TestEnvironment.require()
        configuration.endpoint = URL(string: "http://127.0.0.1:\(try S3TestEnvironment.closedPort())")!
        configuration.requestTimeout = .seconds(3)
        let store = try S3TestEnvironment.store(configuration)
        do {
            try store.put("k/avatar.png", data: [1], options: Self.png)
            Issue.record("no error")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.isTransient)
            #expect(error.httpStatus == nil)
            #expect(error.attempts == 1)
            #expect(error.operation == .put)
        }
        #expect(throws: StorageError.self) { try store.ping() }
    }

    @Test func keysWithSpacesUnicodeAndReservedCharacters() throws {
        let store = try S3TestEnvironment.store(S3TestEnvironment.require())
        let prefix = S3TestEnvironment.uniquePrefix("unicode")
        let keys = [
            prefix + "/Zoë Ünïcødé/アバター 512.png",
            prefix + "/plus+and&amp=eq;semi,comma'quote(1)!*@$.png",
            prefix + "/percent%20literal ~tilde.png",
        ]
        for (index, key) in keys.enumerated() {
            try store.put(key, data: [UInt8(index), 42], options: Self.png)
        }
        for (index, key) in keys.enumerated() {
            #expect(try store.exists(key), "\(index)")
            #expect(try store.get(key).data == [UInt8(index), 42], "\(index)")
        }
        // The server stored exactly these names (not an encoding of them): it lists them back verbatim.
        #expect(try store.listKeys(prefix: prefix + "/").sorted() == keys.sorted())
        // The literal "%20" key and a key with a real space are different objects.
        #expect(try store.exists(prefix + "/percent  literal ~tilde.png") == false)
        for key in keys {
            try store.delete(key)
            #expect(try store.exists(key) == false)
        }
    }

    /// A zero-byte upload is an empty image, not an outage: SeaweedFS (like S3) answers a range request on an
    /// empty object with 416, which used to end such a job as STORAGE_UNAVAILABLE on every replay.
    @Test func anEmptyObjectIsReadAsEmpty() throws {
        let store = try S3TestEnvironment.store(S3TestEnvironment.require())
        let key = S3TestEnvironment.uniquePrefix("empty") + "/source.jpg"
        try store.put(key, data: [], options: PutOptions(contentType: "image/jpeg"))
        #expect(try store.get(key, maxBytes: 1000).data == [])
        try store.delete(key)
    }

    @Test func largeObjectsRoundTrip() throws {
        let store = try S3TestEnvironment.store(S3TestEnvironment.require())
        let key = S3TestEnvironment.uniquePrefix("large") + "/source.jpg"
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<(6 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        try store.put(key, data: bytes, options: PutOptions(contentType: "image/jpeg"))
        #expect(try store.get(key).data == bytes)
        try store.delete(key)
    }

    @Test func concurrentCallsFromDispatchWorkerThreads() throws {
        let store = try S3TestEnvironment.store(S3TestEnvironment.require())
        let prefix = S3TestEnvironment.uniquePrefix("concurrent")
        let failures = Counter()
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            let key = "\(prefix)/user-\(index)/avatar_512.png"
            let bytes = Array(repeating: UInt8(index), count: 1000 + index)
            do {
                try store.put(key, data: bytes, options: Self.png)
                if try store.get(key).data != bytes { failures.increment() }
                try store.delete(key)
            } catch {
                failures.increment()
            }
        }
        #expect(failures.value == 0)
    }

    @Test func pingChecksTheBucket() throws {
        var configuration = try S3TestEnvironment.require()
        try S3TestEnvironment.store(configuration).ping()
        configuration.bucket = "no-such-bucket-\(UUID().uuidString.lowercased().prefix(8))"
        let missing = try S3TestEnvironment.store(configuration)
        do {
            try missing.ping()
            Issue.record("no error")
        } catch {
            #expect(error.code == .notFound)
            #expect(error.operation == .ping)
        }
    }

    @Test func publicURLUsesTheConfiguredBase() throws {
        let store = try S3TestEnvironment.store(S3TestEnvironment.require())
        #expect(store.publicURL(for: "users/u 1/a.png") == "https://cdn.example.test/media/users/u%201/a.png")
    }
}
