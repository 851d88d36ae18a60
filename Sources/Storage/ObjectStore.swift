/// An object read from a store.
public struct StoredObject: Sendable {
    public var data: [UInt8]
    /// The object's media type, as stored (S3) or derived from the key's extension (local directory).
    public var contentType: String?
    /// The object's Cache-Control, when the backend keeps it (S3); `nil` for the local directory.
    public var cacheControl: String?

    public init(data: [UInt8], contentType: String?, cacheControl: String? = nil) {
        self.data = data
        self.contentType = contentType
        self.cacheControl = cacheControl
    }
}

/// How to store an object.
public struct PutOptions: Sendable {
    /// Media type, e.g. `image/png`.
    public var contentType: String
    /// HTTP Cache-Control served with the object, e.g. `public, max-age=31536000, immutable`.
    public var cacheControl: String?

    public init(contentType: String, cacheControl: String? = nil) {
        self.contentType = contentType
        self.cacheControl = cacheControl
    }
}

/// A flat key → bytes store: a local directory or an S3-compatible bucket.
///
/// All methods are synchronous and may block for up to the backend's timeout. Call them from Dispatch worker
/// threads (the worker's render pool) or other threads you own, never from Swift's cooperative thread pool
/// (inside `async` code, hop to a Dispatch queue first): a blocked cooperative thread starves every other task.
///
/// Every method validates the key with `ObjectKey.validate` first and throws `.invalidKey` before any I/O.
public protocol ObjectStore: Sendable {
    /// Reads a whole object. Throws `.notFound` when there is none.
    func get(_ key: String) throws(StorageError) -> StoredObject
    /// Reads an object of at most `maxBytes`: throws `.tooLarge` before reading the body when the store's
    /// own size (`stat`, S3 `HEAD`) is over the cap, and stops reading once more than `maxBytes` arrived
    /// (a file that grew, a lying length).
    func get(_ key: String, maxBytes: Int) throws(StorageError) -> StoredObject
    /// Creates or replaces an object (upsert). Readers see either the old or the new bytes, never a mix.
    func put(_ key: String, data: [UInt8], options: PutOptions) throws(StorageError)
    /// Copies the object at `source` onto `destination` (created or replaced), with `options`' content type and
    /// Cache-Control; readers of `destination` see the old or the new bytes, never a mix. Throws `.notFound` when
    /// `source` does not exist. On S3 this is a server-side copy: the bytes do not pass through the caller.
    func copy(from source: String, to destination: String, options: PutOptions) throws(StorageError)
    /// Whether an object exists under `key`.
    func exists(_ key: String) throws(StorageError) -> Bool
    /// Deletes an object. Deleting a key that does not exist succeeds (as in S3).
    func delete(_ key: String) throws(StorageError)
    /// Every key that starts with `prefix` (all of them, page after page on S3), e.g. `users/{uid}/` to erase a
    /// user's objects. An empty list when there are none. Throws `.invalidKey` for an empty or absolute prefix.
    func keys(withPrefix prefix: String) throws(StorageError) -> [String]
    /// Checks that the store is reachable and usable (bucket exists / directory writable), for `/readyz`.
    func ping() throws(StorageError)
    /// The public URL of `key` (configured base URL + percent-encoded key), or `nil` when no base is configured.
    func publicURL(for key: String) -> String?
    /// Releases what the store holds open (S3: its pooled connections) once the calls under way are done; call it
    /// once nothing uses the store any more. Idempotent; a no-op for stores that hold nothing.
    func shutdown() async
    /// How long after a write was sent it can still take effect: a request's deadline (S3), zero for a store whose
    /// writes are done when the call returns. A forget waits this long before its last look (`UserForgetting`).
    var writeDeadline: Duration { get }
}

extension ObjectStore {
    public func shutdown() async {}
    public var writeDeadline: Duration { .zero }
}
