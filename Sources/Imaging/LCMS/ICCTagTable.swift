/// An ICC profile's tag table (ICC.1:2010 §7.3), read with every entry checked against the bytes its tags may lie in:
/// how `ICCColourContent` and `WellKnownProfiles` find a profile's tags.
struct ICCTagTable {
    struct Entry {
        let signature: UInt32
        /// Where the tag's data lies in the profile.
        let range: Range<Int>
    }

    static let headerSize = 128

    let entries: [Entry]

    /// Nil when the table, or a tag it lists, lies past `size` bytes (the profile's when nil; never past them), or it
    /// lists more than `maxTags`.
    init?(_ profile: [UInt8], size: Int? = nil, maxTags: Int = .max) {
        let size = min(size ?? profile.count, profile.count)
        let first = Self.headerSize + 4
        guard size >= first else { return nil }
        let count = Int(Self.word(profile, at: Self.headerSize))
        guard count <= maxTags, count <= (size - first) / 12 else { return nil }
        var entries: [Entry] = []
        for entry in stride(from: first, to: first + 12 * count, by: 12) {
            let (offset, length) = (Int(Self.word(profile, at: entry + 4)), Int(Self.word(profile, at: entry + 8)))
            guard offset <= size, length <= size - offset else { return nil }
            entries.append(Entry(signature: Self.word(profile, at: entry), range: offset..<offset + length))
        }
        self.entries = entries
    }

    /// Where the first tag `signature` lies.
    func range(of signature: String) -> Range<Int>? {
        let wanted = Self.signature(signature)
        return entries.first { $0.signature == wanted }?.range
    }

    /// The big-endian 32-bit word at `offset`.
    static func word(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 << 8 | UInt32(bytes[offset + $1]) }
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) }
    }

    static func signature(_ text: String) -> UInt32 {
        precondition(text.utf8.count == 4, "an ICC signature is four characters")
        return text.utf8.reduce(0) { $0 << 8 | UInt32($1) }
    }
}
