import CWebPEncoder
import Glibc

/// WebP avatars through libwebp (lossy), over the C module `CWebPEncoder` (docs/ARCHITECTURE.md §2 step 7).
/// Not libvips' webpsave: 8.14's writes an EXIF chunk whatever `strip` says (docs/UPSTREAM-BUGS.md).
enum WebPEncoder {
    /// libwebp's method: 2 takes half the CPU of libvips' 4 for 2.5 % more bytes on the bench photos' 512² avatars
    /// (bench/RESULTS.md, "Avatar formats", "WebP method").
    static let method = 2

    /// `image` (3-band uchar sRGB) as a lossy WebP carrying `iccProfile` and nothing else.
    static func encode(_ image: VImage, quality: Int, iccProfile: [UInt8]) throws(ImagingError) -> [UInt8] {
        try EncodedBuffer.encode(image, format: "WebP") { pixels, width, height, out, length, message in
            iccProfile.withUnsafeBufferPointer { profile in
                let status = cwebp_encode_rgb(
                    pixels, Int32(width), Int32(height), width * 3, Int32(quality), Int32(method), profile.baseAddress,
                    profile.count, &out, &length, message)
                return status == CWEBP_OK ? .ok : status == CWEBP_NO_MEMORY ? .outOfMemory : .failed
            }
        }
    }
}
