import Foundation
import TestEnvironment
import Testing

@testable import Storage

/// A bucket with versioning on the real S3 service (SeaweedFS), a bucket of each test's own (docs/DATA.md, window
/// 1): a DELETE there only adds a delete marker and a PUT keeps the replaced object; `deleteNoncurrentVersions`
/// removes both kinds for good and never the current objects.
@Suite(.requires(.s3))
struct S3VersionedBucketTests {
    static let png = PutOptions(contentType: "image/png")

    /// A new bucket with versioning enabled.
    static func versionedStore() throws -> S3Store {
        var configuration = try S3TestEnvironment.require()
        configuration.bucket = "versioned-\(UUID().uuidString.lowercased().prefix(18))"
        let store = try S3TestEnvironment.store(configuration)
        try store.createBucket()
        try store.setVersioning(enabled: true)
        return store
    }

    @Test func versioningIsDetected() throws {
        let store = try Self.versionedStore()
        #expect(try store.versioning() == BucketVersioning(keepsVersions: true, objectLock: false))
        let plain = try S3TestEnvironment.store(S3TestEnvironment.require())
        #expect(try plain.versioning().keepsVersions == false)
    }

    @Test func oldVersionsAndDeleteMarkersGoTheCurrentObjectsStay() throws {
        let store = try Self.versionedStore()
        let prefix = S3TestEnvironment.uniquePrefix("versions") + "/"
        let kept = prefix + "avatar_512.png"
        let gone = prefix + "versions/1/avatar_512.png"
        let neighbour = prefix.dropLast() + "-other/avatar_512.png"
        for bytes in [[1], [2]] as [[UInt8]] {
            try store.put(kept, data: bytes, options: Self.png)
            try store.put(gone, data: bytes, options: Self.png)
        }
        try store.put(String(neighbour), data: [9], options: Self.png)
        try store.delete(gone)
        #expect(try store.keys(withPrefix: prefix) == [kept], "the deleted key is hidden...")
        #expect(try store.versions(withPrefix: gone).count == 3, "...but its two versions and a marker remain")

        #expect(try store.deleteNoncurrentVersions(withPrefix: prefix) == 4)
        let left = try store.versions(withPrefix: prefix)
        #expect(left.map(\.key) == [kept])
        #expect(left.first?.isLatest == true)
        #expect(try store.get(kept).data == [2])
        #expect(try store.versions(withPrefix: String(neighbour)).count == 1, "another prefix is untouched")

        try store.put(kept, data: [3], options: Self.png)
        #expect(try store.deleteNoncurrentVersions(of: kept) == 1)
        #expect(try store.versions(withPrefix: kept).count == 1)
    }
}
