/// Rules every object key must follow, in both backends, so that a key can never escape the local root
/// directory and means the same thing in S3 and on disk.
public struct ObjectKey {
    /// Maximum key length in UTF-8 bytes (S3's limit).
    public static let maxLength = 1024

    /// Throws `.invalidKey` unless `key` is a relative, `/`-separated path of non-empty segments: no leading
    /// `/`, no empty segment (`a//b`, trailing `/`), no `.` or `..` segment, no backslash, no control
    /// characters (C0, DEL, C1), at most 1024 UTF-8 bytes.
    ///
    /// Segments are split on the `/` byte, as the filesystem and S3 split them: never on Characters,
    /// where a "prepend" scalar such as U+0600 joins the following `/` into one grapheme and hides
    /// a `..` segment (docs/ARCHITECTURE.md §7).
    public static func validate(_ key: String) throws(StorageError) {
        if key.isEmpty { throw .invalidKey("empty key") }
        if key.utf8.count > maxLength { throw .invalidKey("key longer than \(maxLength) bytes") }
        if key.hasPrefix("/") { throw .invalidKey("key starts with /") }
        for scalar in key.unicodeScalars {
            let value = scalar.value
            if value < 0x20 || (0x7F...0x9F).contains(value) { throw .invalidKey("control character in key") }
            if scalar == "\\" { throw .invalidKey("backslash in key") }
        }
        for segment in segments(of: key) {
            if segment.isEmpty { throw .invalidKey("empty path segment in key") }
            if isDotSegment(segment) { throw .invalidKey("dot segment in key") }
        }
    }

    /// `key`'s UTF-8 bytes split on every `/` byte (0x2F, which UTF-8 never uses inside a
    /// multi-byte scalar), empty segments kept.
    public static func segments(of key: String) -> [Substring.UTF8View] {
        key.utf8[...].split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
    }

    /// Whether a segment's bytes are exactly `.` or `..`.
    public static func isDotSegment(_ segment: Substring.UTF8View) -> Bool {
        segment.count <= 2 && !segment.isEmpty && segment.allSatisfy { $0 == UInt8(ascii: ".") }
    }

    /// Throws `.invalidKey` unless `prefix` is a key, or a key followed by `/` (the keys of a "folder").
    public static func validatePrefix(_ prefix: String) throws(StorageError) {
        try validate(prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix)
    }

    /// Whether `key` passes `validate`.
    public static func isValid(_ key: String) -> Bool {
        do { try validate(key) } catch { return false }
        return true
    }
}
