import CropGeometry
import Foundation
import Imaging
import Logging
import TestEnvironment
import Testing

@testable import RenderHelpers

/// Faces found inside a locked-down render helper (docs/ARCHITECTURE.md §2, "Faces"; §3, "Render helpers"): the
/// helper loads the model before its lockdown and detects after it, as the process itself would.
@Suite(
    "Render helpers: faces", .serialized,
    .enabled(if: FacePhotos.model != nil, Comment(rawValue: FacePhotos.missingModel)),
    .enabled(if: FacePhotos.pascal != nil, Comment(rawValue: FacePhotos.missingPascal)))
struct RenderHelperFacesTests {
    static let logger = Logger(label: "test.render-helpers.faces")

    private func render(_ bytes: [UInt8], on renders: Renders, options: RenderOptions) throws -> RenderResult {
        let session = try renders.session(renderer: AvatarRenderer(logger: Self.logger), seams: nil)
        defer { session.end() }
        let probed = try session.probe(bytes, input: .centred, options: options, cancellation: nil)
        return try session.render(fallback: false, reservedBytes: probed.estimate.fullResolution, cancellation: nil)
    }

    private func photo() throws -> [UInt8] {
        let folder = try #require(FacePhotos.pascal)
        return [UInt8](try Data(contentsOf: folder.appendingPathComponent("2008_002506.jpg")))
    }

    private static let faceRule = RenderOptions(defaultCrop: .face)

    /// The photo rendered in-process with the model, and a one-helper pool with it (shut it down).
    private func renderedLocallyAndPool() throws -> (bytes: [UInt8], local: RenderResult, pool: RenderHelperPool) {
        let model = try #require(FacePhotos.model).path
        try Vips.initialise()
        #expect(FaceDetectors.install(modelPath: model) == nil)
        let bytes = try photo()
        let local = try render(bytes, on: .inProcess, options: Self.faceRule)
        let pool = try RenderHelperPool(
            launch: .init(executable: try TestFiles.requireCropperBinary(), vipsConcurrency: 1, faceModel: model),
            size: 1, logger: Self.logger)
        return (bytes, local, pool)
    }

    @Test("with the model: the same faces and the same avatar as in-process")
    func withModel() throws {
        let (bytes, local, pool) = try renderedLocallyAndPool()
        defer { pool.shutdown() }
        let helped = try render(bytes, on: .helpers(pool), options: Self.faceRule)
        let report = try #require(helped.faces)
        #expect(report.error == nil && report.ruleUsed && report.faces.count == 3)
        #expect(report.faces == local.faces?.faces && report.kept == local.faces?.kept)
        #expect(helped.plan == local.plan && helped.avatar == local.avatar)
    }

    @Test("an idle helper drops its networks and builds them again, locked down, for its next no-pose job")
    func networksRebuiltAfterIdle() throws {
        let (bytes, local, pool) = try renderedLocallyAndPool()
        defer { pool.shutdown() }
        let idle = Double(RenderHelperServer.idleTrimDelay) / 1000 + 0.5
        for _ in 0..<2 {
            Thread.sleep(forTimeInterval: idle)  // past the helper's idle delay: its networks are gone
            let helped = try render(bytes, on: .helpers(pool), options: Self.faceRule)
            #expect(helped.faces?.error == nil && helped.faces?.faces == local.faces?.faces)
            #expect(helped.avatar == local.avatar)
        }
    }

    @Test("without a model: the centred avatar, and the report says why")
    func withoutModel() throws {
        try Vips.initialise()
        let bytes = try photo()
        let centred = try render(bytes, on: .inProcess, options: RenderOptions(defaultCrop: .centre))
        let pool = try RenderHelperPool(
            launch: .init(
                executable: try TestFiles.requireCropperBinary(), vipsConcurrency: 1,
                faceModel: "/nonexistent/face_detection_yunet_2023mar.onnx"),
            size: 1, logger: Self.logger)
        defer { pool.shutdown() }
        let helped = try render(bytes, on: .helpers(pool), options: RenderOptions(defaultCrop: .face))
        #expect(helped.faces?.error == .modelMissing && helped.faces?.ruleUsed == false)
        #expect(helped.avatar == centred.avatar && helped.plan == centred.plan)
    }
}
