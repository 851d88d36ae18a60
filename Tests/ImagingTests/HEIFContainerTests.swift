import CropGeometry
import Foundation
import Testing

@testable import Imaging

/// The sizes a HEIF/AVIF container declares, read from its boxes before libheif sees it.
@Suite("HEIF container (ISOBMFF boxes)")
struct HEIFContainerTests {
    static func parse(_ bytes: [UInt8]) -> Result<HEIFContainer, HEIFContainer.Malformed> {
        Result { () throws(HEIFContainer.Malformed) in try HEIFContainer.parse(bytes) }
    }

    @Test("the primary item's ispe, found through pitm and ipma, and the largest ispe of any item")
    func primaryAndLargest() throws {
        // Item 1: a 320×240 thumbnail; item 2, the primary: a 4032×3024 grid; items 3–4: its 512×512 tiles.
        let file = ISOBMFFBuilder.file(
            primary: 2,
            properties: [
                ISOBMFFBuilder.ispe(320, 240), ISOBMFFBuilder.ispe(4032, 3024), ISOBMFFBuilder.ispe(512, 512),
            ],
            associations: [(1, [1]), (2, [2]), (3, [3]), (4, [3])])
        let container = try HEIFContainer.parse(file)
        #expect(container.primary == PixelSize(width: 4032, height: 3024))
        #expect(container.largest == PixelSize(width: 4032, height: 3024))

        // An auxiliary item (an alpha or depth plane) larger than the primary: libheif decodes it too.
        let sneaky = ISOBMFFBuilder.file(
            primary: 1, properties: [ISOBMFFBuilder.ispe(640, 480), ISOBMFFBuilder.ispe(15000, 15000)],
            associations: [(1, [1]), (2, [2])])
        let judged = try HEIFContainer.parse(sneaky)
        #expect(judged.primary == PixelSize(width: 640, height: 480))
        #expect(judged.largest == PixelSize(width: 15000, height: 15000))
    }

    @Test("32-bit item ids (pitm and ipma version 1) and 15-bit property indices (ipma flag 1)")
    func wideFields() throws {
        let properties = (0..<130).map { ISOBMFFBuilder.box("free", [UInt8($0)]) } + [ISOBMFFBuilder.ispe(1000, 800)]
        let file = ISOBMFFBuilder.file(
            primary: 70000, pitmVersion: 1, properties: properties, associations: [(70000, [131 | 0x8000])],
            ipmaVersion: 1, wide: true)
        #expect(try HEIFContainer.parse(file).primary == PixelSize(width: 1000, height: 800))
    }

    @Test("a 64-bit box size and a size-0 (to the end) box are understood")
    func boxSizes() throws {
        let plain = ISOBMFFBuilder.file(
            properties: [ISOBMFFBuilder.ispe(800, 600)], associations: [(1, [1])], trailing: [])
        // The same meta as a 64-bit-size box, and an mdat that runs to the end of the file.
        let ftypLength = Int(plain[3])
        let meta = Array(plain[ftypLength...])
        let large = Array(meta[4..<8]) + [0, 0, 0, 0] + ISOBMFFBuilder.be32(UInt32(meta.count + 8)) + Array(meta[8...])
        let file =
            Array(plain[..<ftypLength]) + ISOBMFFBuilder.be32(1) + large + ISOBMFFBuilder.be32(0) + Array("mdat".utf8)
            + [1, 2]
        #expect(try HEIFContainer.parse(file).primary == PixelSize(width: 800, height: 600))
    }

    @Test("a declared size past Int's range saturates instead of trapping")
    func hugeDeclaredSize() throws {
        let file = ISOBMFFBuilder.file(
            properties: [ISOBMFFBuilder.ispe(0xFFFF_FFFF, 0xFFFF_FFFF)], associations: [(1, [1])])
        let container = try HEIFContainer.parse(file)
        #expect(container.largest.pixelCount == Int.max)
    }

    /// docs/ARCHITECTURE.md §7: an `ipma` that repeats the primary item's entry with 255 associations
    /// each used to grow a list of property indices ~16× the header's size. What the parser keeps
    /// no longer grows with entries: only the first `ispe` of the primary item is kept.
    @Test("repeated entries for the primary item keep its first ispe, and nothing else")
    func repeatedPrimaryEntries() throws {
        let properties = [ISOBMFFBuilder.box("free", []), ISOBMFFBuilder.ispe(640, 480), ISOBMFFBuilder.ispe(900, 900)]
        let repeated = Array(repeating: (item: 1, properties: Array(repeating: 1, count: 254) + [2]), count: 2_000)
        let file = ISOBMFFBuilder.file(
            properties: properties, associations: repeated + [(1, [3])] + [(2, [3])])
        let container = try HEIFContainer.parse(file)
        #expect(container.primary == PixelSize(width: 640, height: 480))
        #expect(container.largest == PixelSize(width: 900, height: 900))
    }

    /// docs/ARCHITECTURE.md §7: one `ipma` box may not list more items than a file can have boxes for.
    @Test("an ipma listing more entries than the limit is refused")
    func tooManyEntries() {
        let limit = HEIFContainer.maxEntriesPerAssociationBox
        let entries = (1...(limit + 1)).map { (item: $0, properties: [1]) }
        let file = ISOBMFFBuilder.file(properties: [ISOBMFFBuilder.ispe(800, 600)], associations: entries)
        guard case .failure(let error) = Self.parse(file) else {
            Issue.record("an ipma with \(limit + 1) entries parsed")
            return
        }
        #expect(error.description.contains("more than \(limit)"), "\(error)")
        let atLimit = ISOBMFFBuilder.file(
            properties: [ISOBMFFBuilder.ispe(800, 600)], associations: Array(entries.prefix(limit)))
        #expect((try? Self.parse(atLimit).get())?.primary == PixelSize(width: 800, height: 600))
    }

