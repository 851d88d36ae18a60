import CJPEGRegion
import CropGeometry

/// libjpeg through `CJPEGRegion`: a JPEG's header facts, and the pixels of one region of it at a
/// DCT scale (docs/ARCHITECTURE.md §2 step 3). The only file that imports the C module.
enum JPEGRegionDecoder {
    /// What the JPEG header says, as far as choosing a decoder needs it.
    struct Header: Sendable, Hashable {
        enum Colour: Sendable, Hashable {
            case grey, rgb, yCbCr, cmyk, ycck, other
        }

        var size: PixelSize
        /// Components in the file (1 grey, 3 YCbCr/RGB, 4 CMYK/YCCK).
        var components: Int
        var colour: Colour
        /// Progressive or multi-scan sequential: libjpeg buffers every coefficient first.
        var multiScan: Bool
        var arithmeticCoding: Bool
        /// Bits per sample.
        var precision: Int
        /// The Adobe APP14 marker's transform, nil without the marker.
        var adobeTransform: Int?
        /// The largest horizontal sampling factor: an iMCU is 8 × this pixels wide, unscaled.
        var maxHorizontalSampling: Int
    }

    /// A decode that did not produce pixels.
    struct Failure: Error, Sendable {
        enum Kind: Sendable {
            /// libjpeg refused the data: corrupt, truncated, or a feature it does not decode.
            case corrupt
            case outOfMemory
            case cancelled
            /// Outside what the region decoder handles (its checks, not the data's fault).
            case unsupported
        }

        var kind: Kind
        var message: String

        /// The render's error for it; nil when the decoder declined the file (libvips decodes it then).
        var imagingError: ImagingError? {
            switch kind {
            case .unsupported: nil
            case .cancelled: ImagingError(.cancelled, detail: "decode stopped: \(message)")
            case .outOfMemory: ImagingError(.outOfMemory, detail: "jpeg region: \(message)")
            case .corrupt: ImagingError(.decodeFailed, detail: "jpeg region: \(message)")
            }
        }
    }

    /// The decoded region, as a libvips image over the decoder's buffer (no copy), with the file's
    /// ICC profile attached.
    struct Region {
        var image: VImage
        /// The whole image's size at the decoded scale, as libjpeg computes it (rounded up).
        var scaledSize: PixelSize
        /// The columns libjpeg decoded, after aligning the start to an iMCU boundary.
        var decodedColumns: Range<Int>
        /// libjpeg warnings tolerated on the way (as libvips' jpegload tolerates them).
        var warnings: Int
    }

    /// Reads the header only.
    static func header(of input: InputBytes) throws(Failure) -> Header {
        var header = cjpeg_header()
        let status = cjpeg_read_header(input.base.assumingMemoryBound(to: UInt8.self), input.count, &header)
        guard status == CJPEG_OK else {
            throw Failure(kind: kind(of: status), message: cMessage(&header.message))
        }
        let colour: Header.Colour =
            switch header.colour {
            case CJPEG_COLOUR_GREY: .grey
            case CJPEG_COLOUR_RGB: .rgb
            case CJPEG_COLOUR_YCBCR: .yCbCr
            case CJPEG_COLOUR_CMYK: .cmyk
            case CJPEG_COLOUR_YCCK: .ycck
            default: .other
            }
        return Header(
            size: PixelSize(width: Int(header.width), height: Int(header.height)),
            components: Int(header.components), colour: colour, multiScan: header.multiscan != 0,
            arithmeticCoding: header.arithmetic != 0, precision: Int(header.precision),
            adobeTransform: header.adobe_transform >= 0 ? Int(header.adobe_transform) : nil,
            maxHorizontalSampling: Int(header.max_h_sampling))
    }

