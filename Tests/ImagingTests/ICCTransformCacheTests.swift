import CropGeometry
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Imaging

/// The cached lcms2 transforms that colour-manage opaque 8-bit RGB squares (`ICCTransformCache`,
/// `ColourConversion.cachedTransform`), against libvips' `icc_transform`, which converts the rest.
@Suite("Cached ICC transforms")
struct ICCTransformCacheTests {
    // MARK: The cache

    @Test("a hit returns the transform built on the first use, without building another")
    func hitReusesTransform() throws {
        let cache = try Self.cache()
        let profile = try Self.p3Profile()
        let first = try #require(cache.transform(for: profile))
        let second = try #require(cache.transform(for: profile))
        #expect(first === second)
        #expect(cache.builds == 1 && cache.count == 1)
        // Keyed by the content, not by the array: an equal copy hits too.
        let copy = try #require(cache.transform(for: Array(profile[...])))
        #expect(copy === first && cache.builds == 1)
    }

    @Test("at most `capacity` profiles are kept, the least recently used dropped first")
    func evictionBound() throws {
        let cache = try Self.cache(capacity: 2)
        let profiles = try (0..<4).map { try Self.variant(of: Self.p3Profile(), $0) }
        let a = try #require(cache.transform(for: profiles[0]))
        _ = try #require(cache.transform(for: profiles[1]))
        _ = try #require(cache.transform(for: profiles[0]))  // a is now the most recent
        _ = try #require(cache.transform(for: profiles[2]))  // drops profiles[1]
        #expect(cache.count == 2 && cache.builds == 3)
        #expect(cache.transform(for: profiles[0]) === a)
        #expect(cache.builds == 3)
        _ = try #require(cache.transform(for: profiles[1]))  // built again
        #expect(cache.builds == 4 && cache.count == 2)
        for profile in profiles {
            _ = cache.transform(for: profile)
            #expect(cache.count <= 2)
        }
    }

    @Test("profiles larger than the bound are not parsed nor kept")
    func profileSizeBound() throws {
        let profile = try Self.p3Profile()
        let cache = try Self.cache(maxProfileBytes: profile.count - 1)
        #expect(cache.transform(for: profile) == nil)
        #expect(cache.builds == 0 && cache.count == 0)
        #expect(try Self.cache(maxProfileBytes: profile.count).transform(for: profile) != nil)
    }

    @Test("one transform applied from several threads at once gives the same pixels as from one")
    func concurrentUse() throws {
        let cache = try Self.cache()
        let profile = try Self.p3Profile()
        // Every thread asks the cache for the same new profile at once: all share one transform.
        let transforms = Mutex<[ObjectIdentifier]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            if let transform = cache.transform(for: profile) {
                transforms.withLock { $0.append(ObjectIdentifier(transform)) }
            }
        }
        let identities = transforms.withLock { $0 }
        #expect(identities.count == 8 && Set(identities).count == 1)
        #expect(cache.count == 1)

