/// An ICC profile's bytes (ICC.1:2010 §7), from its header's colour fields and its tags: the way
/// `WellKnownProfiles` writes the profiles it rebuilds. Numbers are raw words (s15Fixed16 and the like), as profiles
/// store them.
struct ICCProfileBytes {
    var version: UInt32
    var deviceClass: String
    var colourSpace: String
    var connectionSpace = "XYZ "
    /// The header's illuminant, X, Y, Z.
    var illuminant: [UInt32]
    /// Signature and data of each tag, in file order.
    var tags: [(signature: String, data: [UInt8])]

    var bytes: [UInt8] {
        let word = ICCTagTable.bigEndian
        let tagTableEnd = ICCTagTable.headerSize + 4 + 12 * tags.count
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
        header += repeatElement(0, count: 68 - header.count) + illuminant.flatMap(word)
        header += repeatElement(0, count: ICCTagTable.headerSize - header.count)
        return header + table + data
    }

    /// A tag of type `type` (`XYZ `, `sf32`, `para`, `view`, …): its signature, the reserved word, then `words`.
    static func typed(_ type: String, _ words: [UInt32]) -> [UInt8] {
        signature(type) + ICCTagTable.bigEndian(0) + words.flatMap(ICCTagTable.bigEndian)
    }

    /// A `para` tone curve: ICC function type `function` (0–4) and its parameters.
    static func parametricCurve(function: UInt16, _ parameters: [UInt32]) -> [UInt8] {
        typed("para", [UInt32(function) << 16] + parameters)
    }

    /// A `curv` tone curve of one gamma, in u8Fixed8.
    static func gammaCurve(_ gamma: UInt16) -> [UInt8] {
        typed("curv", [1]) + [UInt8(gamma >> 8), UInt8(gamma & 0xFF)]
    }

    /// `value` in s15Fixed16, as a raw word.
    static func fixed(_ value: Double) -> UInt32 { UInt32(bitPattern: Int32((value * 65536).rounded())) }

    private static func signature(_ text: String) -> [UInt8] {
        ICCTagTable.bigEndian(ICCTagTable.signature(text))
    }
}