    /// Decodes the rectangle `x, y, width × height` (pixels of the image scaled by 1/`scale`, which
    /// is 1, 2, 4 or 8). `cancel`, set from another thread, stops the decode within a few rows.
    static func decode(
        _ input: InputBytes, scale: Int, x: Int, y: Int, width: Int, height: Int, cancel: DecodeCancelFlag?
    ) throws(Failure) -> Region {
        var result = cjpeg_region_result()
        let status = withExtendedLifetime(cancel) {
            var request = cjpeg_region_request(
                scale_denom: Int32(scale), x: Int32(x), y: Int32(y), width: Int32(width), height: Int32(height),
                cancel: cancel.map { UnsafePointer($0.pointer) })
            return cjpeg_decode_region(input.base.assumingMemoryBound(to: UInt8.self), input.count, &request, &result)
        }
        guard status == CJPEG_OK, let pixels = result.pixels else {
            throw Failure(kind: kind(of: status), message: cMessage(&result.message))
        }
        defer { cjpeg_free(result.icc) }
        let image: VImage
        do {
            // The image takes the buffer over (and frees it if it cannot be made).
            image = try VImage.takingPixels(
                pixels, count: Int(result.width) * Int(result.height) * Int(result.bands), width: Int(result.width),
                height: Int(result.height), bands: Int(result.bands))
        } catch {
            throw Failure(kind: .outOfMemory, message: "\(error.operation): \(error.message)")
        }
        if let icc = result.icc, result.icc_length > 0 {
            image.attachICCProfile(UnsafeRawBufferPointer(start: icc, count: result.icc_length))
        }
        let start = Int(result.decoded_x)
        return Region(
            image: image, scaledSize: PixelSize(width: Int(result.scaled_width), height: Int(result.scaled_height)),
            decodedColumns: start..<(start + Int(result.decoded_width)), warnings: Int(result.warnings))
    }

    /// The whole image at 1/8 of its size from a progressive JPEG's DC coefficients alone (`cjpeg_decode_dc_preview`:
    /// the scans are read only until every component's DC has arrived), without its ICC profile, as stored (not
    /// turned upright); nil when the file is not progressive or its colours are neither RGB nor grey. For the face
    /// detector's look at a progressive photo, which otherwise entropy-decodes every scan for its 1/8 image.
    static func dcPreview(_ input: InputBytes) throws(Failure) -> VImage? {
        var result = cjpeg_region_result()
        let status = cjpeg_decode_dc_preview(input.base.assumingMemoryBound(to: UInt8.self), input.count, nil, &result)
        if status == CJPEG_UNSUPPORTED { return nil }
        guard status == CJPEG_OK, let pixels = result.pixels else {
            throw Failure(kind: kind(of: status), message: cMessage(&result.message))
        }
        do {
            // The image takes the buffer over (and frees it if it cannot be made).
            return try VImage.takingPixels(
                pixels, count: Int(result.width) * Int(result.height) * Int(result.bands), width: Int(result.width),
                height: Int(result.height), bands: Int(result.bands))
        } catch {
            throw Failure(kind: .outOfMemory, message: "\(error.operation): \(error.message)")
        }
    }

    private static func kind(of status: cjpeg_status) -> Failure.Kind {
        switch status {
        case CJPEG_NO_MEMORY: .outOfMemory
        case CJPEG_CANCELLED: .cancelled
        case CJPEG_UNSUPPORTED: .unsupported
        default: .corrupt
        }
    }
}

/// The flag a region decode polls for cancellation: one `int` shared with C, written atomically.
/// `RenderCancellation` sets it; the decode reads it every few rows.
final class DecodeCancelFlag: @unchecked Sendable {
    // @unchecked Sendable: the pointee is only accessed through C11 atomics (cjpeg_flag_set/get).
    let pointer: UnsafeMutablePointer<Int32>

    init() {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: 0)
    }

    deinit {
        pointer.deallocate()
    }

    func set() {
        cjpeg_flag_set(pointer, 1)
    }

    var isSet: Bool { cjpeg_flag_get(pointer) != 0 }
}
