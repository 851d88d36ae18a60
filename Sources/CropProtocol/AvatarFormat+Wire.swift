import CropGeometry

/// The protobuf enum of `AvatarFormat` (declared in CropGeometry, shared with the renderer).
extension AvatarFormat {
    public var wireValue: Avatar_Crop_V1_ImageFormat {
        switch self {
        case .png: .png
        case .jpeg: .jpeg
        case .webp: .webp
        case .avif: .avif
        }
    }

    /// `nil` for `.unspecified` (no format named) and for values this build does not know.
    public init?(wireValue: Avatar_Crop_V1_ImageFormat) {
        switch wireValue {
        case .png: self = .png
        case .jpeg: self = .jpeg
        case .webp: self = .webp
        case .avif: self = .avif
        case .unspecified, .UNRECOGNIZED: return nil
        }
    }
}
