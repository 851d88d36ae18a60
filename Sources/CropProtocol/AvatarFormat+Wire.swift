import CropGeometry

/// The protobuf enum of `AvatarFormat` (declared in CropGeometry, shared with the renderer).
extension AvatarFormat {
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
