import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An `ObjectStore` on a local directory: the key is the path below `root`.
///
/// `put` is atomic and durable: the bytes go to a temporary file in the target's directory (`.<name>.<random>
/// .tmp`), which is fsynced and renamed over the target, and the directory is fsynced; a reader sees the old
/// or the new file, never a partial one, and a failed write leaves no temporary file behind. Missing
/// directories are created. The content type is not stored: `get` derives it from the key's extension
/// (`ContentTypes`), and Cache-Control is ignored.
///
/// Calls block on file I/O: use Dispatch worker threads, as for every `ObjectStore`.
public final class LocalDirectoryStore: ObjectStore {
    public let root: URL
    private let rootPath: String
    private let publicBaseURL: String?

    /// Uses (and creates, if needed) the directory `root`. Throws `.invalidConfiguration` for a non-file URL,
    /// `.io` / `.accessDenied` / `.rejected` when the directory cannot be created.
    public init(root: URL, publicBaseURL: String? = nil) throws(StorageError) {
        guard root.isFileURL else { throw .invalidConfiguration("root must be a file URL") }
        self.root = root.standardizedFileURL
        var path = self.root.path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        rootPath = path
        self.publicBaseURL = publicBaseURL
        try FileIO.makeDirectories(rootPath, operation: .configure)
    }

    public func get(_ key: String) throws(StorageError) -> StoredObject {
        let data = try FileIO.readFile(path(for: key), operation: .get)
        return StoredObject(data: data, contentType: ContentTypes.forKey(key))
    }

    public func get(_ key: String, maxBytes: Int) throws(StorageError) -> StoredObject {
        let data = try FileIO.readFile(path(for: key), operation: .get, maxBytes: maxBytes)
        return StoredObject(data: data, contentType: ContentTypes.forKey(key))
    }

    public func put(_ key: String, data: [UInt8], options: PutOptions) throws(StorageError) {
        let target = try path(for: key)
        let directory = String(target[..<target.lastIndex(of: "/")!])
        try FileIO.makeDirectories(directory, operation: .put)
        try FileIO.writeAtomically(data, to: target, directory: directory)
    }

    /// A hard link where the file system allows it (`FileIO.linkAtomically`: atomic and durable like `put`,
    /// without writing or fsyncing the bytes again), else a read and a `put`.
    public func copy(from source: String, to destination: String, options: PutOptions) throws(StorageError) {
        let sourcePath = try path(for: source)
        let target = try path(for: destination)
        let directory = String(target[..<target.lastIndex(of: "/")!])
        try FileIO.makeDirectories(directory, operation: .put)
        if try FileIO.linkAtomically(sourcePath, to: target, directory: directory) { return }
        let data = try FileIO.readFile(sourcePath, operation: .get)
        try put(destination, data: data, options: options)
    }

    public func exists(_ key: String) throws(StorageError) -> Bool {
        try FileIO.isRegularFile(path(for: key), operation: .exists)
    }

    public func delete(_ key: String) throws(StorageError) {
        try FileIO.removeFile(path(for: key))
    }

    /// The files below the prefix's directory whose keys start with `prefix`; temporary files of writes in
    /// progress (hidden names) are not keys.
    public func keys(withPrefix prefix: String) throws(StorageError) -> [String] {
        try ObjectKey.validatePrefix(prefix)
        let directory = prefix.lastIndex(of: "/").map { String(prefix[..<$0]) } ?? ""
        let base = directory.isEmpty ? rootPath : rootPath + "/" + directory
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: base, isDirectory: &isDirectory), isDirectory.boolValue else {
            return []
        }
        guard let walker = FileManager.default.enumerator(atPath: base) else {
            throw StorageError(code: .io, operation: .get, detail: "cannot list a directory")
        }
        var keys: [String] = []
        while let relative = walker.nextObject() as? String {
            var entryIsDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: base + "/" + relative, isDirectory: &entryIsDirectory),
                !entryIsDirectory.boolValue, !(relative.split(separator: "/").last?.hasPrefix(".") ?? true)
            else { continue }
            let key = directory.isEmpty ? relative : directory + "/" + relative
            if key.hasPrefix(prefix) { keys.append(key) }
        }
        return keys.sorted()
    }

    /// Succeeds when the root is a directory this process can write to.
    public func ping() throws(StorageError) {
        var info = stat()
        guard stat(rootPath, &info) == 0 else { throw FileIO.error(errno: errno, operation: .ping) }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw StorageError(code: .notFound, operation: .ping, detail: "root is not a directory")
        }
        guard access(rootPath, W_OK | X_OK) == 0 else { throw FileIO.error(errno: errno, operation: .ping) }
    }

    public func publicURL(for key: String) -> String? {
        joinPublicURL(base: publicBaseURL, key: key)
    }

    /// The file path for a validated key. `ObjectKey.validate` rules out `..`, `.`, empty segments, a
    /// leading `/` and backslashes, so the path cannot leave `root`.
    func path(for key: String) throws(StorageError) -> String {
        try ObjectKey.validate(key)
        return rootPath == "/" ? "/" + key : rootPath + "/" + key
    }
}
