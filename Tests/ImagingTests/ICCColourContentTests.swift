import Foundation
import TestEnvironment
import Testing

@testable import Imaging

/// The colour content that keys the cached transforms (`ICCColourContent`), and the profiles a render helper's
/// template links once (`WellKnownProfiles`).
@Suite("ICC colour content")
struct ICCColourContentTests {
    /// Apple's Display P3 of 2015, as the iPhone 7 Plus HEIC of the test fixtures embeds it.
    static func appleP3() throws -> [UInt8] {
        try ICCTransformCacheTests.profile(of: Corpus.bytes("formats/heic_iphone-7-plus_1008x756.heic"))
    }

    static func content(_ profile: [UInt8]) throws -> [UInt8] {
        try #require(ICCColourContent(profile: profile)).bytes
    }

    /// The rebuilt profiles, with the IEC sRGB one.
    static func wellKnown() throws -> [[UInt8]] {
        let all = WellKnownProfiles.all(srgb: try Vips.library().srgbProfile)
        #expect(all.count == WellKnownProfiles.displayP3.count + 1, "libvips' sRGB curve found")
        return all
    }

    /// The IEC sRGB profile as the corpus' iPhone 6 Plus JPEG embeds it, when the larger corpus is there.
    static func iecSRGB() throws -> [UInt8]? {
        let path = "camera/phone_iphone-6-plus_8mp_gps.jpg"
        return Corpus.url(path) == nil ? nil : try ICCTransformCacheTests.profile(of: Corpus.bytes(path))
    }

    @Test("Apple's Display P3 profiles and their rebuilt copies have one colour content each")
    func wellKnownMatchApple() throws {
        let apple = try Self.appleP3()
        #expect(apple.count == 548 && apple != WellKnownProfiles.displayP3[0], "not the rebuilt profile itself")
        #expect(try Self.content(apple) == Self.content(WellKnownProfiles.displayP3[0]))
        #expect(try Self.content(WellKnownProfiles.displayP3[0]) != Self.content(WellKnownProfiles.displayP3[1]))
        // The iOS 18 HEIC of the larger corpus, when it is there.
        let ios18 = "formats/heic_iphone-ios18_tmap-gainmap_4284x5712.heic"
        if Corpus.url(ios18) != nil {
            let profile = try ICCTransformCacheTests.profile(of: Corpus.bytes(ios18))
            #expect(try Self.content(profile) == Self.content(WellKnownProfiles.displayP3[1]))
        }
        if let iec = try Self.iecSRGB() {
            #expect(iec.count == 3144)
            #expect(try Self.content(iec) == Self.content(Self.wellKnown()[2]))
        }
    }

    @Test("a rebuilt profile links the transform its original links: every 8-bit colour the same")
    func wellKnownLinkTheSameTransform() throws {
        try Self.expectSameTransform(Self.appleP3(), WellKnownProfiles.displayP3[0])
        if let iec = try Self.iecSRGB() { try Self.expectSameTransform(iec, Self.wellKnown()[2]) }
    }

    static func expectSameTransform(_ originalProfile: [UInt8], _ rebuiltProfile: [UInt8]) throws {
        let output = try Vips.library().srgbProfile
        let original = try #require(ICCTransform(from: originalProfile, to: output))
        let rebuilt = try #require(ICCTransform(from: rebuiltProfile, to: output))
        let chunk = 1 << 20
        var colours = [UInt8](repeating: 0, count: 3 * chunk)
        var differing = 0
        for start in stride(from: 0, to: 1 << 24, by: chunk) {
            for index in 0..<chunk {
                let colour = start + index
                colours[3 * index] = UInt8(colour >> 16)
                colours[3 * index + 1] = UInt8(truncatingIfNeeded: colour >> 8)
                colours[3 * index + 2] = UInt8(truncatingIfNeeded: colour)
            }
            let expected = ICCTransformCacheTests.apply(original, colours, count: chunk)
            if ICCTransformCacheTests.apply(rebuilt, colours, count: chunk) != expected { differing += 1 }
        }
        #expect(differing == 0, "chunks of 2^20 colours that differ")
    }

