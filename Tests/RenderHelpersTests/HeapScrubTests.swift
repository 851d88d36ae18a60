import Foundation
import Imaging
import Logging
import TestEnvironment
import Testing

@testable import RenderHelpers

/// The heap scrubbing each render helper turns on at start (`HelperProcess.scrubHeap`): memory a decoder allocates
/// and never writes must hold a constant, never what an earlier job left there. Checked inside a real helper (the
/// `AVATAR-TEST-HEAP-CHECK` seam), never in the test process, whose other suites run beside it.
@Suite("Heap scrubbing")
struct HeapScrubTests {
    @Test("in a render helper, a block handed out holds the scrub pattern, not what a freed block held, small or large")
    func freshBlocks() throws {
        let pool = try RenderHelperPool(
            launch: .init(executable: try TestFiles.requireCropperBinary(), vipsConcurrency: 1), size: 1,
            logger: Logger(label: "test.heap-scrub"))
        defer { pool.shutdown() }
        let photo = try Data(contentsOf: TestFiles.fixtures.appendingPathComponent("size/craft-beer_640x640.jpg"))
        let session = try Renders.helpers(pool).session(
            renderer: AvatarRenderer(logger: Logger(label: "test.heap-scrub")), seams: .sourceMarkers)
        defer { session.end() }
        let probed = try session.probe(
            Array(photo) + Array("AVATAR-TEST-HEAP-CHECK".utf8), input: .centred, options: RenderOptions(),
            cancellation: nil)
        // The seam throws `processing_failed` when the fresh block showed the freed one's bytes (or zeros).
        _ = try session.render(fallback: false, reservedBytes: probed.estimate.fullResolution, cancellation: nil)
    }
}
