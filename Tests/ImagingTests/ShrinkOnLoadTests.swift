import CropGeometry
import Testing

@testable import Imaging

@Suite("Shrink-on-load")
struct ShrinkOnLoadTests {
    @Test("largest factor that keeps the crop at least the required size")
    func largestFactor() {
        #expect(ShrinkOnLoad.factor(format: .jpeg, cropSide: 4000, required: 512) == 4)  // 1000 ≥ 512; 500 < 512
        #expect(ShrinkOnLoad.factor(format: .jpeg, cropSide: 4096, required: 512) == 8)  // exactly 512
        #expect(ShrinkOnLoad.factor(format: .jpeg, cropSide: 4095, required: 512) == 4)
        #expect(ShrinkOnLoad.factor(format: .jpeg, cropSide: 1024, required: 512) == 2)
        #expect(ShrinkOnLoad.factor(format: .jpeg, cropSide: 1023, required: 512) == 1)
        #expect(ShrinkOnLoad.factor(format: .jpeg, cropSide: 320, required: 512) == 1)
        #expect(ShrinkOnLoad.factor(format: .webp, cropSide: 3000, required: 512) == 4)
        // The largest extra size counts too.
        #expect(ShrinkOnLoad.factor(format: .jpeg, cropSide: 4000, required: 1024) == 2)
    }

    @Test("HEIF is box-shrunk by the same factors; its fallback keeps the full path's factor")
    func heifBoxShrink() {
        #expect(ShrinkOnLoad.factor(format: .heif, cropSide: 4284, required: 512) == 8)
        #expect(ShrinkOnLoad.factor(format: .heif, cropSide: 1148, required: 512) == 2)
        #expect(ShrinkOnLoad.factor(format: .heif, cropSide: 1023, required: 512) == 1)
        let stored = PixelSize(width: 4284, height: 5712)
        #expect(ShrinkOnLoad.fallbackFactor(format: .heif, stored: stored, longEdge: 2560, fullFactor: 2) == 2)
    }

    @Test("formats without reduced decoding always use 1", arguments: [ImageFormat.png, .gif, .tiff])
    func noShrink(format: ImageFormat) {
        #expect(ShrinkOnLoad.factor(format: format, cropSide: 8000, required: 512) == 1)
        let stored = PixelSize(width: 8000, height: 6000)
        #expect(ShrinkOnLoad.fallbackFactor(format: format, stored: stored, longEdge: 2560, fullFactor: 1) == 1)
    }

    @Test("the fallback brings the long edge to at most 1.25 × the target, never below the full path's factor")
    func fallbackFactor() {
        func factor(_ width: Int, _ height: Int, full: Int = 1) -> Int {
            ShrinkOnLoad.fallbackFactor(
                format: .jpeg, stored: PixelSize(width: width, height: height), longEdge: 2560, fullFactor: full)
        }
        #expect(factor(6000, 4000) == 2)  // 3000 ≤ 3200
        #expect(factor(4032, 3024) == 2)  // 2016
        #expect(factor(3000, 2000) == 1)  // already ≤ 3200
        #expect(factor(12000, 9000) == 4)  // 3000
        #expect(factor(6000, 4000, full: 4) == 4)
        #expect(factor(60000, 1000) == 8)  // the largest factor even if still above
    }

    @Test("WebP fallback scales continuously to the long edge")
    func webpScale() {
        let scale = ShrinkOnLoad.fallbackWebPScale(
            stored: PixelSize(width: 5120, height: 100), longEdge: 2560, fullFactor: 1)
        #expect(scale == 0.5)
        #expect(
            ShrinkOnLoad.fallbackWebPScale(stored: PixelSize(width: 1000, height: 800), longEdge: 2560, fullFactor: 1)
                == 1)
        #expect(
            ShrinkOnLoad.fallbackWebPScale(stored: PixelSize(width: 5120, height: 100), longEdge: 2560, fullFactor: 4)
                == 0.25)
    }

    @Test("decoded sizes round up like libjpeg")
    func decodedSize() {
        #expect(
            ShrinkOnLoad.decodedSize(PixelSize(width: 2725, height: 2225), factor: 8)
                == PixelSize(width: 341, height: 279))
        #expect(
            ShrinkOnLoad.decodedSize(PixelSize(width: 1800, height: 1200), factor: 1)
                == PixelSize(width: 1800, height: 1200))
    }

    @Test("crop mapped into a shrunk decode stays inside and keeps its proportion")
    func storedCropAfterShrink() throws {
        let stored = PixelSize(width: 6000, height: 4000)
        let plan = try CropGeometry.plan(source: stored, input: .centred, settings: EditorSettings())
        let decoded = ShrinkOnLoad.decodedSize(stored, factor: 4)
        let crop = CropPipeline.storedCrop(plan: plan, orientation: .upright, stored: stored, decoded: decoded)
        #expect(crop == PixelCrop(x: 250, y: 0, side: 1000))
        // Portrait EXIF 6 source stored landscape: the square maps into stored coordinates first.
        let oriented = PixelSize(width: 4000, height: 6000)
        let portrait = try CropGeometry.plan(
            source: oriented, input: .rect(PixelRect(x: 0, y: 0, side: 2000), reference: nil),
            settings: EditorSettings())
        let mapped = CropPipeline.storedCrop(
            plan: portrait, orientation: Orientation(exif: 6), stored: stored, decoded: decoded)
        // Orientation 6 shows the stored image's left column at the top: the displayed top-left square
        // is the stored bottom-left one.
        #expect(mapped.side == Int((portrait.crop.side / 4).rounded()))
        #expect(
            mapped.x >= 0 && mapped.y >= 0 && mapped.x + mapped.side <= decoded.width
                && mapped.y + mapped.side <= decoded.height)
        #expect(mapped.x == 0)
        #expect(mapped.y == decoded.height - mapped.side)
    }
}
