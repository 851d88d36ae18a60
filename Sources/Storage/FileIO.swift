import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The POSIX calls behind `LocalDirectoryStore`, each failure mapped through `error(errno:operation:)`.
/// Error details carry the system error text only, never the path (it contains user ids).
enum FileIO {
    static func error(errno code: Int32, operation: StorageError.Operation, call: String = "") -> StorageError {
        let text = String(cString: strerror(code))
        let detail = call.isEmpty ? "\(text) (errno \(code))" : "\(call): \(text) (errno \(code))"
        switch code {
        case ENOENT:
            return StorageError(code: .notFound, operation: operation, detail: detail)
        case EACCES, EPERM, EROFS:
            return StorageError(code: .accessDenied, operation: operation, detail: detail)
        case ENOTDIR, EISDIR, EEXIST, ENAMETOOLONG, ELOOP:
            // A key that collides with a directory or a file where a directory is needed ("a" vs "a/b").
            return StorageError(code: .rejected, operation: operation, detail: detail)
        case EINTR, EAGAIN, EBUSY:
            return StorageError(code: .io, isTransient: true, operation: operation, detail: detail)
        default:
            return StorageError(code: .io, operation: operation, detail: detail)
        }
    }

    /// `mkdir -p`.
    static func makeDirectories(_ path: String, operation: StorageError.Operation) throws(StorageError) {
        var info = stat()
        if stat(path, &info) == 0 {
            if (info.st_mode & S_IFMT) == S_IFDIR { return }
            throw StorageError(code: .rejected, operation: operation, detail: "a file is in the way of a directory")
        }
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            try makeDirectories(String(path[..<slash]), operation: operation)
        }
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            throw error(errno: errno, operation: operation, call: "mkdir")
        }
    }

    /// The file's bytes; over `maxBytes` (by `fstat` before reading, or while reading) is `.tooLarge`.
    static func readFile(
        _ path: String, operation: StorageError.Operation, maxBytes: Int = .max
    ) throws(StorageError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw notFoundAware(errno: errno, operation: operation, call: "open") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw error(errno: errno, operation: operation, call: "fstat") }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw StorageError(code: .notFound, operation: operation, detail: "not a regular file")
        }
        guard Int(info.st_size) <= maxBytes else {
            throw StorageError(code: .tooLarge, operation: operation, detail: "\(info.st_size) bytes > \(maxBytes)")
        }
        var bytes = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: max(64 * 1024, min(Int(info.st_size) + 1, 8 << 20)))
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw error(errno: errno, operation: operation, call: "read")
            }
            bytes.append(contentsOf: chunk[0..<count])
            guard bytes.count <= maxBytes else {
                throw StorageError(code: .tooLarge, operation: operation, detail: "grew past \(maxBytes) bytes")
            }
        }
        return bytes
    }

    static func isRegularFile(_ path: String, operation: StorageError.Operation) throws(StorageError) -> Bool {
        var info = stat()
        if stat(path, &info) == 0 { return (info.st_mode & S_IFMT) == S_IFREG }
        if errno == ENOENT || errno == ENOTDIR { return false }
        throw error(errno: errno, operation: operation, call: "stat")
    }

    static func removeFile(_ path: String) throws(StorageError) {
        if unlink(path) == 0 { return }
        let code = errno
        if code == ENOENT || code == ENOTDIR { return }
        if code == EISDIR || code == EPERM, (try? isRegularFile(path, operation: .delete)) == false {
            return  // a directory, not an object: nothing to delete under this key
        }
        throw error(errno: code, operation: .delete, call: "unlink")
    }

    /// Writes `bytes` to a temporary file next to `path`, fsyncs it, renames it over `path`, fsyncs the
    /// directory. Removes the temporary file on every failure.
    static func writeAtomically(_ bytes: [UInt8], to path: String, directory: String) throws(StorageError) {
        let (temporary, fd) = createTemporary(for: path, in: directory) {
            open($0, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        }
        guard fd >= 0 else { throw error(errno: errno, operation: .put, call: "open") }

        var failure: StorageError?
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                failure = error(errno: errno, operation: .put, call: "write")
                break
            }
            offset += written
        }
        if failure == nil && fsync(fd) != 0 { failure = error(errno: errno, operation: .put, call: "fsync") }
        if close(fd) != 0 && failure == nil { failure = error(errno: errno, operation: .put, call: "close") }
        if failure == nil && rename(temporary, path) != 0 {
            failure = error(errno: errno, operation: .put, call: "rename")
        }
        if let failure {
            unlink(temporary)
            throw failure
        }
        syncDirectory(directory)
    }

    /// Puts a hard link to `source` (a file `writeAtomically` made durable) in place of `path`: linked to a
    /// temporary name next to `path`, renamed over it, directory fsynced. No byte is copied or fsynced again,
    /// and objects are never changed in place (every write is a new file renamed over the key), so the two
    /// keys sharing one file is invisible. Returns false, having changed nothing, where the file system
    /// cannot link the two (another device, no hard links): the caller copies the bytes then.
    static func linkAtomically(_ source: String, to path: String, directory: String) throws(StorageError) -> Bool {
        let (temporary, result) = createTemporary(for: path, in: directory) { link(source, $0) }
        guard result == 0 else {
            switch errno {
            case EXDEV, EPERM, EOPNOTSUPP, EMLINK: return false
            default: throw notFoundAware(errno: errno, operation: .get, call: "link")
            }
        }
        guard rename(temporary, path) == 0 else {
            let failure = error(errno: errno, operation: .put, call: "rename")
            unlink(temporary)
            throw failure
        }
        // When `path` already was a link to the same file, rename(2) succeeds without removing the temporary
        // name; otherwise the name is gone and this fails harmlessly.
        unlink(temporary)
        syncDirectory(directory)
        return true
    }

    /// Creates a temporary name next to `path` (`.<name>.<random>.tmp` in `directory`) with `create`, which
    /// returns a negative value and sets errno on failure; a name already taken (EEXIST) is tried again with
    /// another, up to 8 times. Returns the last name tried and what `create` returned for it (errno as it set).
    private static func createTemporary(for path: String, in directory: String, _ create: (String) -> Int32)
        -> (name: String, result: Int32)
    {
        let name = path[path.index(after: path.lastIndex(of: "/")!)...]
        var temporary = ""
        var result: Int32 = -1
        for _ in 0..<8 {
            let suffix = String(UInt64.random(in: 0...UInt64.max), radix: 16)
            temporary = "\(directory)/.\(name).\(suffix).tmp"
            result = create(temporary)
            if result >= 0 || errno != EEXIST { break }
        }
        return (temporary, result)
    }

    /// Makes the rename durable. Best effort: some file systems refuse fsync on directories.
    private static func syncDirectory(_ directory: String) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    private static func notFoundAware(errno code: Int32, operation: StorageError.Operation, call: String)
        -> StorageError
    {
        // "a/b" where "a" is a file: no such object.
        if code == ENOTDIR || code == EISDIR { return StorageError(code: .notFound, operation: operation) }
        return error(errno: code, operation: operation, call: call)
    }
}