    @Test("malformed containers are refused, never trapped on", arguments: Self.malformedSamples.keys.sorted())
    func malformed(name: String) throws {
        let sample = try #require(Self.malformedSamples[name])
        guard case .failure = Self.parse(sample) else {
            Issue.record("\(name) parsed")
            return
        }
    }

    static let malformedSamples: [String: [UInt8]] = {
        let avif = ISOBMFFBuilder.ftyp("avif", compatible: ["mif1"])
        let good = ISOBMFFBuilder.file(properties: [ISOBMFFBuilder.ispe(800, 600)], associations: [(1, [1])])
        var lyingCount = good
        let ipma = lyingCount.firstRange(of: Array("ipma".utf8))!.lowerBound
        lyingCount.replaceSubrange((ipma + 8)..<(ipma + 12), with: ISOBMFFBuilder.be32(0x7FFF_FFFF))
        var manyAssociations = good
        manyAssociations[ipma + 14] = 200  // item 1 claims 200 one-byte associations
        var cutIspe = good
        let ispe = cutIspe.firstRange(of: Array("ispe".utf8))!.lowerBound
        cutIspe.replaceSubrange((ispe - 4)..<ispe, with: ISOBMFFBuilder.be32(16))  // ispe shorter than its fields…
        return [
            "no meta": avif + ISOBMFFBuilder.box("mdat", [0]),
            "not starting with ftyp": ISOBMFFBuilder.box("free", []) + good,
            "meta size past the end": avif + ISOBMFFBuilder.be32(0xFFFF_FFF0) + Array("meta".utf8) + [0, 0, 0, 0],
            "box size below its header": avif + ISOBMFFBuilder.be32(4) + Array("meta".utf8),
            "64-bit size past the end": avif + ISOBMFFBuilder.be32(1) + Array("meta".utf8) + [
                0x7F, 0, 0, 0, 0, 0, 0, 0,
            ],
            "64-bit size cut": avif + ISOBMFFBuilder.be32(1) + Array("meta".utf8) + [0, 0],
            "meta without version and flags": avif + ISOBMFFBuilder.box("meta", [0, 0]),
            "no pitm": avif
                + ISOBMFFBuilder.fullBox(
                    "meta", ISOBMFFBuilder.box("iprp", ISOBMFFBuilder.box("ipco", ISOBMFFBuilder.ispe(8, 8)))),
            "no iprp": avif + ISOBMFFBuilder.fullBox("meta", ISOBMFFBuilder.pitm(1)),
            "primary without ispe": ISOBMFFBuilder.file(
                properties: [ISOBMFFBuilder.ispe(800, 600)], associations: [(2, [1])]),
            "ispe cut": avif
                + ISOBMFFBuilder.fullBox(
                    "meta",
                    ISOBMFFBuilder.pitm(1)
                        + ISOBMFFBuilder.box("iprp", ISOBMFFBuilder.box("ipco", ISOBMFFBuilder.box("ispe", [0, 0])))),
            "ispe of zero": ISOBMFFBuilder.file(properties: [ISOBMFFBuilder.ispe(0, 600)], associations: [(1, [1])]),
            "ipma entry count past its payload": lyingCount,
            "ipma associations past its payload": manyAssociations,
            "a child box past its parent": cutIspe,
            "uuid box shorter than its extended type": avif + ISOBMFFBuilder.box("uuid", [1, 2, 3]) + good,
            "too many boxes": avif
                + ISOBMFFBuilder.fullBox(
                    "meta",
                    ISOBMFFBuilder.pitm(1)
                        + ISOBMFFBuilder.box(
                            "iprp",
                            ISOBMFFBuilder.box(
                                "ipco", Array(repeating: ISOBMFFBuilder.box("free", []), count: 10_001).flatMap { $0 }))
                ),
            "cut after ftyp": Array(good.prefix(avif.count + 6)),
        ]
    }()

    @Test("every prefix of a well-formed file is refused or parsed, never trapped on")
    func everyPrefix() {
        let file = ISOBMFFBuilder.file(
            primary: 2, properties: [ISOBMFFBuilder.ispe(320, 240), ISOBMFFBuilder.ispe(4032, 3024)],
            associations: [(1, [1]), (2, [2])],
            trailing: [])
        for length in 0...file.count {
            let result = Self.parse(Array(file.prefix(length)))
            if length == file.count {
                #expect((try? result.get())?.primary == PixelSize(width: 4032, height: 3024))
            }
        }
        // Every single-byte corruption, too.
        for index in file.indices {
            var corrupt = file
            corrupt[index] ^= 0xFF
            _ = Self.parse(corrupt)
        }
    }

    @Test("the hostile AVIF declares 17000×17000; the corpus' AVIF and HEIC declare what libvips reports")
    func realFiles() throws {
        let hostile = try HEIFContainer.parse(try Hostile.bytes("avif_declares-17000x17000.avif"))
        #expect(hostile.primary == PixelSize(width: 17000, height: 17000))
        for path in Corpus.existing([
            "orientation/avif_orientation-6_gps.avif", "formats/heic_iphone-7-plus_Example1.heic",
        ]) {
            let bytes = try Corpus.bytes(path)
            let container = try HEIFContainer.parse(bytes)
            let header = try renderer().probe(bytes).header
            // irot may swap the sides; the pixel count is what libheif allocates.
            #expect(container.primary.pixelCount == header.storedSize.pixelCount, "\(path)")
            #expect(container.largest == container.primary, "\(path)")
        }
    }
}
