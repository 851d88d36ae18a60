import Glibc
import Testing

@testable import RenderHelpers

/// The memory files a job goes through (docs/SECURITY.md, "Memory files"): each job gets its own pair, the source
/// sealed against any change and the result sealed at the size the worker chose, so a helper taken over by its
/// upload can neither alter the photo the worker wrote nor make the worker read more than it allowed.
@Suite("Memory files")
struct MemoryFileTests {
    @Test("a sealed source holds the photo and refuses every write, growth and shrinking")
    func sealedSource() throws {
        let photo = [UInt8](repeating: 0x5C, count: 300_000)
        let file = try MemoryFile.sealedSource(photo)
        defer { file.close() }
        #expect(try file.size() == photo.count)
        #expect(try file.read(offset: 0, length: photo.count) == photo)
        #expect(pwrite(file.descriptor, [1], 1, 0) == -1 && errno == EPERM)
        #expect(ftruncate(file.descriptor, 0) == -1 && errno == EPERM)
        #expect(ftruncate(file.descriptor, 1 << 40) == -1 && errno == EPERM)
        #expect(
            mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, file.descriptor, 0)
                == UnsafeMutableRawPointer(bitPattern: -1))
        #expect(try file.read(offset: 0, length: photo.count) == photo)
    }

    @Test("a sealed result keeps its size: renditions are written through a mapping, never past it")
    func sealedResult() throws {
        let file = try MemoryFile.sealedResult(capacity: 100_000)
        defer { file.close() }
        #expect(try file.size() == 100_000)
        #expect(try Self.blocks(of: file) == 0, "no page until written")
        try file.writeMapped([Array(repeating: 0xAB, count: 70_000), [1, 2, 3]])
        #expect(try file.read(offset: 69_999, length: 4) == [0xAB, 1, 2, 3])
        #expect(throws: HelperSystemError.self) { try file.writeMapped([Array(repeating: 1, count: 100_001)]) }
        #expect(ftruncate(file.descriptor, 1 << 40) == -1 && errno == EPERM, "a helper cannot grow it")
        #expect(ftruncate(file.descriptor, 0) == -1 && errno == EPERM, "nor shrink it under the worker's read")
        #expect(try file.size() == 100_000)
        #expect(throws: HelperSystemError.self) { try file.read(offset: 99_999, length: 2) }
    }

    /// The 512-byte blocks the kernel holds for the file: its pages, whatever they contain.
    static func blocks(of file: MemoryFile) throws -> Int {
        var status = stat()
        guard fstat(file.descriptor, &status) == 0 else { throw HelperSystemError("fstat", -Int(errno)) }
        return Int(status.st_blocks)
    }
}
