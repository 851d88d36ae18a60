import Clcms2

/// The ICC profile a HEIF/AVIF `colr` box of type `nclx` stands for (docs/ARCHITECTURE.md §2 step 5):
/// an RGB matrix/TRC profile with the box's primaries and white point and its transfer curve, built
/// with lcms2 so the render's colour conversion treats it as any embedded profile. Nil when no profile
/// is needed (BT.709 primaries with the sRGB curve: the pixels are sRGB already) or none describes it
/// (unspecified values, HDR curves such as PQ and HLG, which an SDR avatar does not reproduce anyway).
/// libvips 8.14 ignores nclx and assumes sRGB, which is wrong for the Display P3 of iPhone AVIFs.
enum NCLXProfile {
    /// ITU-T H.273 code points, as far as an SDR profile describes them.
    enum Transfer: Int {
        case bt709 = 1
        case gamma22 = 4
        case gamma28 = 5
        case bt601 = 6
        case smpte240 = 7
        case linear = 8
        case sRGB = 13
        case bt2020TenBit = 14
        case bt2020TwelveBit = 15
    }

    static let bt709Primaries = 1
    static let unspecifiedPrimaries = 2

    /// `chromaticities`: red, green, blue and white x, y (libheif decodes them from the code point).
    static func profile(primaries: Int, transfer: Int, chromaticities: [Float]) -> [UInt8]? {
        guard let curve = Transfer(rawValue: transfer), primaries != unspecifiedPrimaries,
            chromaticities.count == 8, chromaticities.allSatisfy({ $0 > 0 && $0 < 1 })
        else { return nil }
        if primaries == bt709Primaries && curve == .sRGB { return nil }
        let xy = chromaticities.map(Double.init)
        var white = cmsCIExyY(x: xy[6], y: xy[7], Y: 1)
        var triple = cmsCIExyYTRIPLE(
            Red: cmsCIExyY(x: xy[0], y: xy[1], Y: 1), Green: cmsCIExyY(x: xy[2], y: xy[3], Y: 1),
            Blue: cmsCIExyY(x: xy[4], y: xy[5], Y: 1))
        guard let tone = toneCurve(curve) else { return nil }
        defer { cmsFreeToneCurve(tone) }
        var curves: [OptionalToneCurve] = [tone, tone, tone]
        guard let profile = cmsCreateRGBProfile(&white, &triple, &curves) else { return nil }
        defer { cmsCloseProfile(profile) }
        var length: cmsUInt32Number = 0
        guard cmsSaveProfileToMem(profile, nil, &length) != 0, length > 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        let saved = bytes.withUnsafeMutableBytes { raw in cmsSaveProfileToMem(profile, raw.baseAddress, &length) }
        return saved != 0 ? bytes : nil
    }

    private typealias OptionalToneCurve = OpaquePointer?

    /// The curve from encoded values to linear light (lcms2's parametric types 1 and 4).
    private static func toneCurve(_ transfer: Transfer) -> OpaquePointer? {
        switch transfer {
        case .sRGB:
            var parameters: [Double] = [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045]
            return cmsBuildParametricToneCurve(nil, 4, &parameters)
        case .bt709, .bt601, .bt2020TenBit, .bt2020TwelveBit, .smpte240:
            var parameters: [Double] = [1 / 0.45, 1 / 1.099, 0.099 / 1.099, 1 / 4.5, 0.081]
            return cmsBuildParametricToneCurve(nil, 4, &parameters)
        case .gamma22:
            return cmsBuildGamma(nil, 2.2)
        case .gamma28:
            return cmsBuildGamma(nil, 2.8)
        case .linear:
            return cmsBuildGamma(nil, 1.0)
        }
    }
}
