import Synchronization

/// lcms2 transforms from embedded RGB profiles to sRGB, kept between renders. libvips' `icc_transform`
/// parses both profiles and links a new transform on every render (~8 ms for a phone photo's Display
/// P3 profile, most of it lcms2 inverting the tabulated curves of libvips' sRGB profile); most photos carry one of a
/// handful of profiles, so after the first render with a profile only the transform's application is left (~3 ms on
/// the 512 px square).
///
/// Keyed by the profile's colour content (`ICCColourContent`: what lcms2 links a transform from, so two files that
/// differ only in their text or dates share one transform; a hit compares it all), or by all its bytes when it has
/// none. A render helper's template links the profiles most photos carry (`WellKnownProfiles`) before it forks the
/// helpers, each of which serves one job. Bounded to `capacity` profiles, the least recently used dropped first, and
/// to profiles of at most `maxProfileBytes` (larger ones are not looked at: libvips converts them, as before). A
/// profile lcms2 refuses, or one that is not RGB, is remembered as unusable so that it is not parsed again; the caller
/// then converts with libvips, which applies its own fallbacks. Thread-safe; the lock is not held while a transform
/// is built.
final class ICCTransformCache: Sendable {
    let capacity: Int
    let maxProfileBytes: Int
    /// The profile every transform converts to.
    private let output: [UInt8]
    private let state = Mutex(State())

    private struct State {
        var entries: [Key: Entry] = [:]
        var clock: UInt64 = 0
        var builds = 0
    }

    /// A profile's place in the cache.
    private enum Key: Hashable {
        case colour(ICCColourContent)
        case bytes([UInt8])

        init(_ profile: [UInt8]) {
            self = ICCColourContent(profile: profile).map(Key.colour) ?? .bytes(profile)
        }
    }

    private struct Entry {
        /// Nil: lcms2 refused the profile.
        let transform: ICCTransform?
        var lastUse: UInt64
    }

    /// 32 profiles of up to 1 MiB each: RGB profiles are 0.5–60 KB (the large ones, 0.5–2 MB, are
    /// CMYK lookup tables, which never come here); the keys of a full cache stay well under 32 MiB.
    init(output: [UInt8], capacity: Int = 32, maxProfileBytes: Int = 1 << 20) {
        precondition(capacity > 0 && maxProfileBytes > 0)
        self.output = output
        self.capacity = capacity
        self.maxProfileBytes = maxProfileBytes
    }

    /// The transform from `profile` to the output profile, built on first use; nil if lcms2 cannot
    /// use `profile` (see the type's description) or it is too large to keep.
    func transform(for profile: [UInt8]) -> ICCTransform? {
        guard !profile.isEmpty, profile.count <= maxProfileBytes else { return nil }
        let key = Key(profile)
        let cached: ICCTransform?? = state.withLock { state in
            guard state.entries[key] != nil else { return .none }
            state.clock += 1
            state.entries[key]!.lastUse = state.clock
            return .some(state.entries[key]!.transform)
        }
        if let cached { return cached }

        let built = ICCTransform(from: profile, to: output)
        return state.withLock { state in
            state.clock += 1
            state.builds += 1
            if let raced = state.entries[key] {
                // Another render built it meanwhile: keep one, so every render shares it.
                state.entries[key]!.lastUse = state.clock
                return raced.transform
            }
            if state.entries.count >= capacity,
                let oldest = state.entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key
            {
                state.entries[oldest] = nil
            }
            state.entries[key] = Entry(transform: built, lastUse: state.clock)
            return built
        }
    }

    /// Whether `profile` is kept (usable or not).
    func contains(_ profile: [UInt8]) -> Bool {
        let key = Key(profile)
        return state.withLock { $0.entries[key] != nil }
    }

    /// How many profiles are kept.
    var count: Int { state.withLock { $0.entries.count } }

    /// How many transforms were built (or refused) since the cache was made.
    var builds: Int { state.withLock { $0.builds } }
}
