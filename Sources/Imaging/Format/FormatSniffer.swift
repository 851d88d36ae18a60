/// DESIGN §2 step 1, "format by bytes": the format is judged from the file's first bytes here, in
/// Swift, and only that format's libvips loader ever sees the file. libvips' own sniffing
/// (`vips_foreign_find_load_buffer`) asks every loader's `is_a`, including loaders that are
/// blocked for decoding, and one of them (SVG's, on a truncated gzip stream) never returns.
public enum FormatSniffer {
    /// The accepted format the bytes start with, or nil for anything else (HTML, SVG, PDF, an empty file…).
    public static func format(of bytes: UnsafeRawBufferPointer) -> ImageFormat? {
        func starts(with magic: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + magic.count && zip(magic.indices, magic).allSatisfy { bytes[offset + $0] == $1 }
        }
        if starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(with: Array("GIF87a".utf8)) || starts(with: Array("GIF89a".utf8)) { return .gif }
        if starts(with: Array("RIFF".utf8)) && starts(with: Array("WEBP".utf8), at: 8) { return .webp }
        // Classic and BigTIFF, little- and big-endian.
        if starts(with: [0x49, 0x49, 0x2A, 0x00]) || starts(with: [0x4D, 0x4D, 0x00, 0x2A])
            || starts(with: [0x49, 0x49, 0x2B, 0x00]) || starts(with: [0x4D, 0x4D, 0x00, 0x2B])
        {
            return .tiff
        }
        if let brands = ISOBMFF.fileTypeBrands(bytes), !brands.isDisjoint(with: heifBrands) { return .heif }
        return nil
    }

    public static func format(of bytes: [UInt8]) -> ImageFormat? {
        bytes.withUnsafeBytes { format(of: $0) }
    }

    /// `ftyp` brands of still HEIF images (HEIC, AVIF and the MIAF structural brands libheif reads).
    static let heifBrands: Set<String> = ["heic", "heix", "heim", "heis", "mif1", "avif", "miaf"]
}
