import Foundation
import TestEnvironment
import Testing

@testable import Storage

/// docs/DATA.md, window 3, on the real S3 service (SeaweedFS): a write is signed with the time it was decided, and
/// the store refuses one decided longer ago than `S3Store.signatureLifetime`, however late it is sent.
@Suite(.requires(.s3))
struct S3DecidedAtTests {
    @Test func aWriteDecidedTooLongAgoIsRefused() throws {
        let store = try S3TestEnvironment.store(S3TestEnvironment.require())
        let prefix = S3TestEnvironment.uniquePrefix("decided")
        let lifetime = S3Store.signatureLifetime.timeInterval
        let recent = PutOptions(contentType: "image/png", decidedAt: Date().addingTimeInterval(-lifetime + 60))
        let stale = PutOptions(contentType: "image/png", decidedAt: Date().addingTimeInterval(-lifetime - 60))
        try store.put(prefix + "/recent.png", data: [1], options: recent)
        #expect(try store.exists(prefix + "/recent.png"))
        #expect(throws: StorageError.self) { try store.put(prefix + "/stale.png", data: [1], options: stale) }
        #expect(throws: StorageError.self) {
            try store.copy(from: prefix + "/recent.png", to: prefix + "/copied.png", options: stale)
        }
        #expect(try store.keys(withPrefix: prefix + "/") == [prefix + "/recent.png"])
        #expect(store.lateWriteHorizon == S3Store.signatureLifetime + store.writeDeadline)
    }
}
