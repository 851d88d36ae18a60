/// The embedded profiles most photos carry, rebuilt from their colour content (`ICCColourContent`): a render helper's
/// template links their transforms to sRGB once (`AvatarRenderer.warmUp`), and each helper it forks finds them linked,
/// as a helper serving job after job found its last job's (docs/ARCHITECTURE.md §2 step 5), and its job only applies
/// one (`ICCTransformCache`).
enum WellKnownProfiles {
    /// Apple's two Display P3 profiles, and the IEC sRGB profile, whose curves are those of `srgb` (libvips' sRGB
    /// profile; without a 1024-entry `rTRC` there, the IEC one is left out).
    static func all(srgb: [UInt8]) -> [[UInt8]] {
        guard let curve = ICCTagTable(srgb)?.range(of: "rTRC"), curve.count == 12 + 2 * 1024 else { return displayP3 }
        return displayP3 + [iecSRGB(curve: Array(srgb[curve]))]
    }

    /// Apple's Display P3, in the two versions iPhones embed: the one dated 2015 (the iPhone 7 Plus HEIC of the test
    /// fixtures) and the one dated 2022 (the iOS 18 HEIC of the corpus). They differ in their white point tag and
    /// curve.
    static let displayP3: [[UInt8]] = [
        displayP3(
            whitePoint: d65,
            curve: [0x0002_6666, 0x0000_F2B0, 0x0000_0D50, 0x0000_13B6, 0x0000_09FC]),
        displayP3(
            whitePoint: [0x0000_F6D5, 0x0001_0000, 0x0000_D32C],
            curve: [0x0002_6666, 0x0000_F2A7, 0x0000_0D59, 0x0000_13D0, 0x0000_0A5B]),
    ]

    /// "sRGB IEC61966-2.1", the ICC v2 profile cameras, phones and image editors have embedded since 1998 (the iPhone 6
    /// Plus JPEG of the corpus): its white and black points, colorants, viewing conditions, luminance, measurement and
    /// technology tags as raw words, and `curve`, the `curv` tag it shares with libvips' sRGB profile.
    private static func iecSRGB(curve: [UInt8]) -> [UInt8] {
        let tags: [(signature: String, data: [UInt8])] = [
            ("wtpt", ICCProfileBytes.typed("XYZ ", d65)),
            ("bkpt", ICCProfileBytes.typed("XYZ ", [0, 0, 0])),
            ("rXYZ", ICCProfileBytes.typed("XYZ ", [0x0000_6FA2, 0x0000_38F5, 0x0000_0390])),
            ("gXYZ", ICCProfileBytes.typed("XYZ ", [0x0000_6299, 0x0000_B785, 0x0000_18DA])),
            ("bXYZ", ICCProfileBytes.typed("XYZ ", [0x0000_24A0, 0x0000_0F84, 0x0000_B6CF])),
            (
                "view",
                ICCProfileBytes.typed(
                    "view",
                    [0x0013_A4FE, 0x0014_5F2E, 0x0010_CF14, 0x0003_EDCC, 0x0004_130B, 0x0003_5C9E, 0x0000_0001])
            ),
            ("lumi", ICCProfileBytes.typed("XYZ ", [0x004C_0956, 0x0050_0000, 0x0057_1FE7])),
            ("meas", ICCProfileBytes.typed("meas", [0x0000_0001, 0, 0, 0, 0, 0x0000_028F, 0x0000_0002])),
            ("tech", ICCProfileBytes.typed("sig ", [0x4352_5420])),
            ("rTRC", curve), ("gTRC", curve), ("bTRC", curve),
        ]
        return ICCProfileBytes(
            version: 0x0210_0000, deviceClass: "mntr", colourSpace: "RGB ", illuminant: illuminant, tags: tags
        ).bytes
    }

    /// An ICC v4 display profile with Display P3's colorants (adapted to D50) and chromatic adaptation, all raw
    /// s15Fixed16 words as Apple's profiles hold them; `curve`: the parameters of an ICC type 3 curve.
    private static func displayP3(whitePoint: [UInt32], curve: [UInt32]) -> [UInt8] {
        let tone = ICCProfileBytes.parametricCurve(function: 3, curve)
        let tags: [(signature: String, data: [UInt8])] = [
            ("wtpt", ICCProfileBytes.typed("XYZ ", whitePoint)),
            ("rXYZ", ICCProfileBytes.typed("XYZ ", [0x0000_83DF, 0x0000_3DBF, 0xFFFF_FFBB])),
            ("gXYZ", ICCProfileBytes.typed("XYZ ", [0x0000_4ABF, 0x0000_B137, 0x0000_0AB9])),
            ("bXYZ", ICCProfileBytes.typed("XYZ ", [0x0000_2838, 0x0000_110B, 0x0000_C8B9])),
            ("rTRC", tone), ("gTRC", tone), ("bTRC", tone),
            (
                "chad",
                ICCProfileBytes.typed(
                    "sf32",
                    [
                        0x0001_0C42, 0x0000_05DE, 0xFFFF_F326, 0x0000_0793, 0x0000_FD90, 0xFFFF_FBA2, 0xFFFF_FDA3,
                        0x0000_03DC, 0x0000_C06E,
                    ])
            ),
        ]
        return ICCProfileBytes(
            version: 0x0400_0000, deviceClass: "mntr", colourSpace: "RGB ", illuminant: illuminant, tags: tags
        ).bytes
    }

    /// The media white point of the 2015 Display P3 profile and of the IEC sRGB one: D65, as both write it.
    private static let d65: [UInt32] = [0x0000_F351, 0x0001_0000, 0x0001_16CC]

    /// The header's illuminant in all three profiles: D50, as ICC profiles write it.
    private static let illuminant: [UInt32] = [0x0000_F6D6, 0x0001_0000, 0x0000_D32D]
}
