import Foundation
import Storage

/// A real store with hooks around its PUTs and its listings, for the tests that hold a write in flight (a PUT that
/// reaches the store late, after its worker lost the user's lock) or watch what a caller lists.
struct HookedStore: ObjectStore {
    let base: any ObjectStore
    /// The store's write deadline (`ObjectStore.writeDeadline`).
    var writeDeadline: Duration = .zero
    /// Runs with the key before a PUT reaches `base`.
    var beforePut: @Sendable (String) -> Void = { _ in }
    /// Runs with the key once a PUT reached `base`.
    var afterPut: @Sendable (String) -> Void = { _ in }
    /// Runs with the prefix after a listing.
    var afterListing: @Sendable (String) -> Void = { _ in }
    /// While it answers true, a DELETE fails as an outage would (`unavailable`, transient) before reaching `base`.
    var deletesFail: @Sendable () -> Bool = { false }

    func put(_ key: String, data: [UInt8], options: PutOptions) throws(StorageError) {
        beforePut(key)
        try base.put(key, data: data, options: options)
        afterPut(key)
    }

    func keys(withPrefix prefix: String) throws(StorageError) -> [String] {
        let keys = try base.keys(withPrefix: prefix)
        afterListing(prefix)
        return keys
    }

    func get(_ key: String) throws(StorageError) -> StoredObject { try base.get(key) }
    func get(_ key: String, maxBytes: Int) throws(StorageError) -> StoredObject {
        try base.get(key, maxBytes: maxBytes)
    }
    func copy(from source: String, to destination: String, options: PutOptions) throws(StorageError) {
        try base.copy(from: source, to: destination, options: options)
    }
    func exists(_ key: String) throws(StorageError) -> Bool { try base.exists(key) }
    func delete(_ key: String) throws(StorageError) {
        if deletesFail() { throw StorageError(code: .unavailable, operation: .delete) }
        try base.delete(key)
    }
    func ping() throws(StorageError) { try base.ping() }
    func publicURL(for key: String) -> String? { base.publicURL(for: key) }
    var lateWriteHorizon: Duration { base.lateWriteHorizon }
    func versioning() throws(StorageError) -> BucketVersioning { try base.versioning() }
    func deleteNoncurrentVersions(withPrefix prefix: String) throws(StorageError) -> Int {
        try base.deleteNoncurrentVersions(withPrefix: prefix)
    }
    func deleteNoncurrentVersions(of key: String) throws(StorageError) -> Int {
        try base.deleteNoncurrentVersions(of: key)
    }
}
