/// Just enough of the ISO base media file format (HEIF, AVIF) to judge a file before any decoder
/// sees it: the `ftyp` brands and the image sizes the container declares (`ispe` properties).
/// Every read is bounds-checked; a malformed box ends the walk, it never traps.
enum ISOBMFF {
    /// The major and compatible brands of a leading `ftyp` box, or nil when the file does not start with one.
    static func fileTypeBrands(_ bytes: UnsafeRawBufferPointer) -> Set<String>? {
        guard let box = boxes(in: bytes, range: 0..<bytes.count).first(where: { _ in true }), box.type == "ftyp",
            box.payload.count >= 8
        else { return nil }
        var brands: Set<String> = [fourCC(bytes, at: box.payload.lowerBound)]
        var offset = box.payload.lowerBound + 8  // major brand, minor version
        while offset + 4 <= box.payload.upperBound {
            brands.insert(fourCC(bytes, at: offset))
            offset += 4
        }
        return brands
    }

    /// The largest width × height among the `ispe` (image spatial extents) properties in
    /// `meta/iprp/ipco`: the primary image, or a grid's full size. Nil when there is none.
    static func largestImageSize(_ bytes: UnsafeRawBufferPointer) -> (width: Int, height: Int)? {
        guard let meta = boxes(in: bytes, range: 0..<bytes.count).first(where: { $0.type == "meta" }),
            meta.payload.count >= 4,
            // `meta` is a full box: version and flags come first.
            let iprp = boxes(in: bytes, range: (meta.payload.lowerBound + 4)..<meta.payload.upperBound)
                .first(where: { $0.type == "iprp" }),
            let ipco = boxes(in: bytes, range: iprp.payload).first(where: { $0.type == "ipco" })
        else { return nil }
        var largest: (width: Int, height: Int)?
        for property in boxes(in: bytes, range: ipco.payload) where property.type == "ispe" {
            // Full box (4 bytes), then 32-bit width and height.
            guard property.payload.count >= 12 else { continue }
            let width = Int(uint32(bytes, at: property.payload.lowerBound + 4))
            let height = Int(uint32(bytes, at: property.payload.lowerBound + 8))
            if width * height > (largest.map { $0.width * $0.height } ?? -1) { largest = (width, height) }
        }
        return largest
    }

    struct Box {
        var type: String
        var payload: Range<Int>
    }

    /// The boxes laid out in `range`, lazily; stops at the first box whose size does not fit.
    static func boxes(in bytes: UnsafeRawBufferPointer, range: Range<Int>) -> some Sequence<Box> {
        var offset = range.lowerBound
        return AnySequence {
            AnyIterator { () -> Box? in
                guard offset + 8 <= range.upperBound else { return nil }
                var size = Int(uint32(bytes, at: offset))
                let type = fourCC(bytes, at: offset + 4)
                var header = 8
                if size == 1 {  // 64-bit size follows the type
                    guard offset + 16 <= range.upperBound else { return nil }
                    let large = UInt64(uint32(bytes, at: offset + 8)) << 32 | UInt64(uint32(bytes, at: offset + 12))
                    guard large <= UInt64(range.upperBound - offset) else { return nil }
                    size = Int(large)
                    header = 16
                } else if size == 0 {  // to the end of the enclosing range
                    size = range.upperBound - offset
                }
                guard size >= header, size <= range.upperBound - offset else { return nil }
                let box = Box(type: type, payload: (offset + header)..<(offset + size))
                offset += size
                return box
            }
        }
    }

    private static func uint32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 << 8 | UInt32(bytes[offset + $1]) }
    }

    private static func fourCC(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> String {
        String(decoding: (0..<4).map { bytes[offset + $0] }, as: UTF8.self)
    }
}
