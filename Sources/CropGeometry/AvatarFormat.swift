/// How a published avatar is encoded: one type for the renderer (`Imaging`), the wire protocol
/// (`CropProtocol`, which maps it to the protobuf enum) and the CLI. docs/FORMATS.md says which to serve
/// to whom; docs/ARCHITECTURE.md §2 step 7 how each is written (never with the source's metadata).
///
/// The raw values are the spellings the CLI, the configuration and the JSON reports use ("png", "jpeg",
/// "webp", "avif").
public enum AvatarFormat: String, Sendable, Hashable, CaseIterable, Codable {
    case png
    case jpeg
    case webp
    case avif

    /// File extension used in storage keys and file names ("png", "jpg", "webp", "avif").
    public var fileExtension: String {
        switch self {
        case .png: "png"
        case .jpeg: "jpg"
        case .webp: "webp"
        case .avif: "avif"
        }
    }

    /// HTTP content type for uploads.
    public var contentType: String {
        switch self {
        case .png: "image/png"
        case .jpeg: "image/jpeg"
        case .webp: "image/webp"
        case .avif: "image/avif"
        }
    }

    /// The format a file name's extension names ("avatar.webp", "a.JPG", "x.jpeg"), or nil for an extension no
    /// format is written with.
    public init?(fileName: String) {
        guard let dot = fileName.lastIndex(of: "."), !fileName[dot...].contains("/") else { return nil }
        let ext = fileName[fileName.index(after: dot)...].lowercased()
        if ext == "jpeg" {
            self = .jpeg
            return
        }
        guard let format = Self.allCases.first(where: { $0.fileExtension == ext }) else { return nil }
        self = format
    }
}
