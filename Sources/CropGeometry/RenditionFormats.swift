/// Which formats a job publishes: the avatar's (the first is the one `profiles.avatar_path` names) and every
/// extra size's. One decode and one resize per size, one encode per format (docs/ARCHITECTURE.md §2 step 7).
public struct RenditionFormats: Sendable, Hashable, Codable {
    /// The avatar's formats, distinct, at least one; the first is the primary.
    public var avatar: [AvatarFormat]
    /// Each extra size's formats, distinct, at least one.
    public var extras: [AvatarFormat]

    public init(avatar: [AvatarFormat], extras: [AvatarFormat]? = nil) {
        self.avatar = avatar
        self.extras = extras ?? avatar
    }

    /// One format for every rendition (today's contract: PNG).
    public init(_ format: AvatarFormat) {
        self.init(avatar: [format])
    }

    public static let png = RenditionFormats(.png)

    /// The most formats in one list (every format once).
    public static let maxCount = AvatarFormat.allCases.count

    /// The primary format: the avatar's first.
    public var primary: AvatarFormat { avatar[0] }

    /// Why `formats` is not a valid list (empty, a format twice, too many), or nil when it is.
    public static func problem(_ formats: [AvatarFormat]) -> String? {
        if formats.isEmpty { return "a format list needs at least one format" }
        if Set(formats).count != formats.count { return "a format appears twice in the list" }
        return nil
    }

    /// A comma-separated list ("png,webp,avif", spaces ignored) as formats, or a message saying what is wrong
    /// with it (configuration, the CLI).
    public static func parse(_ text: String) -> Result<[AvatarFormat], FormatListError> {
        var formats: [AvatarFormat] = []
        for name in text.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = String(name.filter { $0 != " " })
            guard let format = AvatarFormat(rawValue: trimmed.lowercased()) else {
                return .failure(
                    FormatListError(
                        "unknown format \"\(trimmed)\" in \"\(text)\" (known: "
                            + AvatarFormat.allCases.map(\.rawValue).joined(separator: ", ") + ")"))
            }
            formats.append(format)
        }
        if let problem = problem(formats) { return .failure(FormatListError("\(problem): \"\(text)\"")) }
        return .success(formats)
    }
}

/// A format list that cannot be read (`RenditionFormats.parse`).
public struct FormatListError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
