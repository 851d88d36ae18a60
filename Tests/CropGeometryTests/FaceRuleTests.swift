import TestEnvironment
import Testing

@testable import CropGeometry

/// The face rule (docs/ARCHITECTURE.md §1, "No pose"): pure arithmetic on boxes, no detector.
@Suite("Crop geometry: the face rule")
struct FaceRuleTests {
    let portrait = PixelSize(width: 3000, height: 4000)
    let landscape = PixelSize(width: 4000, height: 3000)

    func face(_ x: Double, _ y: Double, _ side: Double, score: Double = 0.9, eyes: Bool = true) -> FaceBox {
        FaceBox(
            x: x, y: y, width: side, height: side * 1.25, score: score,
            rightEye: eyes ? FacePoint(x: x + side * 0.3, y: y + side * 0.45) : nil,
            leftEye: eyes ? FacePoint(x: x + side * 0.7, y: y + side * 0.45) : nil)
    }

    func square(_ choice: FaceChoice?, _ source: PixelSize) throws -> PixelCrop? {
        guard let choice else { return nil }
        return try CropGeometry.plan(source: source, input: choice.input).pixelCrop
    }

    func contains(_ crop: PixelCrop, _ face: FaceBox) -> Bool {
        // Within the pixel crop's rounding (its corner and side are each rounded to whole pixels).
        face.x >= Double(crop.x) - 1 && face.y >= Double(crop.y) - 1
            && face.x + face.width <= Double(crop.x + crop.side) + 1
            && face.y + face.height <= Double(crop.y + crop.side) + 1
    }

    @Test("no face, or none above the score threshold: nil, so the caller plans the centred square")
    func noFace() {
        #expect(CropGeometry.faceChoice(faces: [], source: portrait) == nil)
        #expect(CropGeometry.faceChoice(faces: [face(100, 100, 400, score: 0.5)], source: portrait) == nil)
        let broken = FaceBox(x: .nan, y: 0, width: 10, height: 10, score: 0.99)
        let empty = FaceBox(x: 10, y: 10, width: 0, height: 10, score: 0.99)
        let outside = FaceBox(x: 5000, y: 5000, width: 100, height: 100, score: 0.99)
        #expect(CropGeometry.faceChoice(faces: [broken, empty, outside], source: portrait) == nil)
    }

    @Test("one face in the upper third of a portrait: a square twice its size, eyes at 40 % from the top")
    func portraitFace() throws {
        let one = face(1200, 200, 400)  // 400 × 500, eyes at y = 380
        let choice = try #require(CropGeometry.faceChoice(faces: [one], source: portrait))
        #expect(choice.kept == [0] && !choice.largestOnly)
        guard case .rect(let rect, nil) = choice.input else {
            Issue.record("not a rectangle: \(choice.input)")
            return
        }
        #expect(rect.side == 1000)  // the larger extent, 500, fills half the side
        #expect(rect.x + rect.side / 2 == 1400)  // centred across
        #expect(abs(rect.y + 0.4 * rect.side - 380) < 1e-9)  // the eye line at 40 %
        let crop = try #require(try square(choice, portrait))
        #expect(contains(crop, one))
        // The centred square of the same photo cuts the face off.
        let centred = try CropGeometry.plan(source: portrait, input: .centred).pixelCrop
        #expect(!contains(centred, one))
    }

    @Test("without eyes the union is centred both ways")
    func withoutEyes() throws {
        let choice = try #require(CropGeometry.faceChoice(faces: [face(1200, 500, 400, eyes: false)], source: portrait))
        guard case .rect(let rect, nil) = choice.input else { return }
        #expect(rect.y + rect.side / 2 == 750)
    }

