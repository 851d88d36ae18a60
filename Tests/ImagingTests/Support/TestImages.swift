import CropGeometry
import Foundation
import Logging
import TestEnvironment
import Testing

@testable import Imaging

/// The test photos: `Tests/Fixtures` (in the repository, SOURCES.md there) and, when
/// `AVATAR_TEST_CORPUS` names a directory that holds one, the larger corpus. Both use the same
/// relative paths; a path is read from the fixtures first.
enum Corpus {
    /// The larger corpus, when `AVATAR_TEST_CORPUS` names one that is there.
    static var large: URL? { TestFiles.corpus }

    static var roots: [URL] { TestFiles.photoRoots }

    /// The roots that hold every one of `paths` (tests that run once per photo set).
    static func roots(holding paths: String...) -> [URL] {
        roots.filter { root in
            paths.allSatisfy { FileManager.default.fileExists(atPath: root.appendingPathComponent($0).path) }
        }
    }

    static func url(_ relativePath: String) -> URL? {
        roots.map { $0.appendingPathComponent(relativePath) }.first {
            FileManager.default.fileExists(atPath: $0.path)
        }
    }

    /// Whether every one of `paths` is in a set that is present (the larger corpus is optional).
    static func has(_ paths: String...) -> Bool { paths.allSatisfy { url($0) != nil } }

    /// The paths that are present, for parameterised tests.
    static func existing(_ paths: [String]) -> [String] { paths.filter { url($0) != nil } }

    static func bytes(_ relativePath: String, in root: URL? = nil) throws -> [UInt8] {
        let file = root.map { $0.appendingPathComponent(relativePath) } ?? url(relativePath)
        guard let file else { throw TestFailure("\(relativePath) is in no test photo set") }
        return [UInt8](try Data(contentsOf: file))
    }

    /// The files of `folder` across the present sets.
    static func files(in folder: String) throws -> [String] {
        var names = Set<String>()
        for root in roots {
            let directory = root.appendingPathComponent(folder).path
            guard FileManager.default.fileExists(atPath: directory) else { continue }
            names.formUnion(
                try FileManager.default.contentsOfDirectory(atPath: directory).filter { !$0.hasPrefix(".") })
        }
        return names.sorted().map { "\(folder)/\($0)" }
    }
}

let testLogger = Logger(label: "imaging-tests") { _ in SwiftLogNoOpLogHandler() }

func renderer(minSide: Int = 320) -> AvatarRenderer {
    AvatarRenderer(limits: ImageLimits(minSide: minSide), logger: testLogger)
}

extension AvatarRenderer {
    /// Probes, then renders: what a job does, for the tests that start from bytes.
    func render(
        _ bytes: [UInt8], input: CropInput, options: RenderOptions, cancellation: RenderCancellation? = nil
    ) throws(ImagingError) -> RenderResult {
        try render(probe(bytes, cancellation: cancellation), input: input, options: options, cancellation: cancellation)
    }
}

/// Renders a test photo with default options unless told otherwise.
func render(
    _ path: String, input: CropInput = .centred, options: RenderOptions = RenderOptions(), minSide: Int = 320,
    in root: URL? = nil
) throws -> RenderResult {
    try renderer(minSide: minSide).render(try Corpus.bytes(path, in: root), input: input, options: options)
}

/// Decoded output pixels: `width × height × bands` uchar samples.
struct Raster {
    var width: Int
    var height: Int
    var bands: Int
    var pixels: [UInt8]

    subscript(x: Int, y: Int, band: Int) -> UInt8 { pixels[(y * width + x) * bands + band] }

    /// Mean absolute difference per sample (0–255) between two rasters of the same shape.
    func meanAbsoluteDifference(_ other: Raster) -> Double {
        precondition(width == other.width && height == other.height && bands == other.bands)
        var total = 0
        for index in pixels.indices { total += abs(Int(pixels[index]) - Int(other.pixels[index])) }
        return Double(total) / Double(pixels.count)
    }

    func mean(band: Int) -> Double {
        var total = 0
        for index in stride(from: band, to: pixels.count, by: bands) { total += Int(pixels[index]) }
        return Double(total) / Double(width * height)
    }

    /// Averages of `blocks × blocks` tiles: compares colour and layout while ignoring fine detail
    /// (sharpness and resampling differ between a 24 MP original and a 1600 px derivative).
    func blockMeans(blocks: Int) -> Raster {
        let (tileWidth, tileHeight) = (width / blocks, height / blocks)
        var out = Raster(width: blocks, height: blocks, bands: bands, pixels: [])
        for by in 0..<blocks {
            for bx in 0..<blocks {
                for band in 0..<bands {
                    var total = 0
                    for y in (by * tileHeight)..<((by + 1) * tileHeight) {
                        for x in (bx * tileWidth)..<((bx + 1) * tileWidth) { total += Int(self[x, y, band]) }
                    }
                    out.pixels.append(UInt8((Double(total) / Double(tileWidth * tileHeight)).rounded()))
                }
            }
        }
        return out
    }

