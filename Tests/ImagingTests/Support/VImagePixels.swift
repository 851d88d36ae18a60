import Cvips

@testable import Imaging

extension VImage {
    /// An image from interleaved 8-bit pixels (copied), for tests that build their own pixels.
    static func fromPixels(_ pixels: [UInt8], width: Int, height: Int, bands: Int) throws(VipsFailure) -> VImage {
        let pointer = pixels.withUnsafeBytes { raw in
            vips_image_new_from_memory_copy(
                raw.baseAddress, raw.count, Int32(width), Int32(height), Int32(bands), VIPS_FORMAT_UCHAR)
        }
        guard let pointer else { throw VipsFailure.take(operation: "new_from_memory_copy") }
        return VImage(taking: pointer, source: nil)
    }
}
