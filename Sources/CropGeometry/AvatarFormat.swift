/// How a published avatar is encoded: one type for the renderer (`Imaging`), the wire protocol
/// (`CropProtocol`, which maps it to the protobuf enum) and the CLI. WebP is not offered: libvips
/// 8.14's webpsave ignores `strip` and would publish EXIF (GPS included).
///
/// The raw values are the spellings the CLI and the JSON reports use ("png", "jpeg").
public enum AvatarFormat: String, Sendable, Hashable, CaseIterable, Codable {
    case png
    case jpeg

    /// File extension used in storage keys and file names ("png", "jpg").
    public var fileExtension: String {
        switch self {
        case .png: "png"
        case .jpeg: "jpg"
        }
    }

    /// HTTP content type for uploads.
    public var contentType: String {
        switch self {
        case .png: "image/png"
        case .jpeg: "image/jpeg"
        }
    }
}
