/// Media types by file extension, for backends that do not store one.
public enum ContentTypes {
    static let byExtension: [String: String] = [
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "webp": "image/webp",
        "gif": "image/gif", "heic": "image/heic", "heif": "image/heif", "avif": "image/avif",
        "tif": "image/tiff", "tiff": "image/tiff", "json": "application/json", "txt": "text/plain",
        "bin": "application/octet-stream",
    ]

    /// The media type for `key`'s extension (case-insensitive), or `nil` when it is unknown.
    public static func forKey(_ key: String) -> String? {
        let name = key.split(separator: "/").last ?? ""
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        return byExtension[name[name.index(after: dot)...].lowercased()]
    }
}
