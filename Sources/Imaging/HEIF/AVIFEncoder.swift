import CAVIFEncoder

/// AVIF avatars through libheif's AV1 encoder (the aom plugin, `libheif-plugin-aomenc`), over the C module
/// `CAVIFEncoder` (docs/ARCHITECTURE.md §2 step 7; why not libvips' heifsave: docs/UPSTREAM-BUGS.md). One
/// thread: a render holds one core (`DecodeCores`).
enum AVIFEncoder {
    /// `image` (3-band uchar sRGB) as an 8-bit 4:2:0 AVIF carrying `iccProfile` and nothing else.
    static func encode(_ image: VImage, quality: Int, speed: Int, iccProfile: [UInt8]) throws(ImagingError)
        -> [UInt8]
    {
        let settings = cavif_settings(quality: Int32(quality), speed: Int32(speed), threads: 1)
        return try EncodedBuffer.encode(image, format: "AVIF") { pixels, width, height, out, length, message in
            iccProfile.withUnsafeBufferPointer { profile in
                let status = cavif_encode_rgb(
                    pixels, Int32(width), Int32(height), width * 3, profile.baseAddress, profile.count, settings,
                    &out, &length, message)
                return status == CAVIF_OK ? .ok : status == CAVIF_NO_MEMORY ? .outOfMemory : .failed
            }
        }
    }

    /// The AV1 encoder libheif found ("AOMedia Project AV1 Encoder v3.6.0"), or nil when none is installed; loads
    /// libheif's plugins on first use.
    static var encoderName: String? { cavif_encoder_name().map { String(cString: $0) } }
}
