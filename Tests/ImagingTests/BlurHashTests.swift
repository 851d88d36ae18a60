import Testing

@testable import Imaging

@Suite("BlurHash")
struct BlurHashTests {
    static func solid(_ r: UInt8, _ g: UInt8, _ b: UInt8, side: Int = 32) -> [UInt8] {
        Array([[r, g, b]].repeated(side * side).joined())
    }

    static func decode83(_ text: Substring) -> Int {
        text.reduce(0) { $0 * 83 + BlurHash.alphabet.firstIndex(of: $1)! }
    }

    /// (r, g, b) quantisation levels 0–18 of AC component `index` (9 means zero).
    static func acLevels(_ hash: String, index: Int) -> (Int, Int, Int) {
        let start = hash.index(hash.startIndex, offsetBy: 6 + 2 * index)
        let value = decode83(hash[start..<hash.index(start, offsetBy: 2)])
        return (value / (19 * 19), value / 19 % 19, value % 19)
    }

    @Test("black image: the widely published all-black hash")
    func black() {
        #expect(BlurHash.encode(rgb: Self.solid(0, 0, 0), width: 32, height: 32) == "L00000fQfQfQfQfQfQfQfQfQfQfQ")
    }

    @Test("length is 4 + 2·x·y and the first character encodes the component counts")
    func lengthAndSizeFlag() throws {
        let pixels = Self.solid(10, 200, 30, side: 8)
        for x in 1...9 {
            for y in 1...9 {
                let hash = try #require(
                    BlurHash.encode(rgb: pixels, width: 8, height: 8, componentsX: x, componentsY: y))
                #expect(hash.count == 4 + 2 * x * y)
                #expect(Self.decode83(hash.prefix(1)) == (x - 1) + (y - 1) * 9)
            }
        }
    }

    /// The reference algorithm samples cosines at x / width (not pixel centres), so even a solid image
    /// has small AC terms; the DC term is exactly the colour.
    @Test("a solid colour: the DC term is that colour")
    func solidColour() throws {
        let hash = try #require(BlurHash.encode(rgb: Self.solid(200, 100, 50), width: 32, height: 32))
        let dc = Self.decode83(hash.dropFirst(2).prefix(4))
        #expect(dc >> 16 == 200 && dc >> 8 & 0xFF == 100 && dc & 0xFF == 50)
        let other = try #require(BlurHash.encode(rgb: Self.solid(10, 20, 30), width: 32, height: 32))
        #expect(hash.dropFirst(2).prefix(4) != other.dropFirst(2).prefix(4))
    }

    @Test("a left-to-right gradient shows up in the horizontal component, a top-down one in the vertical")
    func gradientDirection() throws {
        let side = 32
        var pixels: [UInt8] = []
        for _ in 0..<side { for x in 0..<side { pixels += Array(repeating: UInt8(x * 255 / (side - 1)), count: 3) } }
        var transposed = pixels
        for y in 0..<side {
            for x in 0..<side { for c in 0..<3 { transposed[(y * side + x) * 3 + c] = pixels[(x * side + y) * 3 + c] } }
        }
        let horizontal = try #require(BlurHash.encode(rgb: pixels, width: side, height: side))
        let vertical = try #require(BlurHash.encode(rgb: transposed, width: side, height: side))
        // AC index 0 is component (1, 0); index 3 is (0, 1) for 4×3. Level 9 is zero.
        func strength(_ hash: String, _ index: Int) -> Int { abs(Self.acLevels(hash, index: index).0 - 9) }
        #expect(Self.acLevels(horizontal, index: 0).0 < 9)  // dark left, bright right: negative weight
        #expect(strength(horizontal, 0) > strength(horizontal, 3) + 3)
        #expect(Self.acLevels(vertical, index: 3).0 < 9)
        #expect(strength(vertical, 3) > strength(vertical, 0) + 3)
        #expect(horizontal.prefix(6) == vertical.prefix(6))  // same size flag, maximum and DC
    }

    @Test("inconsistent input is refused")
    func invalid() {
        #expect(BlurHash.encode(rgb: [0, 0], width: 1, height: 1) == nil)
        #expect(BlurHash.encode(rgb: Self.solid(0, 0, 0, side: 2), width: 2, height: 2, componentsX: 10) == nil)
    }

    @Test("base 83 digits")
    func base83() {
        #expect(BlurHash.base83(0, length: 4) == "0000")
        #expect(BlurHash.base83(82, length: 1) == "~")
        #expect(BlurHash.base83(83, length: 2) == "10")
        #expect(Self.decode83(Substring(BlurHash.base83(16_777_215, length: 4))) == 16_777_215)
    }
}

extension Array {
    fileprivate func repeated(_ count: Int) -> [Element] {
        Array((0..<count).map { _ in self }.joined())
    }
}
