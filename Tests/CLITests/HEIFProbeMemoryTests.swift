import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Security finding 1 (docs/ARCHITECTURE.md "Security limits"): a HEIF header under the 40 MiB
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

/// Runs the built binary with `posix_spawn` and reaps it with `wait4`, which reports the child's
/// own peak resident set (`ru_maxrss`), unaffected by anything else the test process runs.
enum ChildUsage {
    struct Run {
        var status: Int32
        var signalled: Bool
        var peakResidentBytes: Int
    }

    static func run(_ arguments: [String], stdout: URL) throws -> Run {
        guard let binary = CLI.binary else { throw CocoaError(.fileNoSuchFile) }
        let argv: [UnsafeMutablePointer<CChar>?] = ([binary.path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, stdout.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, binary.path, &actions, nil, argv, environ)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        }
        // Linux reports ru_maxrss in kilobytes.
        let signalled = status & 0x7F != 0
        return Run(
            status: signalled ? status & 0x7F : (status >> 8) & 0xFF, signalled: signalled,
            peakResidentBytes: Int(usage.ru_maxrss) * 1024)
    }
}
