/// An ICC profile's bytes (ICC.1:2010 §7), from its header's colour fields and its tags: the way
/// `WellKnownProfiles` writes the profiles it rebuilds. Numbers are raw s15Fixed16 words, as profiles store them.
struct ICCProfileBytes {
    var version: UInt32
    var deviceClass: String
    var colourSpace: String
    var connectionSpace = "XYZ "
    /// The header's illuminant, X, Y, Z.
    var illuminant: [Int32]
    /// Signature and data of each tag, in file order.
    var tags: [(signature: String, data: [UInt8])]

    var bytes: [UInt8] {
        let word = ICCColourContent.bigEndian
        let tagTableEnd = 128 + 4 + 12 * tags.count
        var table = word(UInt32(tags.count))
        var data: [UInt8] = []
        for tag in tags {
            table +=
                Self.signature(tag.signature) + word(UInt32(tagTableEnd + data.count)) + word(UInt32(tag.data.count))
            data += tag.data
            data += repeatElement(0, count: (4 - tag.data.count % 4) % 4)  // every tag starts on a 4-byte boundary
        }
        var header = word(UInt32(tagTableEnd + data.count)) + word(0) + word(version)
        header += Self.signature(deviceClass) + Self.signature(colourSpace) + Self.signature(connectionSpace)
        header += repeatElement(0, count: 12) + Self.signature("acsp")
        header += repeatElement(0, count: 68 - header.count) + illuminant.flatMap(Self.s15Fixed16)
        header += repeatElement(0, count: 128 - header.count)
        return header + table + data
    }

    /// An `XYZ ` tag of one colour.
    static func xyz(_ x: Int32, _ y: Int32, _ z: Int32) -> [UInt8] {
        signature("XYZ ") + ICCColourContent.bigEndian(0) + [x, y, z].flatMap(s15Fixed16)
    }

    /// A `para` tone curve: ICC function type `function` (0–4) and its parameters.
    static func parametricCurve(function: UInt16, _ parameters: [Int32]) -> [UInt8] {
        signature("para") + ICCColourContent.bigEndian(0) + ICCColourContent.bigEndian(UInt32(function) << 16)
            + parameters.flatMap(s15Fixed16)
    }

    /// A `curv` tone curve of one gamma, in u8Fixed8.
    static func gammaCurve(_ gamma: UInt16) -> [UInt8] {
        signature("curv") + ICCColourContent.bigEndian(0) + ICCColourContent.bigEndian(1)
            + [UInt8(gamma >> 8), UInt8(gamma & 0xFF)]
    }

    /// An `sf32` array, such as a `chad` matrix.
    static func s15Fixed16Array(_ values: [Int32]) -> [UInt8] {
        signature("sf32") + ICCColourContent.bigEndian(0) + values.flatMap(s15Fixed16)
    }

    /// Where the data of the first tag `signature` in `profile` lies, if the tag table holds it inside the bytes.
    static func tag(_ signature: String, in profile: [UInt8]) -> Range<Int>? {
        guard profile.count >= 132 else { return nil }
        func word(_ offset: Int) -> Int { (0..<4).reduce(0) { $0 << 8 | Int(profile[offset + $1]) } }
        let wanted = Int(ICCColourContent.signature(signature))
        for entry in stride(from: 132, to: min(132 + 12 * word(128), profile.count - 11), by: 12)
        where word(entry) == wanted {
            let (offset, size) = (word(entry + 4), word(entry + 8))
            guard offset <= profile.count, size <= profile.count - offset else { return nil }
            return offset..<offset + size
        }
        return nil
    }

    /// `value` in s15Fixed16.
    static func fixed(_ value: Double) -> Int32 { Int32((value * 65536).rounded()) }

    private static func s15Fixed16(_ value: Int32) -> [UInt8] { ICCColourContent.bigEndian(UInt32(bitPattern: value)) }

    private static func signature(_ text: String) -> [UInt8] {
        ICCColourContent.bigEndian(ICCColourContent.signature(text))
    }
}
