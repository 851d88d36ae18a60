import Foundation

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
    /// HTTP Cache-Control served with the object, e.g. `public, max-age=86400, immutable`.
    public var cacheControl: String?
    /// When the write was decided (a publication's fence; docs/DATA.md, window 3): S3 signs the request with this
    /// time, and refuses it once that is more than `S3Store.signatureLifetime` away from its own clock, so a write
    /// held up after its fence (a paused VM) cannot land later than that. nil: now.
    public var decidedAt: Date?

    public init(contentType: String, cacheControl: String? = nil, decidedAt: Date? = nil) {
        self.contentType = contentType
        self.cacheControl = cacheControl
        self.decidedAt = decidedAt
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
    /// How long after `PutOptions.decidedAt` a write can still take effect however long the caller was held up
    /// between deciding and sending (S3: the signature's lifetime plus the request's deadline); zero when the
    /// store sets no such bound (the local directory, for development). A forget looks once more that long after
    /// it took the lock (`PendingForgets`, docs/DATA.md, window 3).
    var lateWriteHorizon: Duration { get }
    /// Whether the store keeps old versions of what is replaced or deleted (S3 bucket versioning, enabled or
    /// suspended) and whether it may refuse to delete them (S3 Object Lock). Asked once; the local directory keeps
    /// none.
    func versioning() throws(StorageError) -> BucketVersioning
    /// On a store that keeps versions: deletes every version of every key under `prefix` that is not a key's
    /// current object, and every delete marker, so nothing deleted or replaced there can be read back by version.
    /// Returns how many versions and markers went; zero (and no request) on a store that keeps none.
    func deleteNoncurrentVersions(withPrefix prefix: String) throws(StorageError) -> Int
    /// `deleteNoncurrentVersions(withPrefix:)` for exactly one key.
    func deleteNoncurrentVersions(of key: String) throws(StorageError) -> Int
}

extension ObjectStore {
    public func shutdown() async {}
    public var writeDeadline: Duration { .zero }
    public var lateWriteHorizon: Duration { .zero }
    public func versioning() throws(StorageError) -> BucketVersioning { BucketVersioning() }
    public func deleteNoncurrentVersions(withPrefix prefix: String) throws(StorageError) -> Int { 0 }
    public func deleteNoncurrentVersions(of key: String) throws(StorageError) -> Int { 0 }
}

/// A bucket's versioning (docs/DATA.md, window 1).
public struct BucketVersioning: Equatable, Sendable {
    /// Versioning is enabled, or was and is suspended: deleted and replaced objects may have old versions.
    public var keepsVersions = false
    /// Object Lock is enabled: old versions may be kept past any delete, so a forget cannot be guaranteed.
    public var objectLock = false

    public init(keepsVersions: Bool = false, objectLock: Bool = false) {
        self.keepsVersions = keepsVersions
        self.objectLock = objectLock
    }
}
