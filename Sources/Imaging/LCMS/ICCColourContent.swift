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
    static let textTags = Set(["desc", "cprt", "dmnd", "dmdd", "vued", "dscm"].map(ICCTagTable.signature))
    /// The most tags lcms2 2.14 reads from a profile (`MAX_TABLE_TAG`).
    static let maxTags = 100

    init?(profile: [UInt8]) {
        guard profile.count >= ICCTagTable.headerSize else { return nil }
        let declaredSize = Int(ICCTagTable.word(profile, at: 0))
        guard declaredSize <= profile.count,
            let table = ICCTagTable(profile, size: declaredSize, maxTags: Self.maxTags)
        else { return nil }
        let tags = table.entries.filter { !Self.textTags.contains($0.signature) }.sorted { $0.signature < $1.signature }
        guard zip(tags, tags.dropFirst()).allSatisfy({ $0.signature != $1.signature }) else { return nil }

        var bytes = Array(profile[0..<ICCTagTable.headerSize])
        for field in Self.ignoredHeaderFields {
            bytes.replaceSubrange(field, with: repeatElement(0, count: field.count))
        }
        for tag in tags {
            bytes += ICCTagTable.bigEndian(tag.signature) + ICCTagTable.bigEndian(UInt32(tag.range.count))
            bytes += profile[tag.range]
        }
        self.bytes = bytes
    }
}
