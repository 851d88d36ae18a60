/// A private copy of the encoded input that libvips' buffer loaders read from. Loaders do not copy
/// their buffer, so every image derived from it holds this object until it is released.
final class InputBytes {
    let base: UnsafeMutableRawPointer
    let count: Int

    init(_ bytes: [UInt8]) {
        count = bytes.count
        base = UnsafeMutableRawPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
        bytes.withUnsafeBytes { source in
            if let address = source.baseAddress, source.count > 0 {
                base.copyMemory(from: address, byteCount: source.count)
            }
        }
    }

    /// The bytes, for reading in Swift (valid while this object lives).
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    deinit {
        base.deallocate()
    }
}
