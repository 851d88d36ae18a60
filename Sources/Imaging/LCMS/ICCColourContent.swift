/// What lcms2 reads of an ICC profile to link a transform, as bytes that are equal when two profiles link the same
/// transform: the header without the fields no transform depends on (the size, the CMM, the date, the platform, the
/// manufacturer and model, the creator, the profile ID), then every tag but the text ones (`desc`, `cprt`, `dmnd`,
/// `dmdd`, `vued`, `dscm`), in signature order, without its place in the file. `ICCTransformCache`'s key: a photo's
/// profile finds the transform linked from another file with the same colours, such as those the template links once
/// (`WellKnownProfiles`, docs/ARCHITECTURE.md §2 step 5).
///
/// Nil for a profile lcms2 could read otherwise than these bytes say (the cache then keys it by all its bytes): one
/// shorter than its tag table, a tag outside the size the header declares (lcms2 skips it), more tags than lcms2
/// reads (100), or a signature twice.
struct ICCColourContent: Hashable, Sendable {
    let bytes: [UInt8]

    /// The header's byte ranges no transform depends on.
    static let ignoredHeaderFields: [Range<Int>] = [0..<8, 24..<36, 40..<44, 48..<56, 80..<100]
    /// Tags that hold text only.
    static let textTags: Set<UInt32> = Set(["desc", "cprt", "dmnd", "dmdd", "vued", "dscm"].map(signature))
    /// The most tags lcms2 2.14 reads from a profile (`MAX_TABLE_TAG`).
    static let maxTags = 100

    init?(profile: [UInt8]) {
        let headerSize = 128
        guard profile.count >= headerSize + 4 else { return nil }
        func word(_ offset: Int) -> Int {
            (0..<4).reduce(0) { $0 << 8 | Int(profile[offset + $1]) }
        }
        let declaredSize = word(0)
        let tagCount = word(headerSize)
        guard declaredSize <= profile.count, tagCount <= Self.maxTags, headerSize + 4 + 12 * tagCount <= declaredSize
        else { return nil }
        var tags: [(signature: Int, range: Range<Int>)] = []
        for index in 0..<tagCount {
            let entry = headerSize + 4 + 12 * index
            let (signature, offset, size) = (word(entry), word(entry + 4), word(entry + 8))
            guard offset <= declaredSize, size <= declaredSize - offset else { return nil }
            if Self.textTags.contains(UInt32(signature)) { continue }
            tags.append((signature, offset..<offset + size))
        }
        tags.sort { $0.signature < $1.signature }
        guard zip(tags, tags.dropFirst()).allSatisfy({ $0.signature != $1.signature }) else { return nil }

        var bytes = Array(profile[0..<headerSize])
        for field in Self.ignoredHeaderFields {
            bytes.replaceSubrange(field, with: repeatElement(0, count: field.count))
        }
        for tag in tags {
            bytes += Self.bigEndian(UInt32(tag.signature)) + Self.bigEndian(UInt32(tag.range.count))
            bytes += profile[tag.range]
        }
        self.bytes = bytes
    }

    static func signature(_ text: String) -> UInt32 {
        precondition(text.utf8.count == 4, "an ICC signature is four characters")
        return text.utf8.reduce(0) { $0 << 8 | UInt32($1) }
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) }
    }
}
