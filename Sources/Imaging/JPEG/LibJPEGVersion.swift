import CJPEGRegion

/// The libjpeg-turbo the region decoder runs on.
public enum LibJPEG {
    /// Its version as the loaded library states it, e.g. "2.1.5"; "unknown" if it does not say.
    public static let version: String = {
        var buffer = [CChar](repeating: 0, count: 32)
        guard cjpeg_library_version(&buffer, buffer.count) == 1 else { return "unknown" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }()
}
