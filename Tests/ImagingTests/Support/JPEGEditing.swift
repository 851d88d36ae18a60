/// Byte-level edits of test JPEGs: another EXIF orientation, extraneous bytes before a marker.
enum JPEGEditing {
    /// The segments before the scan: (marker byte, whole segment including FF xx and length).
    static func segments(_ bytes: [UInt8]) -> (header: [(marker: UInt8, bytes: ArraySlice<UInt8>)], rest: Int) {
        var segments: [(UInt8, ArraySlice<UInt8>)] = []
        var offset = 2
        while offset + 4 <= bytes.count, bytes[offset] == 0xFF, bytes[offset + 1] != 0xDA {
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            let end = min(offset + 2 + length, bytes.count)
            segments.append((bytes[offset + 1], bytes[offset..<end]))
            offset = end
        }
        return (segments, offset)
    }

    /// The same JPEG with its EXIF replaced by a minimal block holding only `orientation` (1–8),
    /// placed after JFIF's APP0 (libvips reads the orientation from the last EXIF block it sees).
    static func withOrientation(_ bytes: [UInt8], _ orientation: Int) -> [UInt8] {
        let (segments, rest) = segments(bytes)
        // "Exif\0\0", big-endian TIFF header, IFD0 with one SHORT entry (0x0112 = Orientation).
        var exif: [UInt8] = Array("Exif".utf8) + [0, 0] + [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8]
        exif += [0, 1] + [0x01, 0x12, 0x00, 0x03, 0, 0, 0, 1, 0, UInt8(orientation), 0, 0] + [0, 0, 0, 0]
        let app1: [UInt8] = [0xFF, 0xE1, UInt8((exif.count + 2) >> 8), UInt8((exif.count + 2) & 0xFF)] + exif
        var out: [UInt8] = [0xFF, 0xD8]
        var inserted = false
        for (marker, segment) in segments {
            let isExif =
                marker == 0xE1 && segment.count > 10 && Array(segment.dropFirst(4).prefix(4)) == Array("Exif".utf8)
            if isExif { continue }
            if !inserted && marker != 0xE0 {
                out += app1
                inserted = true
            }
            out += segment
        }
        if !inserted { out += app1 }
        return out + bytes[rest...]
    }

    /// The same JPEG with `count` junk bytes before the frame header (SOF): libjpeg warns "Corrupt
    /// JPEG data: N extraneous bytes before marker" and decodes on.
    static func withExtraneousBytes(_ bytes: [UInt8], count: Int = 7) -> [UInt8] {
        let (segments, rest) = segments(bytes)
        var out: [UInt8] = [0xFF, 0xD8]
        for (marker, segment) in segments {
            if (0xC0...0xC2).contains(marker) { out += [UInt8](repeating: 0x42, count: count) }
            out += segment
        }
        return out + bytes[rest...]
    }
}
