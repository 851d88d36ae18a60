import Glibc

/// The call into a C encoder that writes a 3-band uchar image into a malloc'd buffer (`WebPEncoder`,
/// `AVIFEncoder`): the pixels, the buffer's hand-over and free, and the error's message.
enum EncodedBuffer {
    enum Status { case ok, outOfMemory, failed }

    /// The C messages' length (CWEBP_MESSAGE_LENGTH, CAVIF_MESSAGE_LENGTH).
    static let messageLength = 256

    /// `encoder` gets the pixels (`width × 3` bytes a row), the output pointer and length to set, and a message
    /// buffer of `messageLength` bytes.
    static func encode(
        _ image: VImage, format: String,
        _ encoder: (
            _ pixels: UnsafePointer<UInt8>?, _ width: Int, _ height: Int, _ out: inout UnsafeMutablePointer<UInt8>?,
            _ length: inout Int, _ message: UnsafeMutablePointer<CChar>
        ) -> Status
    ) throws(ImagingError) -> [UInt8] {
        guard image.bands == 3, image.isUchar else {
            throw ImagingError(
                .processingFailed,
                detail: "\(format) of \(image.bands) bands of \(image.bitsPerSample) bits, not 3 uchar")
        }
        let (width, height) = (image.width, image.height)
        let encoded: Result<[UInt8], ImagingError>
        do {
            encoded = try image.withPixels { pixels in
                var out: UnsafeMutablePointer<UInt8>?
                var length = 0
                var message = [CChar](repeating: 0, count: messageLength)
                let status = encoder(
                    pixels.bindMemory(to: UInt8.self).baseAddress, width, height, &out, &length, &message)
                defer { free(out) }
                guard status == .ok, let out else {
                    let detail = "\(format) encode: " + String(cString: message)
                    return .failure(
                        ImagingError(status == .outOfMemory ? .outOfMemory : .processingFailed, detail: detail))
                }
                return .success([UInt8](UnsafeBufferPointer(start: out, count: length)))
            }
        } catch {
            throw ImagingError.processing(error)
        }
        return try encoded.get()
    }
}
