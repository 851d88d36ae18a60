import CHEIFRegion

/// Which libheif the process runs on, for the worker to report at start and in `/readyz`
/// (docs/ARCHITECTURE.md §2): libheif before 1.19 refuses every HEIC an iPhone writes on iOS 18 or
/// later ("Too many auxiliary image references", its `tmap` gain map), so a worker on an older one
/// says so instead of failing those photos one by one as `DECODE_FAILED`.
public enum HEIFSupport {
    /// The oldest libheif that decodes iOS 18 HEICs (1.18) and has the tile API the HEIF region
    /// decoder is built on (1.19).
    public static let minimumVersion = (major: 1, minor: 19)

    /// libheif's version string, e.g. "1.19.7".
    public static var libraryVersion: String { HEIFRegionDecoder.libraryVersion.text }

    /// Whether the libheif in use is at least `minimumVersion`.
    public static var isCurrent: Bool {
        let version = HEIFRegionDecoder.libraryVersion
        return (version.major, version.minor) >= minimumVersion
    }

    /// Loads libheif's plugins now (libheif would at its first HEIC): a render helper's warm-up, before its lockdown.
    static func loadPlugins() {
        _ = cheif_load_plugins()
    }

    /// One line on the libheif in use: its version, and what fails when it is too old.
    public static var summary: String {
        let minimum = "\(minimumVersion.major).\(minimumVersion.minor)"
        return isCurrent
            ? "libheif \(libraryVersion)"
            : "libheif \(libraryVersion) is older than \(minimum): HEICs from iOS 18 and later fail to decode"
    }
}
