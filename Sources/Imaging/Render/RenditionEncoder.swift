/// DESIGN §2 steps 7–8: one square size, metadata stripped but for an sRGB profile, encoded.
enum RenditionEncoder {
    /// PNG zlib level. On 512 px photo avatars level 1 is ~25% faster than libvips' default (6) for
    /// files within 1% of the same size: photo pixels barely deflate without row filters, and
    /// higher levels only search harder for matches that are not there (bench/README.md).
    static let pngCompression = 1

    static func encode(
        _ square: VImage, size: Int, options: RenderOptions, srgbProfile: [UInt8]
    ) throws(ImagingError) -> Rendition {
        do {
            let sized = try CropPipeline.resize(square, to: size)
            switch options.format {
            case .png:
                // pngsave's strip would drop the ICC profile too: remove everything else by hand
                // and save without strip (PNG then carries only iCCP and pHYs).
                let clean = try sized.strippedCopy(withICCProfile: srgbProfile)
                return Rendition(
                    size: size, format: .png, data: try clean.pngData(compression: pngCompression, strip: false))
            case .jpeg:
                // jpegsave without strip invents a fresh EXIF block: strip everything, then add the
                // profile as APP2 segments.
                let data = try sized.jpegData(quality: options.jpegQuality, strip: true)
                return Rendition(
                    size: size, format: .jpeg, data: JPEGSegments.insertingICCProfile(srgbProfile, into: data))
            }
        } catch {
            throw ImagingError.processing(error)
        }
    }
}

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
