/// Just enough JPEG marker handling to embed an ICC profile.
enum JPEGSegments {
    static let iccSignature: [UInt8] = Array("ICC_PROFILE".utf8) + [0]
    /// Largest profile chunk per APP2 segment: 65535 − length field − signature − sequence bytes.
    static let maxChunk = 65535 - 2 - 14

    /// Inserts `profile` as ICC_PROFILE APP2 segments after SOI and any JFIF/EXIF APPn segments
    /// that must come first. Returns the input unchanged if it does not start with SOI.
    static func insertingICCProfile(_ profile: [UInt8], into jpeg: [UInt8]) -> [UInt8] {
        guard jpeg.count >= 4, jpeg[0] == 0xFF, jpeg[1] == 0xD8, !profile.isEmpty else { return jpeg }
        var offset = 2
        // Keep APP0 (JFIF) first, as the JFIF specification requires.
        while offset + 4 <= jpeg.count, jpeg[offset] == 0xFF, jpeg[offset + 1] == 0xE0 {
            let length = Int(jpeg[offset + 2]) << 8 | Int(jpeg[offset + 3])
            offset += 2 + length
        }
        guard offset <= jpeg.count else { return jpeg }
        let chunks = stride(from: 0, to: profile.count, by: maxChunk).map {
            profile[$0..<min($0 + maxChunk, profile.count)]
        }
        guard chunks.count <= 255 else { return jpeg }
        var segments: [UInt8] = []
        for (index, chunk) in chunks.enumerated() {
            let length = 2 + iccSignature.count + 2 + chunk.count
            segments += [0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)]
            segments += iccSignature
            segments += [UInt8(index + 1), UInt8(chunks.count)]
            segments += chunk
        }
        return Array(jpeg[..<offset]) + segments + Array(jpeg[offset...])
    }
}
