import CropGeometry
import Testing

@testable import Imaging

/// A tiny raster of distinct values, for exact orientation checks.
private struct Grid: Equatable {
    var width: Int
    var height: Int
    var values: [Int]

    static func asymmetric(width: Int, height: Int) -> Grid {
        Grid(width: width, height: height, values: Array(0..<(width * height)))
    }

    subscript(x: Int, y: Int) -> Int { values[y * width + x] }

    func crop(x: Int, y: Int, side: Int) -> Grid {
        var out: [Int] = []
        for row in y..<(y + side) { for column in x..<(x + side) { out.append(self[column, row]) } }
        return Grid(width: side, height: side, values: out)
    }

    func rotatedClockwise() -> Grid {
        var out = Grid(width: height, height: width, values: values)
        for y in 0..<height { for x in 0..<width { out.values[x * out.width + (height - 1 - y)] = self[x, y] } }
        return out
    }

    func mirrored() -> Grid {
        var out = self
        for y in 0..<height { for x in 0..<width { out.values[y * width + (width - 1 - x)] = self[x, y] } }
        return out
    }

    /// The displayed image, straight from the EXIF definition of each orientation: where the stored
    /// image's row 0 and column 0 appear (TIFF/EXIF "0th row / 0th column" table).
    func displayed(_ orientation: Int) -> Grid {
        let (row0, column0): (String, String) = [
            1: ("top", "left"), 2: ("top", "right"), 3: ("bottom", "right"), 4: ("bottom", "left"),
            5: ("left", "top"), 6: ("right", "top"), 7: ("right", "bottom"), 8: ("left", "bottom"),
        ][orientation]!
        let rowsStayRows = row0 == "top" || row0 == "bottom"
        let out = rowsStayRows ? (width, height) : (height, width)
        var grid = Grid(width: out.0, height: out.1, values: values)
        for y in 0..<height {
            for x in 0..<width {
                let (u, v): (Int, Int)
                if rowsStayRows {
                    v = row0 == "top" ? y : height - 1 - y
                    u = column0 == "left" ? x : width - 1 - x
                } else {
                    u = row0 == "left" ? y : height - 1 - y
                    v = column0 == "top" ? x : width - 1 - x
                }
                grid.values[v * grid.width + u] = self[x, y]
            }
        }
        return grid
    }

    /// Applies the renderer's upright steps (rotate clockwise, then mirror).
    func turnedUpright(_ orientation: Orientation) -> Grid {
        var grid = self
        for _ in 0..<(orientation.rotation.rawValue / 90) { grid = grid.rotatedClockwise() }
        return orientation.flipsHorizontally ? grid.mirrored() : grid
    }
}

@Suite("Orientation mapping")
struct OrientationTests {
    @Test("invalid EXIF values mean upright", arguments: [0, -1, 9, 255])
    func invalidValues(value: Int) {
        #expect(Orientation(exif: value) == .upright)
    }

    @Test("5–8 swap the axes", arguments: 1...8)
    func sizes(value: Int) {
        let orientation = Orientation(exif: value)
        let stored = PixelSize(width: 1200, height: 1800)
        let oriented = orientation.orientedSize(of: stored)
        #expect(oriented == (value >= 5 ? PixelSize(width: 1800, height: 1200) : stored))
        #expect(orientation.storedSize(of: oriented) == stored)
    }

    /// Every square in the displayed image, cropped from the stored image and turned upright, equals the
    /// same square cut from the fully turned image.
    @Test("crop in stored orientation, then turn: same pixels as turning the whole image", arguments: 1...8)
    func exhaustiveRoundTrip(value: Int) {
        let orientation = Orientation(exif: value)
        for (width, height) in [(5, 3), (4, 7), (6, 6)] {
            let stored = Grid.asymmetric(width: width, height: height)
            let displayed = stored.displayed(value)
            let storedSize = PixelSize(width: width, height: height)
            #expect(
                orientation.orientedSize(of: storedSize) == PixelSize(width: displayed.width, height: displayed.height))
            for side in 1...min(displayed.width, displayed.height) {
                for y in 0...(displayed.height - side) {
                    for x in 0...(displayed.width - side) {
                        let wanted = displayed.crop(x: x, y: y, side: side)
                        let crop = orientation.storedCrop(PixelCrop(x: x, y: y, side: side), stored: storedSize)
                        #expect(crop.x >= 0 && crop.y >= 0 && crop.x + side <= width && crop.y + side <= height)
                        let got = stored.crop(x: crop.x, y: crop.y, side: side).turnedUpright(orientation)
                        #expect(got == wanted, "orientation \(value), \(width)x\(height), square \(x),\(y),\(side)")
                    }
                }
            }
        }
    }

    @Test("the unrounded mapping agrees with the whole-pixel one", arguments: 1...8)
    func unroundedAgrees(value: Int) {
        let orientation = Orientation(exif: value)
        let stored = PixelSize(width: 40, height: 25)
        let oriented = orientation.orientedSize(of: stored)
        for (x, y, side) in [(0, 0, 10), (3, 7, 12), (oriented.width - 5, oriented.height - 5, 5)] {
            let square = orientation.storedSquare(
                CropSquare(x: Double(x), y: Double(y), side: Double(side)), stored: (40, 25))
            let crop = orientation.storedCrop(PixelCrop(x: x, y: y, side: side), stored: stored)
            #expect(square == CropSquare(x: Double(crop.x), y: Double(crop.y), side: Double(side)))
        }
    }

    @Test("a wrong mapping is caught: identity fails for every orientation but 1", arguments: 2...8)
    func testCanFail(value: Int) {
        let stored = Grid.asymmetric(width: 5, height: 3)
        let displayed = stored.displayed(value)
        let side = min(displayed.width, displayed.height)
        #expect(displayed.crop(x: 0, y: 0, side: side) != stored.crop(x: 0, y: 0, side: side))
    }

    /// The same check against libvips itself: `vips_autorot` of the whole image versus the renderer's
    /// crop-then-turn on the stored image.
    @Test("libvips: autorot then crop equals crop then turn", arguments: 1...8)
    func libvipsRoundTrip(value: Int) throws {
        try Vips.initialise()
        let (width, height) = (7, 5)
        let pixels = (0..<(width * height * 3)).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let stored = try VImage.fromPixels(pixels, width: width, height: height, bands: 3).withOrientation(value)
        let turned = try stored.autorotate()
        let orientation = Orientation(exif: value)
        let storedSize = PixelSize(width: width, height: height)
        for (x, y, side) in [(0, 0, 3), (1, 2, 3), (2, 0, 5), (0, 1, 4)] {
            guard x + side <= turned.width, y + side <= turned.height else { continue }
            let wanted = try turned.extractArea(left: x, top: y, width: side, height: side).pixels()
            let crop = orientation.storedCrop(PixelCrop(x: x, y: y, side: side), stored: storedSize)
            let square = try stored.extractArea(left: crop.x, top: crop.y, width: side, height: side)
            let got = try CropPipeline.turnUpright(square.copyMemory(), orientation).pixels()
            #expect(got == wanted, "orientation \(value), square \(x),\(y),\(side)")
        }
    }
}