    @Test("a small face: the zoom clamps bound the square, the face stays inside")
    func smallFace() throws {
        // 12 MP: the zoom limit (4 × s_min) binds before the quality limit.
        let small = face(2900, 300, 60)
        let choice = try #require(CropGeometry.faceChoice(faces: [small], source: landscape))
        let plan = try CropGeometry.plan(source: landscape, input: choice.input)
        #expect(plan.zoomClamped && !plan.qualityClamped)
        #expect(plan.pixelCrop.side == 750)  // 320 pt · 3 / (4 · 0.32)
        #expect(contains(plan.pixelCrop, small))
        // 3 MP: the quality limit binds (the square keeps outputSize · q source pixels).
        let photo = PixelSize(width: 2000, height: 1500)
        let face3 = face(1500, 200, 60)
        let plan3 = try CropGeometry.plan(
            source: photo, input: try #require(CropGeometry.faceChoice(faces: [face3], source: photo)).input)
        #expect(plan3.zoomClamped && plan3.qualityClamped)
        #expect(plan3.pixelCrop.side == 640)
        #expect(contains(plan3.pixelCrop, face3))
    }

    @Test("faces smaller than the area fraction of the largest are background")
    func background() throws {
        let main = face(1000, 800, 500)
        let passerby = face(3500, 200, 100)  // 1/25 of the area
        let choice = try #require(CropGeometry.faceChoice(faces: [passerby, main], source: landscape))
        #expect(choice.kept == [1])
        let crop = try #require(try square(choice, landscape))
        #expect(contains(crop, main) && !contains(crop, passerby))
    }

    @Test("a group: the union of the kept faces inside one square")
    func group() throws {
        let faces = [face(600, 1000, 300), face(1100, 900, 320), face(1600, 1050, 280)]
        let choice = try #require(CropGeometry.faceChoice(faces: faces, source: landscape))
        #expect(choice.kept == [0, 1, 2] && !choice.largestOnly)
        let crop = try #require(try square(choice, landscape))
        #expect(faces.allSatisfy { contains(crop, $0) })
    }

    @Test("a union wider than the photo's short side: the largest face alone (the first of equals)")
    func unionTooWide() throws {
        let faces = [face(100, 1000, 400), face(3400, 1000, 450), face(3450, 300, 450, score: 0.8)]
        let choice = try #require(CropGeometry.faceChoice(faces: faces, source: landscape))
        #expect(choice.largestOnly && choice.kept == [1])
        let crop = try #require(try square(choice, landscape))
        #expect(contains(crop, faces[1]))
    }

    @Test("a face on the photo's edge: the pan clamp keeps the square inside, the face in it")
    func edgeFace() throws {
        let corner = face(-50, -40, 500)
        let choice = try #require(CropGeometry.faceChoice(faces: [corner], source: landscape))
        let plan = try CropGeometry.plan(source: landscape, input: choice.input)
        #expect(plan.panClamped)
        #expect(plan.pixelCrop.x == 0 && plan.pixelCrop.y == 0)
    }

    @Test("deterministic, and the pose it reports plans the same square again")
    func poseRoundTrip() throws {
        let faces = [face(1200, 500, 400), face(1700, 600, 380)]
        let first = CropGeometry.faceChoice(faces: faces, source: portrait)
        #expect(CropGeometry.faceChoice(faces: faces, source: portrait) == first)
        let plan = try CropGeometry.plan(source: portrait, input: try #require(first).input)
        let pose = CropGeometry.pose(of: plan)
        let again = try CropGeometry.plan(source: portrait, input: .pose(pose, reference: nil))
        #expect(again.pixelCrop == plan.pixelCrop)
        #expect(abs(again.scaleApplied - plan.scaleApplied) < 1e-12)
    }

    @Test("generated faces: the kept union is inside the square whenever it fits at the allowed zoom")
    func generated() throws {
        var random = SplitMix64(seed: 26)
        for _ in 0..<2000 {
            let source = PixelSize(width: 320 + random.next(6000), height: 320 + random.next(6000))
            let count = 1 + random.next(6)
            let faces = (0..<count).map { _ in
                let side = Double(8 + random.next(max(8, min(source.width, source.height) / 2)))
                return face(
                    Double(random.next(source.width)) - side / 2, Double(random.next(source.height)) - side / 2, side,
                    score: 0.5 + Double(random.next(50)) / 100)
            }
            guard let choice = CropGeometry.faceChoice(faces: faces, source: source) else {
                #expect(faces.allSatisfy { $0.score < FaceRule().minScore })
                continue
            }
            let plan = try CropGeometry.plan(source: source, input: choice.input)
            #expect(plan.pixelCrop.x >= 0 && plan.pixelCrop.y >= 0)
            #expect(plan.pixelCrop.x + plan.pixelCrop.side <= source.width)
            #expect(plan.pixelCrop.y + plan.pixelCrop.side <= source.height)
            // Each kept face, clipped to the photo, is inside the square when the square is not smaller than the
            // union (the quality clamp only ever makes the square larger).
            for index in choice.kept {
                let f = faces[index]
                let clipped = FaceBox(
                    x: max(f.x, 0), y: max(f.y, 0), width: min(f.x + f.width, Double(source.width)) - max(f.x, 0),
                    height: min(f.y + f.height, Double(source.height)) - max(f.y, 0), score: f.score)
                #expect(contains(plan.pixelCrop, clipped), "\(source) \(faces) \(choice)")
            }
        }
    }
}