        let transform = try #require(cache.transform(for: profile))
        let count = 512 * 512
        var state: UInt32 = 12345
        let input = (0..<count * 3).map { _ -> UInt8 in
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: state >> 24)
        }
        let expected = Self.apply(transform, input, count: count)
        #expect(expected != input)
        let mismatches = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            if Self.apply(transform, input, count: count) != expected {
                mismatches.withLock { $0 += 1 }
            }
        }
        #expect(mismatches.withLock { $0 } == 0)
    }

    // MARK: Which images take the cached transform

    @Test("a damaged profile, a CMYK or a grey profile on an RGB photo: libvips converts, as before")
    func unusableProfilesFallBack() throws {
        let photo = try Corpus.bytes("colour/p3_displayp3-v4_craft-beer.jpg")
        let cmyk = try Self.profile(of: Corpus.bytes("colour/cmyk_swop-profile_channel.jpg"))
        var garbage = try Self.p3Profile()
        for index in stride(from: 128, to: garbage.count, by: 7) { garbage[index] ^= 0x5A }
        let cases: [(String, [UInt8])] = [
            ("damaged", garbage),
            ("random bytes", (0..<600).map { UInt8(truncatingIfNeeded: $0 &* 37) }),
            ("CMYK", cmyk),
            ("grey", Self.greyProfile()),
        ]
        for (name, profile) in cases {
            let bytes = JPEGSegments.insertingICCProfile(profile, into: ProfileRemoval.jpeg(photo))
            let cache = try Self.cache()
            let image = try Self.open(bytes)
            #expect(image.iccProfile == profile, "\(name): the test photo does not carry the profile")
            #expect(ColourConversion.cachedTransform(for: image, in: cache) == nil, "\(name)")
            // Remembered as unusable: not parsed again.
            #expect(ColourConversion.cachedTransform(for: image, in: cache) == nil && cache.builds == 1, "\(name)")
            let squares = try Self.squares(bytes, input: .centred, cache: cache)
            #expect(squares.cached == squares.libvips, "\(name): the render differs from libvips' own path")
        }
    }

    /// A copy of `image` carrying `profile` as its ICC profile.
    static func withProfile(_ image: VImage, _ profile: [UInt8]) throws -> VImage {
        let copy = try image.copy()
        profile.withUnsafeBytes { copy.attachICCProfile($0) }
        return copy
    }

    @Test("CMYK, grey, alpha and images without a profile never look at the cache")
    func otherImagesAreNotEligible() throws {
        let cache = try Self.cache()
        let p3 = try Self.p3Profile()
        let images = [
            try Self.open(Corpus.bytes("colour/cmyk_swop-profile_channel.jpg")),
            try Self.open(Corpus.bytes("colour/cmyk_no-profile_channel.jpg")),
            try Self.withProfile(Self.open(Corpus.bytes("colour/grey_cd1.1_531x373.jpg")), p3),
            try Self.withProfile(Self.open(Corpus.bytes("colour/rgba_blackbug_2048x1536.png")), p3),
            try Self.open(ProfileRemoval.jpeg(Corpus.bytes("colour/p3_displayp3-v4_craft-beer.jpg"))),
        ]
        for image in images {
            #expect(ColourConversion.cachedTransform(for: image, in: cache) == nil)
        }
        #expect(cache.builds == 0 && cache.count == 0)
    }

    // MARK: Pixels against libvips' icc_transform

    /// libvips 8.14's `icc_transform` links the embedded profile to its sRGB profile in one 8-bit lcms2
    /// transform with the same intent and flags, so the pixels are the same. Measured, centred and
    /// zoomed: the fixtures' Display P3 JPEG and HEIC, and the corpus' Display P3 and Adobe RGB JPEGs,
    /// HEIC, AVIF, TIFF, WebP and camera JPEGs with their profiles: maximum difference 0, mean 0 (and
    /// `make bench`'s generated 12 MP P3 photo: byte-identical avatars).
    static let maxSampleDifference = 0
    static let maxMeanDifference = 0.0

    @Test("the P3 fixture's square matches libvips' conversion")
    func p3MatchesLibvips() throws {
        let bytes = try Corpus.bytes("colour/p3_displayp3-v4_craft-beer.jpg")
        let cache = try Self.cache()
        for input in try Self.inputs(bytes) {
            let squares = try Self.squares(bytes, input: input, cache: cache)
            let difference = Self.difference(squares.cached, squares.libvips)
            #expect(difference.max <= Self.maxSampleDifference, "\(input): \(difference)")
            #expect(difference.mean <= Self.maxMeanDifference, "\(input): \(difference)")
        }
        #expect(cache.builds == 1, "one transform for every crop of the photo")
    }

    @Test("the renderer converts through the process's cache")
    func rendererUsesSharedCache() throws {
        let result = try render("colour/p3_displayp3-v4_craft-beer.jpg")
        #expect(result.avatar.data.count > 0)
        #expect(try RenderResources.shared().iccTransforms.contains(Self.p3Profile()))
    }

    @Test("every test photo with an RGB profile: the square matches libvips' conversion")
    func everyProfiledPhotoMatchesLibvips() throws {
        let cache = try Self.cache()
        var compared: [String] = []
        for folder in ["colour", "formats", "camera", "orientation", "metadata", "size", "panorama"] {
            for path in try Corpus.files(in: folder) {
                let bytes = try Corpus.bytes(path)
                guard let probed = try? renderer().probe(bytes), probed.header.hasICCProfile,
                    probed.header.bands == 3, probed.header.bitDepth == 8,
                    let image = try? Self.open(bytes), ColourConversion.cachedTransform(for: image, in: cache) != nil
                else { continue }
                for input in try Self.inputs(bytes) {
                    let squares = try Self.squares(bytes, input: input, cache: cache)
                    let difference = Self.difference(squares.cached, squares.libvips)
                    #expect(difference.max <= Self.maxSampleDifference, "\(path) \(input): \(difference)")
                    #expect(difference.mean <= Self.maxMeanDifference, "\(path) \(input): \(difference)")
                }
                compared.append(path)
            }
        }
        #expect(compared.contains("colour/p3_displayp3-v4_craft-beer.jpg"))
        #expect(compared.contains("formats/heic_iphone-7-plus_1008x756.heic"))
    }

    // MARK: Helpers

    static func cache(capacity: Int = 32, maxProfileBytes: Int = 1 << 20) throws -> ICCTransformCache {
        ICCTransformCache(output: try Vips.library().srgbProfile, capacity: capacity, maxProfileBytes: maxProfileBytes)
    }

    static func open(_ bytes: [UInt8]) throws -> VImage {
        let probed = try renderer().probe(bytes)
        return try VipsLoader.open(probed.input, as: probed.header.format)
    }

    static func profile(of bytes: [UInt8]) throws -> [UInt8] {
        try #require(try open(bytes).iccProfile)
    }

    static func p3Profile() throws -> [UInt8] {
        try profile(of: Corpus.bytes("colour/p3_displayp3-v4_craft-beer.jpg"))
    }

    /// The same profile with other header flags (byte 47, which no transform depends on but the cache's key keeps):
    /// another key, as valid.
    static func variant(of profile: [UInt8], _ index: Int) -> [UInt8] {
        var copy = profile
        copy[47] = UInt8(index)
        return copy
    }

    /// A valid ICC v2 grey display profile: D50 white point and a gamma 2.2 grey tone curve.
    static func greyProfile() -> [UInt8] {
        let d50 = [0.9642, 1.0, 0.8249].map(ICCProfileBytes.fixed)
        return ICCProfileBytes(
            version: 0x0210_0000, deviceClass: "mntr", colourSpace: "GRAY", illuminant: d50,
            tags: [("wtpt", ICCProfileBytes.typed("XYZ ", d50)), ("kTRC", ICCProfileBytes.gammaCurve(0x0233))]
        ).bytes
    }

    /// The centred square and a zoomed one off-centre, where the geometry allows it.
    static func inputs(_ bytes: [UInt8]) throws -> [CropInput] {
        let size = try renderer().probe(bytes).header.orientedSize
        let side = Double(min(size.width, size.height)) * 0.6
        let zoomed = CropInput.rect(
            PixelRect(x: Double(size.width) * 0.35, y: Double(size.height) * 0.3, side: side), reference: nil)
        return [.centred] + ((try? CropGeometry.plan(source: size, input: zoomed)) != nil ? [zoomed] : [])
    }

    /// The decoded square's pixels with `cache`, and with a cache that takes no profile (libvips'
    /// `icc_transform` converts every one: the pipeline before the cache).
    static func squares(_ bytes: [UInt8], input: CropInput, cache: ICCTransformCache) throws
        -> (cached: [UInt8], libvips: [UInt8])
    {
        let probed = try renderer().probe(bytes)
        let options = RenderOptions()
        let plan = try CropGeometry.plan(source: probed.header.orientedSize, input: input, settings: options.settings)
        func square(_ transforms: ICCTransformCache) throws -> [UInt8] {
            let square = try CropPipeline.decode(
                probed.input, header: probed.header, plan: plan, options: options, fallback: false,
                transforms: transforms, logger: testLogger)
            #expect(square.image.bands == 3 && square.image.isUchar && square.image.interpretationName == "srgb")
            return try square.image.pixels()
        }
        let libvips = ICCTransformCache(output: try Vips.library().srgbProfile, maxProfileBytes: 1)
        return (try square(cache), try square(libvips))
    }

    static func apply(_ transform: ICCTransform, _ input: [UInt8], count: Int) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: count * 3)
        input.withUnsafeBytes { source in
            output.withUnsafeMutableBytes { transform.apply(source, into: $0, count: count) }
        }
        return output
    }

    static func difference(_ a: [UInt8], _ b: [UInt8]) -> (max: Int, mean: Double) {
        precondition(a.count == b.count && !a.isEmpty)
        var maximum = 0
        var total = 0
        for index in a.indices {
            let delta = abs(Int(a[index]) - Int(b[index]))
            maximum = max(maximum, delta)
            total += delta
        }
        return (maximum, Double(total) / Double(a.count))
    }
}
