import PropertyBased
import Testing

@testable import CropGeometry

/// Properties that must hold for every source and every pose the app could send.
@Suite("Crop geometry: properties")
struct CropGeometryPropertyTests {
    static let sides = Gen.int(in: 320...12000)
    static let scales = Gen.double(in: 0.001...50)
    static let offsets = Gen.double(in: -5000...5000)

    @Test("the crop always lies inside the image and never shows blank space")
    func cropInsideImage() async {
        await propertyCheck(count: 500, input: Self.sides, Self.sides, Self.scales, Self.offsets, Self.offsets) {
            width, height, scale, tx, ty in
            let source = PixelSize(width: width, height: height)
            let plan = try CropGeometry.plan(
                source: source, input: .pose(EditorPose(scale: scale, tx: tx, ty: ty), reference: nil))
            let epsilon = 1e-6 * Double(max(width, height))
            #expect(plan.crop.x >= -epsilon && plan.crop.y >= -epsilon)
            #expect(plan.crop.x + plan.crop.side <= Double(width) + epsilon)
            #expect(plan.crop.y + plan.crop.side <= Double(height) + epsilon)
            let pixels = plan.pixelCrop
            #expect(pixels.x >= 0 && pixels.y >= 0 && pixels.side >= 1)
            #expect(pixels.x + pixels.side <= width && pixels.y + pixels.side <= height)
            #expect(plan.scaleApplied >= plan.sMin && plan.scaleApplied <= plan.sMax)
        }
    }

    @Test("clamping is idempotent: the applied pose planned again changes nothing")
    func clampIdempotent() async {
        await propertyCheck(count: 500, input: Self.sides, Self.sides, Self.scales, Self.offsets, Self.offsets) {
            width, height, scale, tx, ty in
            let source = PixelSize(width: width, height: height)
            let settings = EditorSettings()
            let first = try CropGeometry.plan(
                source: source, input: .pose(EditorPose(scale: scale, tx: tx, ty: ty), reference: nil))
            // Recover the applied pose from the planned square and plan it again.
            let sigma = settings.screenScale
            let applied = EditorPose(
                scale: first.scaleApplied,
                tx: (Double(width) / 2 - (first.crop.x + first.crop.side / 2)) * first.scaleApplied / sigma,
                ty: (Double(height) / 2 - (first.crop.y + first.crop.side / 2)) * first.scaleApplied / sigma)
            let second = try CropGeometry.plan(source: source, input: .pose(applied, reference: nil))
            #expect(!second.zoomClamped && !second.panClamped)
            #expect(second.pixelCrop == first.pixelCrop)
            #expect(abs(second.crop.side - first.crop.side) <= 1e-6 * first.crop.side)
        }
    }

    @Test("the crop keeps at least outputSize·q source pixels whenever the source allows it")
    func qualityFloor() async {
        await propertyCheck(count: 500, input: Self.sides, Self.sides, Self.scales, Self.offsets, Self.offsets) {
            width, height, scale, tx, ty in
            let settings = EditorSettings()
            let plan = try CropGeometry.plan(
                source: PixelSize(width: width, height: height),
                input: .pose(EditorPose(scale: scale, tx: tx, ty: ty), reference: nil))
            let floor = Double(settings.outputSize) * settings.qualityMultiplier
            if Double(min(width, height)) >= floor {
                #expect(plan.crop.side >= floor * (1 - 1e-9))
                #expect(!plan.qualityLimited)
            } else {
                #expect(plan.qualityLimited)
                #expect(plan.pixelCrop.side == min(width, height))
            }
        }
    }

    @Test("a pose on a proportional thumbnail gives the same crop as on the source, scaled")
    func referenceScaling() async {
        await propertyCheck(count: 300, input: Gen.int(in: 1000...8000), Gen.int(in: 2...8), Self.scales, Self.offsets)
        {
            width, divisor, scale, tx in
            let height = width * 3 / 4
            let source = PixelSize(width: width, height: height)
            let reference = PixelSize(width: width / divisor, height: height / divisor)
            let onFull = try CropGeometry.plan(
                source: source, input: .pose(EditorPose(scale: scale, tx: tx, ty: 0), reference: reference))
            // The same display expressed directly against the source.
            let factor = Double(reference.width) / Double(width)
            let direct = try CropGeometry.plan(
                source: source, input: .pose(EditorPose(scale: scale * factor, tx: tx, ty: 0), reference: nil))
            #expect(onFull.pixelCrop == direct.pixelCrop)
        }
    }

    @Test("no pose is the centred square at minimum zoom")
    func centredDefault() async {
        await propertyCheck(count: 300, input: Self.sides, Self.sides) { width, height in
            let plan = try CropGeometry.plan(source: PixelSize(width: width, height: height), input: .centred)
            let side = min(width, height)
            #expect(plan.pixelCrop.side == side)
            #expect(abs(plan.pixelCrop.x - (width - side) / 2) <= 1)
            #expect(abs(plan.pixelCrop.y - (height - side) / 2) <= 1)
            #expect(plan.scaleApplied == plan.sMin)
        }
    }
}