    /// The largest difference of a band's mean between two rasters.
    func meanColourDifference(_ other: Raster) -> Double {
        (0..<bands).map { abs(mean(band: $0) - other.mean(band: $0)) }.max() ?? 0
    }

    /// The same raster turned 90° clockwise.
    func rotatedClockwise() -> Raster {
        var out = Raster(width: height, height: width, bands: bands, pixels: pixels)
        for y in 0..<height {
            for x in 0..<width {
                for band in 0..<bands {
                    out.pixels[(x * out.width + (height - 1 - y)) * bands + band] = self[x, y, band]
                }
            }
        }
        return out
    }

    /// The same raster mirrored left-right.
    func mirrored() -> Raster {
        var out = self
        for y in 0..<height {
            for x in 0..<width {
                for band in 0..<bands { out.pixels[(y * width + (width - 1 - x)) * bands + band] = self[x, y, band] }
            }
        }
        return out
    }
}

/// What an encoded output contains, read back with libvips.
struct Decoded {
    var raster: Raster
    var format: ImageFormat
    var interpretation: String
    var bitDepth: Int
    var fields: [String]
    var iccProfile: [UInt8]?
}

func decode(_ bytes: [UInt8]) throws -> Decoded {
    try Vips.initialise()
    let input = InputBytes(bytes)
    guard let format = FormatSniffer.format(of: bytes) else {
        throw TestFailure("output is not a readable image")
    }
    let image = try VipsLoader.open(input, as: format)
    let raster = Raster(width: image.width, height: image.height, bands: image.bands, pixels: try image.pixels())
    return Decoded(
        raster: raster, format: format, interpretation: image.interpretationName, bitDepth: image.bitsPerSample,
        fields: image.fieldNames, iccProfile: image.iccProfile)
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The description ('desc' tag) of an ICC profile, v2 (`desc` type) or v4 (`mluc` type).
func iccDescription(_ profile: [UInt8]) -> String? {
    func u32(_ offset: Int) -> Int {
        guard offset >= 0, offset + 4 <= profile.count else { return 0 }
        return Int(profile[offset]) << 24 | Int(profile[offset + 1]) << 16 | Int(profile[offset + 2]) << 8
            | Int(profile[offset + 3])
    }
    func signature(_ offset: Int) -> String { String(decoding: profile[offset..<offset + 4], as: UTF8.self) }
    guard profile.count > 132 else { return nil }
    for index in 0..<u32(128) {
        let entry = 132 + index * 12
        guard entry + 12 <= profile.count, signature(entry) == "desc" else { continue }
        let offset = u32(entry + 4)
        guard offset + 28 <= profile.count else { return nil }
        switch signature(offset) {
        case "desc":
            let length = u32(offset + 8)
            guard offset + 12 + length <= profile.count else { return nil }
            return String(decoding: profile[(offset + 12)..<(offset + 12 + length)].prefix { $0 != 0 }, as: UTF8.self)
        case "mluc":
            // Records start at +16: language(2) country(2) length(4) offset-from-tag(4); UTF-16BE text.
            let length = u32(offset + 20)
            let start = offset + u32(offset + 24)
            guard length >= 2, start + length <= profile.count else { return nil }
            let utf16 = stride(from: start, to: start + length - 1, by: 2).map {
                UInt16(profile[$0]) << 8 | UInt16(profile[$0 + 1])
            }
            return String(decoding: utf16, as: UTF16.self)
        default:
            return nil
        }
    }
    return nil
}

/// Whether `needle` occurs in `haystack` (scanning encoded files for metadata markers).
func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
    let pattern = Array(needle.utf8)
    guard !pattern.isEmpty, pattern.count <= haystack.count else { return false }
    var start = 0
    while start <= haystack.count - pattern.count {
        if haystack[start] == pattern[0], haystack[start..<start + pattern.count].elementsEqual(pattern) {
            return true
        }
        start += 1
    }
    return false
}

/// Test inputs with their ICC profile removed, to show what skipping colour management would do.
enum ProfileRemoval {
    /// Drops ICC_PROFILE APP2 segments from a JPEG.
    static func jpeg(_ bytes: [UInt8]) -> [UInt8] {
        var out = Array(bytes[0..<2])
        var offset = 2
        while offset + 4 <= bytes.count, bytes[offset] == 0xFF, bytes[offset + 1] != 0xDA {
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            let end = offset + 2 + length
            let isICC =
                bytes[offset + 1] == 0xE2 && contains(Array(bytes[(offset + 4)..<min(end, offset + 16)]), "ICC_PROFILE")
            if !isICC { out += bytes[offset..<end] }
            offset = end
        }
        return out + bytes[offset...]
    }

    /// Drops the iCCP chunk from a PNG.
    static func png(_ bytes: [UInt8]) -> [UInt8] {
        var out = Array(bytes[0..<8])
        var offset = 8
        while offset + 12 <= bytes.count {
            let length =
                Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8
                | Int(bytes[offset + 3])
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            let end = offset + 12 + length
            if type != "iCCP" { out += bytes[offset..<min(end, bytes.count)] }
            offset = end
        }
        return out
    }
}
