import Foundation
import Testing

@testable import RenderHelpers

/// The heap scrubbing each render helper turns on at start (`HelperProcess.scrubHeap`): memory a decoder allocates
/// and never writes must hold a constant, never what an earlier job left there.
@Suite("Heap scrubbing")
struct HeapScrubTests {
    @Test("with the heap scrubbed, a block handed out holds the scrub pattern, not what a freed block held")
    func freshBlocks() throws {
        #expect(HelperProcess.scrubHeap(), "glibc's M_PERTURB: the helpers refuse to start without it")
        defer { HelperProcess.scrubHeap(byte: 0) }
        let size = 256 * 1024
        let earlier = try #require(malloc(size))
        memset(earlier, 0x37, size)
        free(earlier)
        let fresh = try #require(malloc(size))
        defer { free(fresh) }
        let pattern = UInt8(truncatingIfNeeded: HelperProcess.heapScrubByte ^ 0xFF)
        let bytes = UnsafeRawBufferPointer(start: fresh, count: size)
        #expect(bytes.allSatisfy { $0 == pattern }, "an earlier block's bytes (or the kernel's zeros) showed through")
    }
}
