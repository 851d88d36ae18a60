/// The bytes of an 8-bit RGB image → a PNG file, compressed with libdeflate.
///
/// The file holds the signature, IHDR (8-bit truecolour, no interlace), iCCP (the profile, named
/// "icc" as libvips' pngsave names it), pHYs (when a resolution is given), one IDAT and IEND: nothing
/// else, so no text, time or EXIF chunk can carry anything from a source.
///
/// The profile is compressed once, when the writer is made: a renderer keeps one writer for the
/// profile every avatar carries (`RenderResources.pngWriter`).
struct PNGWriter: Sendable {
    /// The row filter types (PNG specification §9.2), the byte that starts each filtered row.
    enum Filter: UInt8, CaseIterable, Sendable {
        case none = 0
        case sub = 1
        case up = 2
        case average = 3
        case paeth = 4
    }

    /// libdeflate level, 0 (stored) to 12.
    let level: Int
    /// The filter of every row.
    let filter: Filter
    /// pHYs in pixels per metre, both axes; none when nil.
    let pixelsPerMetre: Int?
    /// iCCP's data (profile name, its terminator, compression method, the zlib stream of the profile);
    /// nil without a profile, a failure when the profile could not be compressed (`write` throws it).
    private let profileChunk: Result<[UInt8], PNGWriteError>?

    /// `iccProfile` goes into iCCP (none when empty), compressed here at `level`.
    init(level: Int, filter: Filter, iccProfile: [UInt8], pixelsPerMetre: Int?) {
        self.level = level
        self.filter = filter
        self.pixelsPerMetre = pixelsPerMetre
        profileChunk = iccProfile.isEmpty ? nil : Self.iccpData(iccProfile, level: level)
    }

    private static func iccpData(_ profile: [UInt8], level: Int) -> Result<[UInt8], PNGWriteError> {
        guard let compressor = ZlibCompressor(level: level) else {
            return .failure(PNGWriteError(.outOfMemory, "libdeflate_alloc_compressor(\(level))"))
        }
        // Name, NUL terminator, compression method 0 (zlib).
        let prefix = profileName + [0, 0]
        var stream = [UInt8](repeating: 0, count: compressor.bound(for: profile.count))
        let written = profile.withUnsafeBytes { input in
            stream.withUnsafeMutableBytes { compressor.compress(input, into: $0) }
        }
        guard let written else { return .failure(PNGWriteError(.compressionFailed, "iCCP")) }
        return .success(prefix + stream[..<written])
    }

    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    /// The profile name in iCCP (1–79 Latin-1 characters): what libvips writes.
    static let profileName: [UInt8] = Array("icc".utf8)
    /// RGB: three bytes per pixel, which is also the filters' distance to the "left" byte.
    static let bytesPerPixel = 3
    /// PNG lengths and dimensions are at most 2³¹ − 1.
    static let maxLength = Int(Int32.max)

