import CropGeometry
import Testing

@testable import Imaging

/// The HEIF container probe (`HEIFContainer`) is Swift, so it is fuzzed here rather than by libFuzzer
/// (Tests/Fuzz/README.md): seeded random box trees whose sizes a model computes independently, then
/// thousands of mutations of each (flipped bytes, cut files, inserted bytes, extreme 32-bit fields). A
/// well-formed tree must parse to the model's answer; anything else must parse or be refused as
/// `Malformed` — a trap would end the test process.
@Suite("HEIF container, generated boxes (property test)")
struct HEIFContainerPropertyTests {
    typealias Builder = ISOBMFFBuilder

    /// One generated file and what the model says it declares (`primary` nil: it must be refused).
    struct Case {
        var bytes: [UInt8]
        var primary: PixelSize?
        var largest: PixelSize?
    }

    static func generate(_ random: inout SplitMix) -> Case {
        // The ipco children: ispe among colr/irot/pixi/free-like boxes, each with a payload of its own.
        var properties: [[UInt8]] = []
        var sizes: [Int: PixelSize] = [:]
        for index in 1...(1 + random.next(below: 40)) {
            if random.next(below: 3) == 0 {
                let width =
                    random.next(below: 4) == 0 ? Int(UInt32.max) - random.next(below: 3) : 1 + random.next(below: 9000)
                let height = 1 + random.next(below: 9000)
                properties.append(Builder.ispe(UInt32(width), UInt32(height)))
                sizes[index] = PixelSize(width: width, height: height)
            } else {
                let types = ["colr", "irot", "pixi", "hvcC", "av1C", "free", "imir", "clap"]
                let payload = (0..<random.next(below: 24)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                properties.append(Builder.box(types[random.next(below: types.count)], payload))
            }
        }
        let version: UInt8 = random.next(below: 2) == 0 ? 0 : 1
        let wide = properties.count > 127 || random.next(below: 2) == 0
        let itemLimit = version == 0 ? 65_535 : Int(UInt32.max)
        let items = (0..<(1 + random.next(below: 30))).map { _ in 1 + random.next(below: min(itemLimit, 100_000)) }
        let primary = items[random.next(below: items.count)]
        // One or two ipma boxes; each entry's indices are real (1...count), 0 ("none") or past the end, with
        // the essential bit set now and then.
        var boxes: [[(item: Int, properties: [Int])]] = []
        for _ in 0..<(1 + random.next(below: 2)) {
            boxes.append(
                items.map { item in
                    let indices = (0..<random.next(below: 6)).map { _ -> Int in
                        let index = random.next(below: properties.count + 3)
                        let essential = random.next(below: 4) == 0 ? (wide ? 0x8000 : 0x80) : 0
                        return min(index, wide ? 0x7FFF : 0x7F) | essential
                    }
                    return (item, indices)
                })
        }
        // The model: the first ispe associated with the primary item, in file order (entries, then boxes,
        // that repeat the item are searched until one has it); the largest of all.
        var expected: PixelSize?
        search: for box in boxes {
            for entry in box where entry.item == primary {
                for index in entry.properties {
                    if let size = sizes[index & (wide ? 0x7FFF : 0x7F)] {
                        expected = size
                        break search
                    }
                }
            }
        }
        let hdlr = Builder.fullBox("hdlr", [0, 0, 0, 0] + Array("pict".utf8) + Array(repeating: 0, count: 13))
        let iprp = Builder.box(
            "iprp",
            Builder.box("ipco", properties.flatMap { $0 })
                + boxes.flatMap { Builder.ipma($0, version: version, wide: wide) })
        let meta = Builder.fullBox("meta", hdlr + Builder.pitm(primary, version: version) + iprp)
        let bytes = Builder.ftyp("heic", compatible: ["mif1", "heic"]) + meta + Builder.box("mdat", [1, 2, 3, 4])
        let largest = sizes.values.map(\.pixelCount).max().flatMap { count in
            sizes.values.first { $0.pixelCount == count }
        }
        return Case(bytes: bytes, primary: expected, largest: largest)
    }

    /// One mutation of `bytes`, as a fuzzer would make it.
    static func mutate(_ bytes: [UInt8], _ random: inout SplitMix) -> [UInt8] {
        var bytes = bytes
        switch random.next(below: 5) {
        case 0:
            bytes[random.next(below: bytes.count)] ^= UInt8(1 << random.next(below: 8))
        case 1:
            bytes = Array(bytes.prefix(random.next(below: bytes.count)))
        case 2:
            let extra = (0..<(1 + random.next(below: 8))).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            bytes.insert(contentsOf: extra, at: random.next(below: bytes.count + 1))
        case 3:
            // A size, count or id field set to an extreme.
            let values: [UInt32] = [0, 1, 7, 8, 0x7FFF_FFFF, 0xFFFF_FFFF, UInt32(bytes.count), UInt32(bytes.count + 1)]
            let at = random.next(below: max(1, bytes.count - 3))
            let field = Builder.be32(values[random.next(below: values.count)])
            for offset in 0..<4 where at + offset < bytes.count { bytes[at + offset] = field[offset] }
        default:
            let from = random.next(below: bytes.count)
            let length = random.next(below: min(64, bytes.count - from) + 1)
            bytes.removeSubrange(from..<(from + length))
        }
        return bytes
    }

    static func parse(_ bytes: [UInt8]) -> Result<HEIFContainer, HEIFContainer.Malformed> {
        Result { () throws(HEIFContainer.Malformed) in try HEIFContainer.parse(bytes) }
    }

    @Test("generated well-formed containers parse to the model's sizes", arguments: 0..<8)
    func generated(seed: Int) throws {
        var random = SplitMix(seed: UInt64(seed) &* 0x1000_0001 &+ 1)
        var parsed = 0
        for _ in 0..<250 {
            let file = Self.generate(&random)
            switch Self.parse(file.bytes) {
            case .success(let container):
                #expect(container.primary == file.primary, "\(file.bytes)")
                #expect(container.largest.pixelCount == file.largest?.pixelCount)
                parsed += 1
            case .failure(let error):
                #expect(file.primary == nil, "\(error): \(file.bytes)")
            }
        }
        // The generator makes both kinds: most files declare a primary size, some do not.
        #expect(parsed > 50 && parsed < 250)
    }

    @Test("mutations of generated containers are parsed or refused, never trapped on", arguments: 0..<8)
    func mutated(seed: Int) {
        var random = SplitMix(seed: UInt64(seed) &+ 0xF00D)
        var refused = 0
        var total = 0
        for _ in 0..<60 {
            var bytes = Self.generate(&random).bytes
            for _ in 0..<40 {
                // Mutations pile up, as a fuzzer's do, from the last accepted input or afresh.
                bytes = Self.mutate(bytes.isEmpty ? [0] : bytes, &random)
                total += 1
                switch Self.parse(bytes) {
                case .success(let container):
                    // What a parse answers is always a usable size.
                    #expect(container.primary.width > 0 && container.primary.height > 0)
                    #expect(container.largest.pixelCount >= container.primary.pixelCount)
                case .failure:
                    refused += 1
                }
            }
        }
        #expect(refused > 0 && refused < total)
    }
}
