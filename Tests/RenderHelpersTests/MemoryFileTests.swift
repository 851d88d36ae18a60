import Glibc
import Testing

@testable import RenderHelpers

/// The memory files a helper's jobs go through (docs/ARCHITECTURE.md §3, "Render helpers"): a helper keeps its
/// pair from job to job, so what one job leaves in them must be gone, or all zeros, before the next.
@Suite("Memory files")
struct MemoryFileTests {
    @Test("a shorter write leaves nothing of the longer contents before it")
    func shorterWrite() throws {
        let file = try MemoryFile.create("test-rewrite")
        defer { file.close() }
        try file.write([Array(repeating: 0xAB, count: 70_000), [1, 2, 3]])
        #expect(try file.size() == 70_003)
        try file.write([[7, 8], [9]])
        #expect(try file.size() == 3)
        #expect(try file.read(offset: 0, length: 3) == [7, 8, 9])
        #expect(throws: HelperSystemError.self) { try file.read(offset: 0, length: 4) }
    }

    @Test("written over, a file keeps its pages; filled with zeros, it keeps them and its size")
    func pagesKept() throws {
        let file = try MemoryFile.create("test-pages")
        defer { file.close() }
        let photo = [UInt8](repeating: 0x5C, count: 300_000)
        try file.write([photo])
        let allocated = try Self.blocks(of: file)
        #expect(allocated > 0)
        try file.write([Array(photo.reversed())])
        #expect(try Self.blocks(of: file) == allocated)
        try file.zeroFill()
        #expect(try file.size() == photo.count)
        #expect(try Self.blocks(of: file) == allocated)
        #expect(try file.read(offset: 0, length: photo.count).allSatisfy { $0 == 0 })
    }

    @Test("a file larger than the kept size gives its pages back; a smaller one keeps them")
    func release() throws {
        let file = try MemoryFile.create("test-release")
        defer { file.close() }
        try file.write([[UInt8](repeating: 1, count: 10_000)])
        try file.release(ifLargerThan: 10_000)
        #expect(try file.size() == 10_000)
        try file.release(ifLargerThan: 9_999)
        #expect(try file.size() == 0)
        #expect(try Self.blocks(of: file) == 0)
    }

    /// The 512-byte blocks the kernel holds for the file: its pages, whatever they contain.
    static func blocks(of file: MemoryFile) throws -> Int {
        var status = stat()
        guard fstat(file.descriptor, &status) == 0 else { throw HelperSystemError("fstat", -Int(errno)) }
        return Int(status.st_blocks)
    }
}
