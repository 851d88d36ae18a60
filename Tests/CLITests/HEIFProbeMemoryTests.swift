import Foundation
import Testing

/// docs/ARCHITECTURE.md §7: a HEIF header under the 40 MiB
/// file cap, with no image data, whose `ipma` boxes repeat the primary item's entry ~155,000 times
/// with 255 associations each. The container parse used to collect every association (~617 MB
/// and seconds of CPU) before `MemoryBudget` reserved anything. The built binary probes it and
/// its peak resident memory, read by `wait4` from the kernel, stays under a stated bound.
@Suite("avatar-cropper crop on an ipma-amplification HEIF")
struct HEIFProbeMemoryTests {
    /// The bound: the 38 MiB file read once, the process' code and libvips' start, and room to
    /// spare; far below the ~617 MB the unbounded parse reached.
    static let peakBound = 256 * 1024 * 1024

    /// ftyp, then meta (hdlr, pitm 1, iprp (ipco with one ispe; `boxes` ipma boxes of `entries`
    /// entries, each item 1 with 255 one-byte associations to property 1)), then an empty mdat.
    static func amplifyingHEIF(boxes: Int = 16, entries: Int = 9_700) -> [UInt8] {
        func be32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
        func box(_ type: String, _ payload: [UInt8]) -> [UInt8] { be32(8 + payload.count) + Array(type.utf8) + payload }
        var ipma: [UInt8] = []
        ipma.reserveCapacity(12 + entries * 258)
        ipma += be32(12 + 4 + entries * 258) + Array("ipma".utf8) + [0, 0, 0, 0] + be32(entries)
        let entry: [UInt8] = [0, 1, 255] + Array(repeating: 1, count: 255)
        for _ in 0..<entries { ipma += entry }
        let ispe = box("ispe", [0, 0, 0, 0] + be32(640) + be32(480))
        var iprpPayload = box("ipco", ispe)
        iprpPayload.reserveCapacity(iprpPayload.count + boxes * ipma.count)
        for _ in 0..<boxes { iprpPayload += ipma }
        let hdlr = box("hdlr", [0, 0, 0, 0, 0, 0, 0, 0] + Array("pict".utf8) + Array(repeating: 0, count: 13))
        let pitm = box("pitm", [0, 0, 0, 0, 0, 1])
        let metaPayload = [0, 0, 0, 0] + hdlr + pitm + box("iprp", iprpPayload)
        let ftyp = box("ftyp", Array("avif".utf8) + [0, 0, 0, 0] + Array("avifmif1miaf".utf8))
        return ftyp + box("meta", metaPayload) + box("mdat", [])
    }

    @Test("the probe of a 38 MiB amplifying header peaks under the bound, and the file is refused")
    func peakMemory() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bytes = Self.amplifyingHEIF()
        #expect(bytes.count < 40 * 1024 * 1024)
        let input = directory.appendingPathComponent("amplifying.avif")
        try Data(bytes).write(to: input)
        let report = directory.appendingPathComponent("report.json")
        let run = try ChildUsage.run(
            ["crop", input.path, "-o", directory.appendingPathComponent("o.png").path, "--json"], stdout: report)
        #expect(run.peakResidentBytes < Self.peakBound, "peak \(run.peakResidentBytes / 1_048_576) MiB")
        // No image data behind the header: whatever the parse concludes, the answer is a typed
        // refusal, never a crash.
        #expect(!run.signalled, "ended on signal \(run.status)")
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any]
        #expect((object?["error"] as? [String: Any])?["code"] is String, "\(String(describing: object))")
    }
}

/// Runs the built binary and reports its own peak resident set (`ru_maxrss`). The child is started by a small
/// Python parent, not by this test process: Linux charges a child's `ru_maxrss` with the peak of the address
/// space it was forked or spawned from (recorded at `exec`), so a child of this test runner, which holds
/// hundreds of MiB while the image suites run beside it, would report the runner's peak instead of its own.
enum ChildUsage {
    struct Run {
        var status: Int32
        var signalled: Bool
        var peakResidentBytes: Int
    }

    /// Prints "<returncode> <ru_maxrss KiB>" for the one child it runs (a negative return code is a signal).
    static let parent = """
        import resource, subprocess, sys
        with open(sys.argv[1], "wb") as out:
            code = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.DEVNULL).returncode
        print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        """

    static func run(_ arguments: [String], stdout: URL) throws -> Run {
        guard let binary = CLI.binary else { throw CocoaError(.fileNoSuchFile) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", parent, stdout.path, binary.path] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let fields = String(decoding: output, as: UTF8.self).split(whereSeparator: \.isWhitespace).compactMap {
            Int($0)
        }
        guard process.terminationStatus == 0, fields.count == 2 else { throw CocoaError(.executableLoad) }
        // Linux reports ru_maxrss in kilobytes.
        return Run(
            status: Int32(abs(fields[0])), signalled: fields[0] < 0, peakResidentBytes: fields[1] * 1024)
    }
}
