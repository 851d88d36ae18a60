import Foundation
import TestEnvironment
import Testing

@testable import Storage

/// `ObjectStore.keys(withPrefix:)`: what a forget deletes, on both backends.
@Suite("Key listing")
struct KeyListingTests {
    static let png = PutOptions(contentType: "image/png")

    /// Puts a user's objects and a neighbour's; returns the user's keys.
    private func populate(_ store: any ObjectStore, root: String) throws -> [String] {
        let mine = [
            "\(root)/users/u1/avatar_512.png", "\(root)/users/u1/avatar_80.png",
            "\(root)/users/u1/versions/3/avatar_512.png", "\(root)/users/u1/versions/3/avatar_80.png",
        ]
        for key in mine + ["\(root)/users/u10/avatar_512.png", "\(root)/users/u2/avatar_512.png"] {
            try store.put(key, data: [1, 2], options: Self.png)
        }
        return mine.sorted()
    }

    @Test func localDirectoryListsEveryKeyUnderThePrefixOnly() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try LocalDirectoryStore(root: root)
        let mine = try populate(store, root: "t")
        // A write in progress is no key.
        FileManager.default.createFile(
            atPath: root.appendingPathComponent("t/users/u1/.avatar_512.png.x.tmp").path, contents: Data([0]))
        #expect(try store.keys(withPrefix: "t/users/u1/").sorted() == mine)
        #expect(try store.keys(withPrefix: "t/users/u1").count == mine.count + 1, "a bare prefix matches u10 too")
        #expect(try store.keys(withPrefix: "t/users/nobody/") == [])
        #expect(throws: StorageError.self) { try store.keys(withPrefix: "/etc/") }
        #expect(throws: StorageError.self) { try store.keys(withPrefix: "t/../") }
    }

    @Test(.requires(.s3)) func s3ListsEveryKeyUnderThePrefixOnly() throws {
        let store = try S3TestEnvironment.store(S3TestEnvironment.require())
        let root = S3TestEnvironment.uniquePrefix("keys")
        let mine = try populate(store, root: root)
        #expect(try store.keys(withPrefix: "\(root)/users/u1/").sorted() == mine)
        #expect(try store.keys(withPrefix: "\(root)/users/u1/", pageSize: 3).sorted() == mine, "two pages")
        #expect(try store.keys(withPrefix: "\(root)/users/nobody/") == [])
        for key in try store.keys(withPrefix: "\(root)/") { try store.delete(key) }
        #expect(try store.keys(withPrefix: "\(root)/") == [])
    }
}