    /// Encodes `rgb`: `width × height` pixels, 3 bytes each, row by row, no padding.
    func write(rgb: UnsafeRawBufferPointer, width: Int, height: Int) throws(PNGWriteError) -> [UInt8] {
        // Sides of at most 2³¹ − 1 keep every product below in range.
        guard (1...Self.maxLength).contains(width), (1...Self.maxLength).contains(height),
            rgb.count == width * Self.bytesPerPixel * height
        else {
            throw PNGWriteError(.invalidImage, "\(width)x\(height) RGB with \(rgb.count) bytes")
        }
        if let pixelsPerMetre, !(1...Self.maxLength).contains(pixelsPerMetre) {
            throw PNGWriteError(.invalidImage, "\(pixelsPerMetre) pixels per metre")
        }
        let size = (width * Self.bytesPerPixel + 1) * height
        guard let compressor = ZlibCompressor(level: level) else {
            throw PNGWriteError(.outOfMemory, "libdeflate_alloc_compressor(\(level))")
        }
        let profile = try profileChunk?.get()
        let filtered = Self.filter(rgb, width: width, height: height, with: filter)
        let profileBound = profile.map { 12 + $0.count } ?? 0
        let capacity =
            Self.signature.count + (12 + 13) + profileBound + (pixelsPerMetre == nil ? 0 : 12 + 9)
            + (12 + compressor.bound(for: size)) + 12

        var failure: PNGWriteError?
        let file = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            do throws(PNGWriteError) {
                count = try write(
                    into: buffer, profile: profile, filtered: filtered, width: width, height: height,
                    with: compressor)
            } catch {
                failure = error
                count = 0
            }
        }
        if let failure { throw failure }
        return file
    }

    /// Writes the file into `buffer` (large enough by the bounds `write` adds up); returns its length.
    private func write(
        into buffer: UnsafeMutableBufferPointer<UInt8>, profile: [UInt8]?, filtered: [UInt8], width: Int,
        height: Int, with compressor: borrowing ZlibCompressor
    ) throws(PNGWriteError) -> Int {
        var out = ChunkOutput(buffer)
        out.append(Self.signature)

        let header = out.begin("IHDR")
        out.append(UInt32(width))
        out.append(UInt32(height))
        // Bit depth 8, colour type 2 (truecolour), compression 0, filter method 0, no interlace.
        out.append([8, 2, 0, 0, 0])
        out.end(header)

        if let profile {
            let chunk = out.begin("iCCP")
            out.append(profile)
            out.end(chunk)
        }

        if let pixelsPerMetre {
            let physical = out.begin("pHYs")
            out.append(UInt32(pixelsPerMetre))
            out.append(UInt32(pixelsPerMetre))
            out.append([1])  // unit: the metre
            out.end(physical)
        }

        let data = out.begin("IDAT")
        let written = filtered.withUnsafeBytes { out.compress($0, with: compressor) }
        guard written, out.offset - data - 8 <= Self.maxLength else {
            throw PNGWriteError(.compressionFailed, "IDAT")
        }
        out.end(data)

        out.end(out.begin("IEND"))
        return out.offset
    }

    // MARK: Row filters

    /// The filtered scanlines: each row's filter type byte, then the row filtered by `type`.
    static func filter(_ rgb: UnsafeRawBufferPointer, width: Int, height: Int, with type: Filter) -> [UInt8] {
        let stride = width * bytesPerPixel
        // The row above the first is all zeros (§9.2).
        let zeros = [UInt8](repeating: 0, count: stride)
        return [UInt8](unsafeUninitializedCapacity: (stride + 1) * height) { out, count in
            let pixels = rgb.bindMemory(to: UInt8.self).baseAddress!
            zeros.withUnsafeBufferPointer { zeros in
                for y in 0..<height {
                    let row = pixels + y * stride
                    let target = out.baseAddress! + y * (stride + 1)
                    target.initialize(to: type.rawValue)
                    apply(
                        type, row: row, prior: y == 0 ? zeros.baseAddress! : row - stride, count: stride,
                        into: target + 1)
                }
            }
            count = (stride + 1) * height
        }
    }

    /// Filters one row of `count` bytes (`prior` is the unfiltered row above) into `out`.
    @inline(__always)
    static func apply(
        _ type: Filter, row: UnsafePointer<UInt8>, prior: UnsafePointer<UInt8>, count: Int,
        into out: UnsafeMutablePointer<UInt8>
    ) {
        let bpp = bytesPerPixel
        switch type {
        case .none:
            out.initialize(from: row, count: count)
        case .sub:
            for i in 0..<bpp { out[i] = row[i] }
            for i in bpp..<count { out[i] = row[i] &- row[i - bpp] }
        case .up:
            for i in 0..<count { out[i] = row[i] &- prior[i] }
        case .average:
            for i in 0..<bpp { out[i] = row[i] &- prior[i] >> 1 }
            for i in bpp..<count {
                out[i] = row[i] &- UInt8(truncatingIfNeeded: (UInt16(row[i - bpp]) + UInt16(prior[i])) >> 1)
            }
        case .paeth:
            // Left and upper-left are 0 on the first pixel: the predictor is the byte above.
            for i in 0..<bpp { out[i] = row[i] &- prior[i] }
            for i in bpp..<count {
                out[i] = row[i] &- paeth(left: row[i - bpp], up: prior[i], upLeft: prior[i - bpp])
            }
        }
    }

    /// The Paeth predictor (§9.4): of left, up and upper-left, the one nearest left + up − upper-left,
    /// ties going in that order.
    @inline(__always)
    static func paeth(left: UInt8, up: UInt8, upLeft: UInt8) -> UInt8 {
        let (a, b, c) = (Int16(left), Int16(up), Int16(upLeft))
        let pa = abs(b - c)
        let pb = abs(a - c)
        let pc = abs(a + b - 2 * c)
        return pa <= pb && pa <= pc ? left : (pb <= pc ? up : upLeft)
    }
}

/// Why `PNGWriter` produced no file.
struct PNGWriteError: Error, Sendable, CustomStringConvertible {
    enum Reason: Sendable {
        /// Dimensions, byte count or resolution out of PNG's range.
        case invalidImage
        /// libdeflate could not allocate its compressor.
        case outOfMemory
        /// The compressed data did not fit (a libdeflate bound was wrong).
        case compressionFailed
    }

    var reason: Reason
    var detail: String

    init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    var description: String { "PNG \(reason): \(detail)" }
}

/// Big-endian chunk writing into a buffer sized by the caller (`PNGWriter.write` adds up the bounds).
private struct ChunkOutput {
    let buffer: UnsafeMutableBufferPointer<UInt8>
    var offset = 0

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) { self.buffer = buffer }

    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { source in
            (buffer.baseAddress! + offset).initialize(from: source.baseAddress!, count: source.count)
        }
        offset += bytes.count
    }

    mutating func append(_ value: UInt32) {
        append([
            UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8),
            UInt8(truncatingIfNeeded: value),
        ])
    }

    /// Starts a chunk of `type`: a length to be filled in by `end`, then the type. Returns its offset.
    mutating func begin(_ type: StaticString) -> Int {
        let start = offset
        append(UInt32(0))
        type.withUTF8Buffer { append(Array($0)) }
        return start
    }

    /// Ends the chunk begun at `start`: its length (the bytes after the type) and the CRC of type and data.
    mutating func end(_ start: Int) {
        let length = offset - start - 8
        let base = buffer.baseAddress!
        for (index, shift) in [24, 16, 8, 0].enumerated() {
            base[start + index] = UInt8(truncatingIfNeeded: length >> shift)
        }
        let crc = ZlibCompressor.crc32(UnsafeRawBufferPointer(start: base + start + 4, count: length + 4))
        append(crc)
    }

    /// Appends `input` as a zlib stream; false if it did not fit in what is left.
    mutating func compress(_ input: UnsafeRawBufferPointer, with compressor: borrowing ZlibCompressor) -> Bool {
        let rest = UnsafeMutableRawBufferPointer(
            start: buffer.baseAddress! + offset, count: buffer.count - offset)
        guard let written = compressor.compress(input, into: rest) else { return false }
        offset += written
        return true
    }
}
