import Foundation
import Storage
import Testing

/// A fresh directory under the system temporary directory, removed by `cleanup()`.
struct TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("storage-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func cleanup() { try? FileManager.default.removeItem(at: url) }

    /// Every file below the directory, as paths relative to it, sorted.
    func allFiles() -> [String] {
        let base = url.standardizedFileURL.path
        let enumerator = FileManager.default.enumerator(atPath: base)
        var files: [String] = []
        while let next = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: base + "/" + next, isDirectory: &isDirectory),
                !isDirectory.boolValue
            {
                files.append(next)
            }
        }
        return files.sorted()
    }
}

@Suite struct LocalDirectoryStoreTests {
    static let png = PutOptions(contentType: "image/png", cacheControl: "public, max-age=60")

    @Test func putGetExistsDeleteRoundTrip() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanup() }
        let store = try LocalDirectoryStore(root: directory.url)
        let key = "users/0b7c/avatar_512.png"
        let bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0, 1, 2, 255]

        #expect(try store.exists(key) == false)
        try store.put(key, data: bytes, options: Self.png)
        #expect(try store.exists(key))
        let object = try store.get(key)
        #expect(object.data == bytes)
        #expect(object.contentType == "image/png")
        #expect(directory.allFiles() == [key])

        try store.delete(key)
        #expect(try store.exists(key) == false)
        #expect(throws: StorageError.self) { try store.get(key) }
        try store.delete(key)  // deleting a missing key succeeds, as in S3
    }

    @Test func copyReplacesTheDestinationAndKeepsTheSource() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanup() }
        let store = try LocalDirectoryStore(root: directory.url)
        try store.put("users/0b7c/avatar_512.png", data: [1], options: Self.png)
        try store.put("users/0b7c/versions/2/avatar_512.png", data: [7, 8], options: Self.png)
        try store.copy(from: "users/0b7c/versions/2/avatar_512.png", to: "users/0b7c/avatar_512.png", options: Self.png)
        #expect(try store.get("users/0b7c/avatar_512.png").data == [7, 8])
        #expect(try store.get("users/0b7c/versions/2/avatar_512.png").data == [7, 8])
        do {
            try store.copy(
                from: "users/0b7c/versions/3/avatar_512.png", to: "users/0b7c/avatar_512.png", options: Self.png)
            Issue.record("copied a missing object")
        } catch {
            #expect(error.code == .notFound)
        }
        #expect(try store.get("users/0b7c/avatar_512.png").data == [7, 8])
    }

    @Test("copy links the file instead of writing it again; the keys stay independent, and no temporary is left")
    func copyLinks() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanup() }
        let store = try LocalDirectoryStore(root: directory.url)
        let versioned = "users/0b7c/versions/2/avatar_512.png"
        let published = "users/0b7c/avatar_512.png"
        try store.put(versioned, data: [7, 8], options: Self.png)
        try store.copy(from: versioned, to: published, options: Self.png)
        let base = directory.url.standardizedFileURL.path
        func inode(_ key: String) throws -> UInt64 {
            let attributes = try FileManager.default.attributesOfItem(atPath: base + "/" + key)
            return (attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0
        }
        #expect(try inode(versioned) == inode(published), "one file, two names")
        // Copying again onto a link of the same file (a repair) changes nothing and leaves no temporary name.
        try store.copy(from: versioned, to: published, options: Self.png)
        #expect(directory.allFiles() == [published, versioned])
        // A later put to either key is a new file: the other keeps its bytes.
        try store.put(versioned, data: [9], options: Self.png)
        #expect(try store.get(published).data == [7, 8])
        try store.delete(versioned)
        #expect(try store.get(published).data == [7, 8])
        #expect(directory.allFiles() == [published])
    }

    /// Issue 7, finding 3: the size comes from `stat`, before the body is read.
    @Test func getWithACapRefusesALargerFileAsTooLarge() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanup() }
        let store = try LocalDirectoryStore(root: directory.url)
        let bytes = [UInt8](repeating: 7, count: 100)
        try store.put("uploads/big.jpg", data: bytes, options: Self.png)
        #expect(try store.get("uploads/big.jpg", maxBytes: 100).data == bytes)
        do {
            _ = try store.get("uploads/big.jpg", maxBytes: 99)
            Issue.record("no error")
        } catch {
            #expect(error.code == .tooLarge)
            #expect(!error.isTransient)
        }
    }

    @Test func getOfAMissingKeyIsNotFoundAndPermanent() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanup() }
        let store = try LocalDirectoryStore(root: directory.url)
        for key in ["missing.png", "no/such/dir/x.png"] {
            do {
                _ = try store.get(key)
                Issue.record("no error")
            } catch {
                #expect(error.code == .notFound)
                #expect(!error.isTransient)
                #expect(error.operation == .get)
                #expect(!error.description.contains(directory.url.path))
                #expect(!error.debugDescription.contains(directory.url.path))
            }
        }
    }

    @Test func overwriteReplacesTheFileAndLeavesNoTemporaryFiles() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanup() }
        let store = try LocalDirectoryStore(root: directory.url)
        let key = "users/u1/avatar_512.png"
        try store.put(key, data: Array(repeating: 1, count: 100_000), options: Self.png)
        try store.put(key, data: [2, 2, 2], options: Self.png)
        #expect(try store.get(key).data == [2, 2, 2])
        try store.put(key, data: [], options: Self.png)
        #expect(try store.get(key).data == [])
        #expect(directory.allFiles() == [key])
    }

    @Test func readersNeverSeeAPartialWrite() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanup() }
        let store = try LocalDirectoryStore(root: directory.url)
        let key = "users/u1/avatar_512.png"
        let first = [UInt8](repeating: 0xAA, count: 1 << 20)
        let second = [UInt8](repeating: 0x55, count: (1 << 20) + 4096)
        try store.put(key, data: first, options: Self.png)

        let torn = Counter()
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            if worker == 0 {
                for round in 0..<40 {
                    try? store.put(key, data: round.isMultiple(of: 2) ? second : first, options: Self.png)
                }
            } else {
                for _ in 0..<200 {
                    guard let data = try? store.get(key).data else {
                        torn.increment()
                        continue
                    }
                    if data != first && data != second { torn.increment() }
                }
            }
        }
        #expect(torn.value == 0)
        #expect(directory.allFiles() == [key])
    }

    @Test func aFailedWriteLeavesNoTemporaryFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanup() }
        let store = try LocalDirectoryStore(root: directory.url)
        try store.put("a/b.png", data: [1], options: Self.png)
        // "a" is a directory now, so an object cannot be written under key "a".
        do {
            try store.put("a", data: [2], options: Self.png)
            Issue.record("no error")
        } catch {
            #expect(error.code == .rejected)
            #expect(!error.isTransient)
        }
        // and "a/b.png" is a file, so nothing can go below it.
        #expect(throws: StorageError.self) { try store.put("a/b.png/c", data: [3], options: Self.png) }
        #expect(directory.allFiles() == ["a/b.png"])
        #expect(try store.exists("a") == false)
        #expect(try store.get("a/b.png").data == [1])
    }

    @Test func invalidKeysAreRefusedBeforeTouchingTheDisk() throws {
        let parent = try TemporaryDirectory()
        defer { parent.cleanup() }
        let store = try LocalDirectoryStore(root: parent.url.appendingPathComponent("root"))
        for key in ["../outside.png", "/etc/passwd", "a/../../outside.png", "a\\b"] {
            do {
                try store.put(key, data: [1], options: Self.png)
                Issue.record("accepted an invalid key")
            } catch {
                #expect(error.code == .invalidKey)
            }
            #expect(throws: StorageError.self) { try store.get(key) }
            #expect(throws: StorageError.self) { try store.exists(key) }
            #expect(throws: StorageError.self) { try store.delete(key) }
        }
        #expect(parent.allFiles().isEmpty)
    }

    @Test func createsTheRootAndNestedDirectories() throws {
        let parent = try TemporaryDirectory()
        defer { parent.cleanup() }
        let root = parent.url.appendingPathComponent("deep/er/root", isDirectory: true)
        let store = try LocalDirectoryStore(root: root)
        try store.ping()
        try store.put("x/y/z/w.webp", data: [9], options: PutOptions(contentType: "image/webp"))
        #expect(try store.get("x/y/z/w.webp").contentType == "image/webp")
        #expect(parent.allFiles() == ["deep/er/root/x/y/z/w.webp"])
    }

    @Test func keysWithSpacesAndUnicodeAreFiles() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanup() }
        let store = try LocalDirectoryStore(root: directory.url)
        let key = "users/Zoë Ünïcødé/アバター 512.JPG"
        try store.put(key, data: [7, 7], options: PutOptions(contentType: "image/jpeg"))
        #expect(try store.get(key).data == [7, 7])
        #expect(try store.get(key).contentType == "image/jpeg")
        #expect(directory.allFiles() == [key])
    }

    @Test func contentTypeComesFromTheExtension() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanup() }
        let store = try LocalDirectoryStore(root: directory.url)
        try store.put("noext", data: [1], options: PutOptions(contentType: "image/png"))
        #expect(try store.get("noext").contentType == nil)
        #expect(ContentTypes.forKey("a/b.PNG") == "image/png")
        #expect(ContentTypes.forKey("a.b/c") == nil)
        #expect(ContentTypes.forKey(".png") == nil)
    }

    @Test func pingFailsWhenTheRootDisappears() throws {
        let directory = try TemporaryDirectory()
        let store = try LocalDirectoryStore(root: directory.url)
        try store.ping()
        directory.cleanup()
        do {
            try store.ping()
            Issue.record("no error")
        } catch {
            #expect(error.code == .notFound)
            #expect(error.operation == .ping)
        }
    }

    @Test func publicURLJoinsTheBaseAndTheEncodedKey() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanup() }
        let plain = try LocalDirectoryStore(root: directory.url)
        #expect(plain.publicURL(for: "a.png") == nil)
        let served = try LocalDirectoryStore(root: directory.url, publicBaseURL: "https://cdn.example.com/media/")
        #expect(
            served.publicURL(for: "users/u1/avatar_512.png") == "https://cdn.example.com/media/users/u1/avatar_512.png")
        #expect(served.publicURL(for: "a b/ü+.png") == "https://cdn.example.com/media/a%20b/%C3%BC%2B.png")
        #expect(served.publicURL(for: "../x") == nil)
    }

    @Test func rootMustBeAFileURL() {
        do {
            _ = try LocalDirectoryStore(root: URL(string: "https://example.com/x")!)
            Issue.record("no error")
        } catch {
            #expect(error.code == .invalidConfiguration)
        }
    }
}

/// `@unchecked Sendable`: the count is only touched under `lock`.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func increment() { lock.withLock { count += 1 } }
}
