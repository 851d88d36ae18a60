/// The embedded profiles most photos carry, rebuilt from their colour content (`ICCColourContent`): a render helper's
/// template links their transforms to sRGB once (`AvatarRenderer.warmUp`), and each helper it forks finds them linked,
/// as a helper serving job after job found its last job's (docs/ARCHITECTURE.md §2 step 5), and its job only applies
/// one (`ICCTransformCache`).
enum WellKnownProfiles {
    /// Apple's Display P3, in the two versions iPhones embed: the one dated 2015 (the iPhone 7 Plus HEIC of the test
    /// fixtures) and the one dated 2022 (the iOS 18 HEIC of the corpus). They differ in their white point tag and
    /// curve.
    static let all: [[UInt8]] = [
        displayP3(
            whitePoint: [0x0000_F351, 0x0001_0000, 0x0001_16CC],
            curve: [0x0002_6666, 0x0000_F2B0, 0x0000_0D50, 0x0000_13B6, 0x0000_09FC]),
        displayP3(
            whitePoint: [0x0000_F6D5, 0x0001_0000, 0x0000_D32C],
            curve: [0x0002_6666, 0x0000_F2A7, 0x0000_0D59, 0x0000_13D0, 0x0000_0A5B]),
    ]

    /// An ICC v4 display profile with Display P3's colorants (adapted to D50) and chromatic adaptation, all raw
    /// s15Fixed16 words as Apple's profiles hold them; `curve`: the parameters of an ICC type 3 curve.
    private static func displayP3(whitePoint: [UInt32], curve: [UInt32]) -> [UInt8] {
        func words(_ values: [UInt32]) -> [Int32] { values.map { Int32(bitPattern: $0) } }
        func xyz(_ values: [UInt32]) -> [UInt8] {
            let xyz = words(values)
            return ICCProfileBytes.xyz(xyz[0], xyz[1], xyz[2])
        }
        let tone = ICCProfileBytes.parametricCurve(function: 3, words(curve))
        let tags: [(signature: String, data: [UInt8])] = [
            ("wtpt", xyz(whitePoint)),
            ("rXYZ", xyz([0x0000_83DF, 0x0000_3DBF, 0xFFFF_FFBB])),
            ("gXYZ", xyz([0x0000_4ABF, 0x0000_B137, 0x0000_0AB9])),
            ("bXYZ", xyz([0x0000_2838, 0x0000_110B, 0x0000_C8B9])),
            ("rTRC", tone), ("gTRC", tone), ("bTRC", tone),
            (
                "chad",
                ICCProfileBytes.s15Fixed16Array(
                    words([
                        0x0001_0C42, 0x0000_05DE, 0xFFFF_F326, 0x0000_0793, 0x0000_FD90, 0xFFFF_FBA2, 0xFFFF_FDA3,
                        0x0000_03DC, 0x0000_C06E,
                    ]))
            ),
        ]
        return ICCProfileBytes(
            version: 0x0400_0000, deviceClass: "mntr", colourSpace: "RGB ",
            illuminant: words([0x0000_F6D6, 0x0001_0000, 0x0000_D32D]), tags: tags
        ).bytes
    }
}
