/// What a request on the requests topic asks for (`CropRequest.kind`).
public enum CropRequestKind: String, Sendable, Hashable, CaseIterable {
    /// Render and publish a new avatar (the default).
    case crop
    /// Erase the user's avatars, ledger rows and profile avatar columns (docs/ARCHITECTURE.md §4).
    case forget

    public var wireValue: Avatar_Crop_V1_CropRequest.Kind {
        switch self {
        case .crop: .crop
        case .forget: .forget
        }
    }
}
