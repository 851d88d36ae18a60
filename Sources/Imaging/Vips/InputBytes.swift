import Glibc

/// The encoded input that libvips' buffer loaders and our region decoders read from: a private copy, or a
/// read-only mapping of a file (a render helper's source memory file: no copy). Loaders do not copy their
/// buffer, so every image derived from it holds this object until it is released. Never written.
final class InputBytes {
    let base: UnsafeMutableRawPointer
    let count: Int
    /// Mapped (`munmap` when released) rather than allocated.
    private let mapped: Bool

    init(_ bytes: [UInt8]) {
        count = bytes.count
        mapped = false
        base = UnsafeMutableRawPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
        bytes.withUnsafeBytes { source in
            if let address = source.baseAddress, source.count > 0 {
                base.copyMemory(from: address, byteCount: source.count)
            }
        }
    }

    /// The first `count` bytes of the file open on `descriptor`, mapped read-only (private, its pages faulted in at
    /// once); the descriptor may be closed afterwards. The file must not shrink while this lives. `count` > 0.
    init(mapping descriptor: Int32, count: Int) throws(ImagingError) {
        precondition(count > 0, "nothing to map")
        guard let address = mmap(nil, count, PROT_READ, MAP_PRIVATE | MAP_POPULATE, descriptor, 0),
            address != MAP_FAILED
        else {
            throw ImagingError(.processingFailed, detail: "mmap of the source: errno \(errno)")
        }
        (base, self.count, mapped) = (address, count, true)
    }

    /// The bytes, for reading in Swift (valid while this object lives).
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    deinit {
        if mapped {
            munmap(base, count)
        } else {
            base.deallocate()
        }
    }
}