    @Test("text tags, tag order and the header's bookkeeping leave the content; a colour byte changes it")
    func whatTheContentHolds() throws {
        let apple = try Self.appleP3()
        let content = try Self.content(apple)
        var bookkeeping = apple
        // Every ignored field but the size, which says where the tags may lie.
        for field in ICCColourContent.ignoredHeaderFields {
            for index in field where index >= 4 { bookkeeping[index] ^= 0xA5 }
        }
        #expect(try Self.content(bookkeeping) == content)
        let desc = try #require(ICCTagTable(apple)?.range(of: "desc"))
        var text = apple
        text[desc.lowerBound + 20] ^= 0x01
        #expect(try Self.content(text) == content)
        // The same tags written in another order, at other offsets.
        var reordered = ICCProfileBytes(
            version: 0x0400_0000, deviceClass: "mntr", colourSpace: "RGB ", illuminant: [], tags: [])
        reordered.illuminant = (0..<3).map { ICCTagTable.word(apple, at: 68 + 4 * $0) }
        for signature in ["chad", "bTRC", "gTRC", "rTRC", "bXYZ", "gXYZ", "rXYZ", "wtpt"] {
            let range = try #require(ICCTagTable(apple)?.range(of: signature))
            reordered.tags.append((signature, Array(apple[range])))
        }
        #expect(try Self.content(reordered.bytes) == content)

        for (name, index) in [
            ("version", 8), ("class", 12), ("flags", 47), ("intent", 67), ("illuminant", 70),
            ("rXYZ", try #require(ICCTagTable(apple)?.range(of: "rXYZ")).lowerBound + 9),
            ("rTRC", try #require(ICCTagTable(apple)?.range(of: "rTRC")).lowerBound + 14),
            ("chad", try #require(ICCTagTable(apple)?.range(of: "chad")).lowerBound + 43),
        ] {
            var changed = apple
            changed[index] ^= 0x01
            #expect(ICCColourContent(profile: changed)?.bytes != content, "\(name)")
        }
        var extraTag = reordered
        extraTag.tags.append(("A2B0", [0x6D, 0x41, 0x42, 0x20, 0, 0, 0, 0]))
        #expect(try Self.content(extraTag.bytes) != content, "a table tag lcms2 would read first")
    }

    @Test("a profile lcms2 could read otherwise has no colour content: the cache keys it by its bytes")
    func malformedHasNone() throws {
        let apple = try Self.appleP3()
        let rXYZ = try #require(ICCTagTable(apple)?.range(of: "rXYZ"))
        let rXYZEntry = try #require(Self.entry("rXYZ", in: apple))
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("header only", Array(apple[0..<128])),
            ("cut inside the tag table", Array(apple[0..<150])),
            ("cut inside a tag", Self.declaringOwnSize(Array(apple[0..<rXYZ.lowerBound + 4]))),
            ("declares more than it holds", Self.setting(word: UInt32(apple.count + 1), at: 0, in: apple)),
            ("a tag past the declared size", Self.setting(word: UInt32(rXYZ.lowerBound + 4), at: 0, in: apple)),
            (
                "a tag past the end",
                Self.setting(word: UInt32(apple.count - 4), at: rXYZEntry + 4, in: apple)
            ),
            (
                "a tag's size overflowing",
                Self.setting(word: UInt32.max, at: rXYZEntry + 8, in: apple)
            ),
            ("101 tags", Self.setting(word: 101, at: 128, in: apple + [UInt8](repeating: 0, count: 1212))),
            (
                "a signature twice",
                Self.setting(word: ICCTagTable.signature("gXYZ"), at: rXYZEntry, in: apple)
            ),
        ]
        for (name, profile) in cases {
            #expect(ICCColourContent(profile: profile) == nil, "\(name)")
        }
    }

    @Test("thousands of damaged profiles: a content or none, never a trap")
    func mutatedProfiles() throws {
        let apple = try Self.appleP3()
        var random = SplitMix64(seed: 0x1CC)
        var some = 0
        for _ in 0..<5_000 {
            var profile = apple
            for _ in 0...random.next(4) {
                let index = random.next(profile.count)
                switch random.next(3) {
                case 0: profile[index] = UInt8(truncatingIfNeeded: random.next())
                case 1: profile.removeSubrange(index...)
                default: profile[index & ~3] = 0xFF
                }
                if profile.isEmpty { break }
            }
            if ICCColourContent(profile: profile) != nil { some += 1 }
        }
        #expect(some > 0)
    }

    @Test("a profile with the colour content of one already linked takes that transform")
    func cacheSharesOneTransform() throws {
        let cache = try ICCTransformCacheTests.cache()
        let linked = try #require(cache.transform(for: WellKnownProfiles.displayP3[0]))
        #expect(try cache.transform(for: Self.appleP3()) === linked)
        #expect(cache.builds == 1 && cache.count == 1)
    }

    @Test("the HEIC fixture's square, converted by the linked transform: libvips' pixels, nothing linked again")
    func linkedTransformGivesLibvipsPixels() throws {
        let cache = try ICCTransformCacheTests.cache()
        let wellKnown = try Self.wellKnown()
        for profile in wellKnown { #expect(cache.transform(for: profile) != nil) }
        let bytes = try Corpus.bytes("formats/heic_iphone-7-plus_1008x756.heic")
        for input in try ICCTransformCacheTests.inputs(bytes) {
            let squares = try ICCTransformCacheTests.squares(bytes, input: input, cache: cache)
            #expect(squares.cached == squares.libvips, "\(input)")
        }
        #expect(cache.builds == wellKnown.count)
    }

    @Test("the warm-up links the well-known profiles into the renderer's cache")
    func warmUpLinks() throws {
        try renderer().warmUp()
        let transforms = try RenderResources.shared().iccTransforms
        for profile in try Self.wellKnown() { #expect(transforms.contains(profile)) }
        #expect(transforms.contains(try Self.appleP3()))
    }

    // MARK: Helpers

    static func setting(word value: UInt32, at offset: Int, in bytes: [UInt8]) -> [UInt8] {
        var copy = bytes
        copy.replaceSubrange(offset..<offset + 4, with: ICCTagTable.bigEndian(value))
        return copy
    }

    static func declaringOwnSize(_ bytes: [UInt8]) -> [UInt8] {
        setting(word: UInt32(bytes.count), at: 0, in: bytes)
    }

    /// The offset of `signature`'s entry in the tag table.
    static func entry(_ signature: String, in profile: [UInt8]) -> Int? {
        let wanted = ICCTagTable.signature(signature)
        return ICCTagTable(profile)?.entries.firstIndex { $0.signature == wanted }
            .map { ICCTagTable.headerSize + 4 + 12 * $0 }
    }

}
