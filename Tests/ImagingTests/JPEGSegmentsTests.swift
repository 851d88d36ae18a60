import Testing

@testable import Imaging

@Suite("JPEG ICC segments")
struct JPEGSegmentsTests {
    /// SOI, a 16-byte JFIF APP0, a DQT stub, EOI.
    let jpeg: [UInt8] =
        [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + [0, 1, 1, 0, 0, 1, 0, 1, 0, 0]
        + [0xFF, 0xDB, 0x00, 0x03, 0x00, 0xFF, 0xD9]

    @Test("the profile goes after APP0 as one ICC_PROFILE APP2 segment")
    func single() {
        let profile = Array(repeating: UInt8(7), count: 1000)
        let out = JPEGSegments.insertingICCProfile(profile, into: jpeg)
        let at = 2 + 2 + 16
        #expect(Array(out[..<at]) == Array(jpeg[..<at]))
        #expect(out[at] == 0xFF && out[at + 1] == 0xE2)
        let length = Int(out[at + 2]) << 8 | Int(out[at + 3])
        #expect(length == 2 + 12 + 2 + 1000)
        #expect(Array(out[(at + 4)..<(at + 16)]) == Array("ICC_PROFILE".utf8) + [0])
        #expect(out[at + 16] == 1 && out[at + 17] == 1)
        #expect(Array(out[(at + 18)..<(at + 1018)]) == profile)
        #expect(Array(out[(at + 1018)...]) == Array(jpeg[at...]))
    }

    @Test("a large profile is split into numbered chunks")
    func chunks() {
        let profile = (0..<(JPEGSegments.maxChunk + 10)).map { UInt8(truncatingIfNeeded: $0) }
        let out = JPEGSegments.insertingICCProfile(profile, into: jpeg)
        let first = 20
        let firstLength = Int(out[first + 2]) << 8 | Int(out[first + 3])
        #expect(firstLength == 65535)
        #expect(out[first + 16] == 1 && out[first + 17] == 2)
        let second = first + 2 + firstLength
        #expect(out[second] == 0xFF && out[second + 1] == 0xE2)
        #expect(out[second + 16] == 2 && out[second + 17] == 2)
        #expect(out.count == jpeg.count + profile.count + 2 * (4 + 14))
    }

    @Test("non-JPEG input is left alone")
    func notJPEG() {
        #expect(
            JPEGSegments.insertingICCProfile([1, 2, 3], into: [0x89, 0x50, 0x4E, 0x47]) == [0x89, 0x50, 0x4E, 0x47])
    }
}
