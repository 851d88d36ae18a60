import CropGeometry
import Foundation

/// The storage layout of published avatars (docs/ARCHITECTURE.md §3): their object-store keys,
/// `users/{uid}/avatar_{size}.{png|jpg}` with the user id always lower-cased, the versioned objects behind
/// them, and their public URLs. The user id is a validated `UUID`, so a key can never escape the user's
/// prefix; every key it builds passes `ObjectKey.validate`.
public enum AvatarKeys {
    /// "users/{uid}/" for a user.
    public static func userPrefix(_ userID: UUID) -> String {
        "users/\(userID.uuidString.lowercased())/"
    }

    /// "users/{uid}/avatar_512.png" (JPEG: ".jpg").
    public static func avatarKey(userID: UUID, size: Int, format: AvatarFormat) -> String {
        "\(userPrefix(userID))avatar_\(size).\(format.fileExtension)"
    }

    /// The versioned object behind a published key: "users/{uid}/avatar_512.png" at version 7, uploaded by
    /// the publication tagged "3f2a…", is "users/{uid}/versions/7/3f2a…/avatar_512.png". The worker uploads
    /// there first and copies onto the public key once the database names the version. The tag is unique per
    /// job (docs/ARCHITECTURE.md §7), so a worker whose upload lands late never overwrites another's version N;
    /// without one (versions published before the tag) the object is "users/{uid}/versions/7/avatar_512.png".
    public static func versionedKey(_ key: String, version: Int64, publication tag: String? = nil) -> String {
        let folder = tag.map { "versions/\(version)/\($0)/" } ?? "versions/\(version)/"
        guard let slash = key.lastIndex(of: "/") else { return folder + key }
        return "\(key[...slash])\(folder)\(key[key.index(after: slash)...])"
    }

    /// "{baseURL}/{key}?v={version}": the cache-busting public URL of a published object.
    /// Trailing slashes of `baseURL` are ignored; an empty `baseURL` gives an empty string
    /// (no public URL configured).
    public static func versionedURL(baseURL: String, key: String, version: Int64) -> String {
        var base = Substring(baseURL)
        while base.hasSuffix("/") { base = base.dropLast() }
        guard !base.isEmpty else { return "" }
        return "\(base)/\(key)?v=\(version)"
    }
}
