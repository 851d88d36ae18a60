import Synchronization

/// Versioned buckets (docs/DATA.md, window 1): on a bucket with versioning, a DELETE only adds a delete marker and a
/// PUT over a key keeps the old object as a noncurrent version, readable by anyone with `s3:GetObjectVersion`. What
/// a forget deletes must go by version: `GetBucketVersioning` and `GetObjectLockConfiguration` say whether the bucket
/// keeps versions (asked once, then remembered), and `ListObjectVersions` with `DELETE ?versionId=` removes them.
/// The rights this needs: `s3:GetBucketVersioning`, `s3:GetBucketObjectLockConfiguration`,
/// `s3:ListBucketVersions`, `s3:DeleteObjectVersion` (docs/OPERATIONS.md).
extension S3Store {
    /// One entry of a `ListObjectVersions` answer.
    struct ObjectVersion: Equatable, Sendable {
        var key: String
        var versionID: String
        var isLatest: Bool
        var isDeleteMarker: Bool
    }

    public func versioning() throws(StorageError) -> BucketVersioning {
        if let known = knownVersioning.withLock({ $0 }) { return known }
        let answer = try perform(.ping, method: "GET", key: nil, query: [("versioning", "")])
        guard answer.status == 200 else { throw Self.error(for: answer, operation: .ping) }
        let status = XMLText.elements("Status", in: String(decoding: answer.body, as: UTF8.self)).first
        // An Object Lock configuration exists only on a bucket created with it; any other answer (404
        // ObjectLockConfigurationNotFoundError, a store that does not implement it) means none.
        let lock = try perform(.ping, method: "GET", key: nil, query: [("object-lock", "")])
        if lock.status == 401 || lock.status == 403 { throw Self.error(for: lock, operation: .ping) }
        let locked =
            lock.status == 200
            && XMLText.elements("ObjectLockEnabled", in: String(decoding: lock.body, as: UTF8.self)).first == "Enabled"
        let versioning = BucketVersioning(
            keepsVersions: status == "Enabled" || status == "Suspended", objectLock: locked)
        knownVersioning.withLock { $0 = versioning }
        return versioning
    }

    public func deleteNoncurrentVersions(withPrefix prefix: String) throws(StorageError) -> Int {
        try ObjectKey.validatePrefix(prefix)
        guard try versioning().keepsVersions else { return 0 }
        return try deleteNoncurrent(try versions(withPrefix: prefix))
    }

    public func deleteNoncurrentVersions(of key: String) throws(StorageError) -> Int {
        try ObjectKey.validate(key)
        guard try versioning().keepsVersions else { return 0 }
        return try deleteNoncurrent(try versions(withPrefix: key).filter { $0.key == key })
    }

    /// Deletes every version in `listed` but the current objects: old versions first, then the delete markers (a
    /// key whose newest entry is a marker is then gone entirely).
    private func deleteNoncurrent(_ listed: [ObjectVersion]) throws(StorageError) -> Int {
        let doomed = listed.filter { !($0.isLatest && !$0.isDeleteMarker) }
        for version in doomed.filter({ !$0.isDeleteMarker }) + doomed.filter(\.isDeleteMarker) {
            try delete(version.key, versionID: version.versionID)
        }
        return doomed.count
    }

    /// `DELETE ?versionId=`: removes that version (or delete marker) for good.
    func delete(_ key: String, versionID: String) throws(StorageError) {
        try ObjectKey.validate(key)
        let response = try perform(.delete, method: "DELETE", key: key, query: [("versionId", versionID)])
        if (200..<300).contains(response.status) || response.status == 404 { return }
        throw Self.error(for: response, operation: .delete)
    }

    /// `ListObjectVersions` with `prefix`: every version and delete marker of every key under it, following the
    /// markers until the listing is complete.
    func versions(withPrefix prefix: String) throws(StorageError) -> [ObjectVersion] {
        var versions: [ObjectVersion] = []
        var marker: (key: String, version: String?)?
        repeat {
            var query: [(name: String, value: String)] = [("versions", ""), ("prefix", prefix)]
            if let marker {
                query.append(("key-marker", marker.key))
                if let version = marker.version { query.append(("version-id-marker", version)) }
            }
            let response = try perform(.get, method: "GET", key: nil, query: query)
            guard response.status == 200 else { throw Self.error(for: response, operation: .get) }
            let text = String(decoding: response.body, as: UTF8.self)
            for (element, isDeleteMarker) in [("Version", false), ("DeleteMarker", true)] {
                for entry in XMLText.elements(element, in: text) {
                    guard let key = XMLText.elements("Key", in: entry).first,
                        let version = XMLText.elements("VersionId", in: entry).first
                    else { continue }
                    versions.append(
                        ObjectVersion(
                            key: key, versionID: version,
                            isLatest: XMLText.elements("IsLatest", in: entry).first == "true",
                            isDeleteMarker: isDeleteMarker))
                }
            }
            marker =
                XMLText.elements("IsTruncated", in: text).first == "true"
                ? XMLText.elements("NextKeyMarker", in: text).first.map {
                    ($0, XMLText.elements("NextVersionIdMarker", in: text).first)
                } : nil
        } while marker != nil
        return versions
    }

    /// `PutBucketVersioning`: for tests and tools that need a versioned bucket (`CreateBucket` first with
    /// `createBucket`).
    func setVersioning(enabled: Bool) throws(StorageError) {
        let body = Array(
            """
            <VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">\
            <Status>\(enabled ? "Enabled" : "Suspended")</Status></VersioningConfiguration>
            """.utf8)
        let response = try perform(.configure, method: "PUT", key: nil, query: [("versioning", "")], body: body)
        guard (200..<300).contains(response.status) else { throw Self.error(for: response, operation: .configure) }
        knownVersioning.withLock { $0 = nil }
    }

    /// `CreateBucket` of the store's bucket, for tests and tools.
    func createBucket() throws(StorageError) {
        let response = try perform(.configure, method: "PUT", key: nil)
        guard (200..<300).contains(response.status) || response.status == 409 else {
            throw Self.error(for: response, operation: .configure)
        }
    }
}
