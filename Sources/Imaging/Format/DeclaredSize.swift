import CropGeometry

/// The size an image's own header declares, read from the bytes in Swift so that a decompression
/// bomb (a small file declaring a huge canvas) is refused before libvips opens it. Only the
/// fixed header fields are read; the libvips header read that follows checks the size again.
enum DeclaredSize {
    /// The largest size the header declares, or nil when it is not where the format puts it (a
    /// damaged header: libvips then reports what is wrong). HEIF/AVIF containers that do not add
    /// up throw: their sizes are needed before libheif sees the file.
    static func of(_ format: ImageFormat, in bytes: UnsafeRawBufferPointer) throws(HEIFContainer.Malformed)
        -> PixelSize?
    {
        let view = ByteView(bytes)
        switch format {
        case .png: return png(view)
        case .gif: return gif(view)
        case .jpeg: return jpeg(view)
        case .webp: return webp(view)
        case .tiff: return tiff(view)
        case .heif: return try HEIFContainer.parse(bytes).largest
        }
    }

    static func of(_ format: ImageFormat, in bytes: [UInt8]) throws(HEIFContainer.Malformed) -> PixelSize? {
        try bytes.withUnsafeBytes { raw in Result { () throws(HEIFContainer.Malformed) in try of(format, in: raw) } }
            .get()
    }

    /// IHDR, which must be the first chunk: width and height at 16 and 20.
    static func png(_ view: ByteView) -> PixelSize? {
        guard view.u32be(8) == 13, view.fourCC(12) == FourCC("IHDR"), let width = view.u32be(16),
            let height = view.u32be(20)
        else { return nil }
        return PixelSize(width: width, height: height)
    }

    /// The logical screen (the canvas libvips decodes every frame onto).
    static func gif(_ view: ByteView) -> PixelSize? {
        guard let width = view.u16le(6), let height = view.u16le(8) else { return nil }
        return PixelSize(width: width, height: height)
    }

    /// The first start-of-frame segment (SOF0–SOF15 without DHT, JPG and DAC), found by walking
    /// the marker segments from SOI; nil if a scan or the end comes first.
    static func jpeg(_ view: ByteView) -> PixelSize? {
        var offset = 2
        while offset < view.count {
            // Like libjpeg, skip stray bytes up to the next marker (it only warns about them).
            guard view.u8(offset) == 0xFF else {
                offset += 1
                continue
            }
            guard var marker = view.u8(offset + 1) else { return nil }
            // Fill bytes: any number of 0xFF before the marker code.
            while marker == 0xFF {
                offset += 1
                guard let next = view.u8(offset + 1) else { return nil }
                marker = next
            }
            switch marker {
            case 0x01, 0xD0...0xD7:
                offset += 2
                continue
            case 0xD9, 0xDA:
                return nil
            default:
                break
            }
            guard let length = view.u16be(offset + 2), length >= 2 else { return nil }
            if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                guard let height = view.u16be(offset + 5), let width = view.u16be(offset + 7) else { return nil }
                return PixelSize(width: width, height: height)
            }
            offset += 2 + length
        }
        return nil
    }

    /// The canvas of an extended (VP8X) file, or the frame of a simple lossy (VP8) or lossless
    /// (VP8L) one.
    static func webp(_ view: ByteView) -> PixelSize? {
        switch view.fourCC(12) {
        case FourCC("VP8X"):
            guard let width = view.u24le(24), let height = view.u24le(27) else { return nil }
            return PixelSize(width: width + 1, height: height + 1)
        case FourCC("VP8L"):
            guard view.u8(20) == 0x2F, let bits = view.u32le(21) else { return nil }
            return PixelSize(width: (bits & 0x3FFF) + 1, height: (bits >> 14 & 0x3FFF) + 1)
        case FourCC("VP8 "):
            guard view.matches([0x9D, 0x01, 0x2A], at: 23), let width = view.u16le(26), let height = view.u16le(28)
            else { return nil }
            return PixelSize(width: width & 0x3FFF, height: height & 0x3FFF)
        default:
            return nil
        }
    }

    /// ImageWidth (256) and ImageLength (257) of the first IFD (the page libvips loads) of a
    /// classic TIFF; nil for BigTIFF and damaged directories.
    static func tiff(_ view: ByteView) -> PixelSize? {
        let little = view.matches([0x49, 0x49, 0x2A, 0x00], at: 0)
        guard little || view.matches([0x4D, 0x4D, 0x00, 0x2A], at: 0) else { return nil }
        func u16(_ offset: Int) -> Int? { little ? view.u16le(offset) : view.u16be(offset) }
        func u32(_ offset: Int) -> Int? { little ? view.u32le(offset) : view.u32be(offset) }
        guard let directory = u32(4), let entries = u16(directory) else { return nil }
        var width: Int?
        var height: Int?
        for index in 0..<entries {
            let entry = directory + 2 + index * 12
            guard let tag = u16(entry), let type = u16(entry + 2) else { return nil }
            guard tag == 256 || tag == 257 else { continue }
            // SHORT (3) or LONG (4), one value, stored in the entry itself.
            let value: Int?
            switch type {
            case 3: value = u16(entry + 8)
            case 4: value = u32(entry + 8)
            default: value = nil
            }
            if tag == 256 { width = value } else { height = value }
        }
        guard let width, let height else { return nil }
        return PixelSize(width: width, height: height)
    }
}
