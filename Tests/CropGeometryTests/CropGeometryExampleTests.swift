import Testing

@testable import CropGeometry

/// Equal within floating-point noise.
func close(_ a: Double?, _ b: Double, tolerance: Double = 1e-9) -> Bool {
    guard let a else { return false }
    return abs(a - b) <= tolerance * max(1, abs(b))
}

@Suite("Crop geometry: worked examples")
struct CropGeometryExampleTests {
    let settings = EditorSettings()

    @Test("3000×2000 with no pose is the centred 2000 px square at x=500")
    func seedExample() throws {
        let plan = try CropGeometry.plan(source: PixelSize(width: 3000, height: 2000), input: .centred)
        #expect(close(plan.sMin, 0.48))
        #expect(close(plan.sQuality, 1.5))
        #expect(close(plan.sMax, 1.5))
        #expect(plan.pixelCrop == PixelCrop(x: 500, y: 0, side: 2000))
        #expect(plan.scaleRequested == nil)
        #expect(close(plan.scaleApplied, 0.48))
        #expect(!plan.zoomClamped && !plan.panClamped && !plan.qualityLimited)
        #expect(close(plan.density, 6.25))
    }

    @Test("zoom beyond s_max is clamped by the quality bound")
    func qualityClamp() throws {
        let plan = try CropGeometry.plan(
            source: PixelSize(width: 3000, height: 2000), input: .pose(EditorPose(scale: 3), reference: nil))
        #expect(close(plan.scaleApplied, 1.5))
        #expect(plan.zoomClamped && plan.qualityClamped)
        #expect(plan.pixelCrop.side == 640)  // 320 pt · 3 / 1.5 = outputSize · q
    }

    @Test("zoom beyond 4× s_min is clamped by the zoom bound when quality allows more")
    func zoomMultiplierClamp() throws {
        // 12000×8000: s_min = 0.12, 4·s_min = 0.48 < s_quality 1.5.
        let plan = try CropGeometry.plan(
            source: PixelSize(width: 12000, height: 8000), input: .pose(EditorPose(scale: 1), reference: nil))
        #expect(close(plan.sMax, 0.48))
        #expect(plan.zoomClamped && !plan.qualityClamped)
        #expect(plan.pixelCrop.side == 2000)
    }

    @Test("a zoom below s_min is raised to cover the mask")
    func zoomBelowMinimum() throws {
        let plan = try CropGeometry.plan(
            source: PixelSize(width: 3000, height: 2000), input: .pose(EditorPose(scale: 0.1), reference: nil))
        #expect(plan.scaleApplied == plan.sMin)
        #expect(plan.zoomClamped && !plan.qualityClamped)
    }

    @Test("a photo smaller than outputSize·q is quality-limited: s_max = s_min")
    func qualityLimited() throws {
        let plan = try CropGeometry.plan(
            source: PixelSize(width: 600, height: 400), input: .pose(EditorPose(scale: 5), reference: nil))
        #expect(plan.qualityLimited)
        #expect(plan.sMax == plan.sMin)
        #expect(plan.pixelCrop == PixelCrop(x: 100, y: 0, side: 400))
    }

    @Test("panning past the edge is clamped so no blank space shows")
    func panClamp() throws {
        // At s_min the 3000×2000 image shows as 480×320 pt: 80 pt of slack left and right, none vertically.
        let plan = try CropGeometry.plan(
            source: PixelSize(width: 3000, height: 2000),
            input: .pose(EditorPose(scale: 0.48, tx: 500, ty: -40), reference: nil))
        #expect(plan.panClamped)
        #expect(plan.pixelCrop == PixelCrop(x: 0, y: 0, side: 2000))
        let inside = try CropGeometry.plan(
            source: PixelSize(width: 3000, height: 2000),
            input: .pose(EditorPose(scale: 0.48, tx: 40, ty: 0), reference: nil))
        #expect(!inside.panClamped)
        #expect(inside.pixelCrop == PixelCrop(x: 250, y: 0, side: 2000))
    }

    @Test("a pose computed on a display thumbnail maps onto the full-resolution source")
    func referenceMapping() throws {
        let full = PixelSize(width: 4032, height: 3024)
        let thumb = PixelSize(width: 1008, height: 756)
        let onThumb = try CropGeometry.plan(
            source: thumb, input: .pose(EditorPose(scale: 1.2, tx: 30, ty: -10), reference: nil))
        let onFull = try CropGeometry.plan(
            source: full, input: .pose(EditorPose(scale: 1.2, tx: 30, ty: -10), reference: thumb))
        #expect(abs(onFull.crop.side - onThumb.crop.side * 4) < 1e-6)
        #expect(abs(onFull.crop.x - onThumb.crop.x * 4) < 1e-6)
        #expect(abs(onFull.crop.y - onThumb.crop.y * 4) < 1e-6)
        #expect(close(onFull.scaleRequested, 0.3))
    }

