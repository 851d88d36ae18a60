import Foundation

/// Counts the scans (SOS segments) of a JPEG from its bytes, before libjpeg sees it. Every scan of
/// a progressive JPEG is another pass over the whole coefficient buffer inside one libjpeg call
/// that no deadline can interrupt, so the count is the decode's cost multiplier: the header check
/// refuses more than `ImageLimits.maxJPEGScans` (docs/ARCHITECTURE.md §7).
enum JPEGScans {
    /// The number of SOS markers, counted up to `limit + 1` (enough to refuse; the walk stops
    /// there). One pass over the bytes: entropy-coded data, nearly all of the file, is passed over
    /// with `memchr` from one 0xFF to the next (a 0xFF in it is stuffed as FF 00 or is a restart
    /// marker; a byte-by-byte walk cost a 14 MP photo's render about 3 ms), every other marker
    /// segment by its length, as libjpeg's own marker reader does. A damaged tail ends the count;
    /// libjpeg judges it later.
    static func count(in bytes: UnsafeRawBufferPointer, stoppingAfter limit: Int) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        var scans = 0
        var offset = 2  // after SOI
        let end = bytes.count
        while offset + 1 < end {
            guard bytes[offset] == 0xFF else {
                guard let next = memchr(base + offset, 0xFF, end - offset) else { return scans }
                offset = base.distance(to: UnsafeRawPointer(next))
                continue
            }
            var marker = bytes[offset + 1]
            // Fill bytes: any number of 0xFF before the marker code.
            while marker == 0xFF {
                offset += 1
                guard offset + 1 < end else { return scans }
                marker = bytes[offset + 1]
            }
            switch marker {
            case 0x00, 0x01, 0xD0...0xD7:
                // A stuffed 0xFF in entropy-coded data, TEM, or a restart marker: no length.
                offset += 2
                continue
            case 0xD9:
                return scans
            case 0xDA:
                scans += 1
                if scans > limit { return scans }
            default:
                break
            }
            guard offset + 3 < end else { return scans }
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            guard length >= 2 else { return scans }
            offset += 2 + length
        }
        return scans
    }
}
