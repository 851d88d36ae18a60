/// Encoding of a published avatar.
public enum AvatarFormat: String, Sendable, Hashable, CaseIterable {
    case png
    case jpeg

    /// File extension used in storage keys ("png", "jpg").
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

    public var wireValue: Avatar_Crop_V1_ImageFormat {
        switch self {
        case .png: .png
        case .jpeg: .jpeg
        }
    }

    /// `.unspecified` means the default, PNG; `nil` for values this build does not know.
    public init?(wireValue: Avatar_Crop_V1_ImageFormat) {
        switch wireValue {
        case .unspecified, .png: self = .png
        case .jpeg: self = .jpeg
        case .UNRECOGNIZED: return nil
        }
    }
}
