/// Identifies an accepted format from the first bytes, in Swift, before libvips sees any of them.
///
/// libvips' own sniffing (`vips_foreign_find_load_buffer`) asks every loader's `is_a`, blocked or
/// not, and some of those are not safe on hostile bytes: the SVG loader's `is_a` inflates gzip
/// data and spins forever on a gzip stream that ends early with bytes left over. Here only the
/// accepted formats' signatures are compared, and the caller then opens exactly that loader.
enum FormatSniffer {
    /// The format whose signature starts `bytes`, or nil (the caller answers `unsupportedFormat`).
    static func format(of bytes: UnsafeRawBufferPointer) -> ImageFormat? {
        let view = ByteView(bytes)
        if view.matches([0xFF, 0xD8, 0xFF], at: 0) { return .jpeg }
        if view.matches([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], at: 0) { return .png }
        if view.matches(Array("GIF87a".utf8), at: 0) || view.matches(Array("GIF89a".utf8), at: 0) { return .gif }
        if view.matches(Array("RIFF".utf8), at: 0), view.matches(Array("WEBP".utf8), at: 8) { return .webp }
        // Classic TIFF and BigTIFF, either byte order.
        for signature: [UInt8] in [
            [0x49, 0x49, 0x2A, 0x00], [0x4D, 0x4D, 0x00, 0x2A], [0x49, 0x49, 0x2B, 0x00],
            [0x4D, 0x4D, 0x00, 0x2B],
        ]
        where view.matches(signature, at: 0) {
            return .tiff
        }
        if isHEIF(view) { return .heif }
        return nil
    }

    static func format(of bytes: [UInt8]) -> ImageFormat? {
        bytes.withUnsafeBytes { format(of: $0) }
    }

    /// The HEIF brands libheif reads (HEIC, AVIF, their sequences and the MIAF base brands):
    /// those libvips' heifload recognises, plus `hevx`, `avis` and `miaf`.
    static let heifBrands: Set<FourCC> = [
        FourCC("heic"), FourCC("heix"), FourCC("heim"), FourCC("heis"), FourCC("hevc"), FourCC("hevx"),
        FourCC("hevm"), FourCC("hevs"), FourCC("mif1"), FourCC("msf1"), FourCC("miaf"), FourCC("avif"),
        FourCC("avis"),
    ]

    /// Largest `ftyp` box accepted: a major brand, a version and a few hundred compatible brands.
    static let maxFileTypeBoxSize = 4096

    /// An ISOBMFF file that starts with a well-formed `ftyp` box naming a HEIF brand, as its major
    /// brand or a compatible one.
    private static func isHEIF(_ view: ByteView) -> Bool {
        guard let size = view.u32be(0), view.fourCC(4) == FourCC("ftyp"), size >= 16,
            size <= maxFileTypeBoxSize, size % 4 == 0, size <= view.count,
            let major = view.fourCC(8)
        else { return false }
        if heifBrands.contains(major) { return true }
        for offset in stride(from: 16, to: size, by: 4) {
            if let brand = view.fourCC(offset), heifBrands.contains(brand) { return true }
        }
        return false
    }
}
