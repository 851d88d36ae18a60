import Cdeflate

/// libdeflate's whole-buffer zlib compressor, and its CRC-32.
///
/// A compressor keeps its match finder's state between calls and is not thread-safe: a value is
/// non-copyable, so one compressor belongs to one owner (the PNG writer makes one per image, and
/// renders run on several threads at once). Allocating one costs a few microseconds: its tables are
/// initialised by each compression, not by the allocation.
struct ZlibCompressor: ~Copyable {
    private let compressor: OpaquePointer

    /// A compressor at `level` (libdeflate: 0 stores, 1 is fastest, 12 smallest). Nil when libdeflate
    /// cannot allocate one (out of memory, or a level outside 0...12).
    init?(level: Int) {
        guard (0...12).contains(level), let compressor = libdeflate_alloc_compressor(Int32(level)) else { return nil }
        self.compressor = compressor
    }

    deinit { libdeflate_free_compressor(compressor) }

    /// The most bytes `compress` can write for `count` input bytes.
    func bound(for count: Int) -> Int {
        libdeflate_zlib_compress_bound(compressor, count)
    }

    /// Compresses `input` into a zlib stream at the start of `output`; returns the bytes written, or nil
    /// if they do not fit (never when `output` holds `bound(for: input.count)` bytes).
    func compress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        guard let destination = output.baseAddress else { return nil }
        let written = libdeflate_zlib_compress(compressor, input.baseAddress, input.count, destination, output.count)
        return written > 0 ? written : nil
    }

    /// CRC-32 (ISO 3309, as PNG chunks use) of `bytes`, continuing from `crc` (0 to start).
    static func crc32(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        libdeflate_crc32(crc, bytes.baseAddress, bytes.count)
    }
}