    @Test("a reference of another shape is an aspect mismatch")
    func aspectMismatch() {
        #expect(throws: CropGeometryError(.aspectMismatch, "the pose was computed for an image of another shape")) {
            try CropGeometry.plan(
                source: PixelSize(width: 4032, height: 3024),
                input: .pose(EditorPose(scale: 1), reference: PixelSize(width: 756, height: 1008)))
        }
        // A thumbnail whose sides were rounded is still the same image.
        #expect(throws: Never.self) {
            try CropGeometry.plan(
                source: PixelSize(width: 4033, height: 3023),
                input: .pose(EditorPose(scale: 1), reference: PixelSize(width: 401, height: 300)))
        }
    }

    @Test("a pixel rectangle is accepted and clamped like a pose")
    func pixelRect() throws {
        let exact = try CropGeometry.plan(
            source: PixelSize(width: 3000, height: 2000),
            input: .rect(PixelRect(x: 100, y: 200, side: 1200), reference: nil))
        #expect(exact.pixelCrop == PixelCrop(x: 100, y: 200, side: 1200))
        #expect(!exact.zoomClamped && !exact.panClamped)

        // Too small a square for the quality target grows to 640 px around the same centre.
        let tiny = try CropGeometry.plan(
            source: PixelSize(width: 3000, height: 2000),
            input: .rect(PixelRect(x: 1000, y: 1000, side: 100), reference: nil))
        #expect(tiny.pixelCrop == PixelCrop(x: 730, y: 730, side: 640))
        #expect(tiny.zoomClamped && tiny.qualityClamped)

        // Hanging over the edge is pulled back in.
        let outside = try CropGeometry.plan(
            source: PixelSize(width: 3000, height: 2000),
            input: .rect(PixelRect(x: 2500, y: -300, side: 1000), reference: nil))
        #expect(outside.pixelCrop == PixelCrop(x: 2000, y: 0, side: 1000))
        #expect(outside.panClamped)

        // Given on a half-size reference.
        let halved = try CropGeometry.plan(
            source: PixelSize(width: 3000, height: 2000),
            input: .rect(PixelRect(x: 50, y: 100, side: 600), reference: PixelSize(width: 1500, height: 1000)))
        #expect(halved.pixelCrop == PixelCrop(x: 100, y: 200, side: 1200))
    }

    @Test("invalid input is refused with a typed error")
    func invalidInput() {
        let source = PixelSize(width: 1000, height: 1000)
        #expect(throws: CropGeometryError.self) {
            try CropGeometry.plan(source: source, input: .pose(EditorPose(scale: .nan), reference: nil))
        }
        #expect(throws: CropGeometryError.self) {
            try CropGeometry.plan(source: source, input: .pose(EditorPose(scale: -1), reference: nil))
        }
        #expect(throws: CropGeometryError.self) {
            try CropGeometry.plan(source: source, input: .rect(PixelRect(x: 0, y: 0, side: 0), reference: nil))
        }
        #expect(throws: CropGeometryError.self) {
            try CropGeometry.plan(source: PixelSize(width: 0, height: 10), input: .centred)
        }
        #expect(throws: CropGeometryError.self) {
            try CropGeometry.plan(source: source, input: .centred, settings: EditorSettings(screenScale: 0))
        }
        #expect(throws: CropGeometryError.self) {
            try CropGeometry.plan(
                source: source, input: .pose(EditorPose(scale: 1), reference: PixelSize(width: 0, height: 5)))
        }
    }

    @Test("low density is flagged below minPixelPerPoint")
    func lowDensity() throws {
        // 320×320 source: s_min = 3, density = 1 (not low); with a 2 px/pt floor it is low.
        let plan = try CropGeometry.plan(source: PixelSize(width: 320, height: 320), input: .centred)
        #expect(plan.density == 1 && !plan.lowDensity)
        let strict = try CropGeometry.plan(
            source: PixelSize(width: 320, height: 320), input: .centred, settings: EditorSettings(minPixelPerPoint: 2))
        #expect(strict.lowDensity)
    }
}
