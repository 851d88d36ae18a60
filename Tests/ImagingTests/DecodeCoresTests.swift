import CropGeometry
import Foundation
import Testing

@testable import Imaging

/// docs/ARCHITECTURE.md §3, "Decode cores": a HEIF grid's tiles decoded on several threads give the pixels one
/// thread gives, and the cores are shared with other processes through the kernel's record locks.
@Suite("Decode cores")
struct DecodeCoresTests {
    static let grid = "formats/heic_grid-8x6-tiles_500x380.heic"

    @Test("a grid's tiles on four threads: the same pixels as on one, for every shrink and across seams")
    func samePixels() throws {
        let cores = try DecodeCores(count: 4)
        #expect(cores.extraThreads == 3)
        var files = [Self.grid]
        if Corpus.has(HEIFRegionDecoderTests.example) { files.append(HEIFRegionDecoderTests.example) }
        for file in files {
            let input = InputBytes(try Corpus.bytes(file))
            let layout = try HEIFRegionDecoder.layout(of: input, maxPixels: 100_000_000)
            #expect(layout.isGrid, "\(file)")
            let short = min(layout.storedSize.width, layout.storedSize.height)
            let requests: [(crop: PixelCrop, shrink: Int, origin: (x: Int, y: Int))] = [
                (PixelCrop(x: 0, y: 0, side: short), 1, (0, 0)),
                (PixelCrop(x: 37, y: 11, side: short * 3 / 4), 1, (0, 0)),
                (PixelCrop(x: 3, y: 5, side: short / 2 - 7), 2, (1, 0)),
                (PixelCrop(x: 0, y: 0, side: short / 4 - 1), 4, (0, 3)),
                (PixelCrop(x: 1, y: 1, side: 20), 1, (0, 0)),  // one tile: nothing to share
            ]
            for request in requests {
                let what = "\(file) \(request.crop) shrink \(request.shrink)"
                let one = try HEIFRegionDecoder.decode(
                    input, maxPixels: 100_000_000, crop: request.crop, shrink: request.shrink, origin: request.origin,
                    thumbnail: false, cancel: nil, cores: nil)
                let four = try HEIFRegionDecoder.decode(
                    input, maxPixels: 100_000_000, crop: request.crop, shrink: request.shrink, origin: request.origin,
                    thumbnail: false, cancel: nil, cores: cores)
                #expect(four.tiles == one.tiles && four.convertedTiles == one.convertedTiles, "\(what)")
                #expect(try four.image.pixels() == one.image.pixels(), "\(what)")
                #expect(one.threads == 1, "\(what)")
                // Every square of more than a few tiles was shared: the threads ran, and the pixels are still one's.
                if one.tiles >= 6 { #expect(four.threads > 1, "\(what): \(four.threads) threads") }
            }
        }
    }

    @Test("an AV1 image: dav1d runs on its render's core and a free extra one, on one when none is free")
    func av1Pinned() throws {
        let cores = try DecodeCores(count: 2)
        let input = InputBytes(try Corpus.bytes("formats/avif_10bit-420-full_landscape-1_537x359.avif"))
        func decode() throws(HEIFRegionDecoder.Failure) -> HEIFRegionDecoder.Region {
            try HEIFRegionDecoder.decode(
                input, maxPixels: 1_000_000, crop: PixelCrop(x: 0, y: 0, side: 359), thumbnail: false, cancel: nil,
                cores: cores)
        }
        let allowed = try Self.allowedCPUs()
        // No render core held (the CLI, a test): as libheif left it, one thread reported.
        let unpinned = try decode()
        #expect(unpinned.threads == 1)
        // The render's core and the free one: two CPUs where the machine has them.
        let free = try cores.holdingCore { () throws(HEIFRegionDecoder.Failure) in try decode() }
        #expect(free.threads == (allowed.count >= 2 ? 2 : 1))
        #expect(try Self.allowedCPUs() == allowed, "the thread's CPUs restored")
        // The other core held elsewhere (another render): the render's own CPU only.
        let other = try #require(cores.takeExtra())
        let busy = try cores.holdingCore { () throws(HEIFRegionDecoder.Failure) in try decode() }
        cores.give(other)
        #expect(busy.threads == 1)
        #expect(try Self.allowedCPUs() == allowed)
        #expect(try free.image.pixels() == unpinned.image.pixels() && busy.image.pixels() == unpinned.image.pixels())
        // Every core given back.
        let taken = [cores.takeExtra(), cores.takeExtra()]
        #expect(taken.allSatisfy { $0 != nil })
        taken.compactMap { $0 }.forEach(cores.give)
    }

    /// The calling thread's allowed CPUs, as the kernel lists them.
    static func allowedCPUs() throws -> [String] {
        let status = try String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") } ?? ""
        let list = line.split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        return list.split(separator: ",").flatMap { part -> [String] in
            let ends = part.split(separator: "-").compactMap { Int($0) }
            guard let first = ends.first else { return [] }
            return (first...(ends.last ?? first)).map(String.init)
        }
    }

    @Test("a cancelled decode on several threads stops with cancelled and gives its cores back")
    func cancelled() throws {
        let cores = try DecodeCores(count: 2)
        let flag = DecodeCancelFlag()
        flag.set()
        let input = InputBytes(try Corpus.bytes(Self.grid))
        do {
            _ = try HEIFRegionDecoder.decode(
                input, maxPixels: 1_000_000, crop: PixelCrop(x: 0, y: 0, side: 380),
                thumbnail: false, cancel: flag, cores: cores)
            Issue.record("a cancelled decode returned pixels")
        } catch {
            #expect(error.kind == .cancelled)
        }
        let taken = [cores.takeExtra(), cores.takeExtra()]
        #expect(taken.allSatisfy { $0 != nil }, "both cores free again")
        taken.compactMap { $0 }.forEach(cores.give)
    }

    @Test("a core another process holds is not taken, and comes free when that process is killed")
    func otherProcess() throws {
        let cores = try DecodeCores(count: 1)
        let holder = try LockHolder(cores, byte: 0, exclusive: true)
        #expect(cores.takeExtra() == nil, "the only core is held elsewhere")
        // A render waits for it a while, then runs without one.
        let clock = ContinuousClock()
        let waited = clock.measure { cores.holdingCore { () throws(Never) in } }
        #expect(waited >= .milliseconds(Int(DecodeCores.takeWaitMilliseconds)))
        holder.kill()
        let core = try #require(cores.takeExtra(), "the kernel released the killed holder's lock")
        cores.give(core)
    }

    @Test("while a render in another process waits for a core, extra threads take none")
    func doorbell() throws {
        let cores = try DecodeCores(count: 2)
        let waiting = try LockHolder(cores, byte: 2, exclusive: false)
        #expect(cores.takeExtra() == nil, "a render waits: no core for an extra tile")
        var held: Int32?
        cores.holdingCore { () throws(Never) in held = cores.takeExtra() }
        #expect(held == nil)
        waiting.kill()
        let core = try #require(cores.takeExtra())
        cores.give(core)
    }

    /// Another process holding a record lock on one byte of the cores' memory file, as a helper would.
    final class LockHolder {
        let process = Process()

        init(_ cores: DecodeCores, byte: Int, exclusive: Bool) throws {
            let script = """
                import fcntl, os, sys
                fd = os.open(sys.argv[1], os.O_RDWR)
                fcntl.lockf(fd, (fcntl.LOCK_EX if sys.argv[3] == "x" else fcntl.LOCK_SH) | fcntl.LOCK_NB, 1, int(sys.argv[2]))
                print("held", flush=True)
                sys.stdin.read()
                """
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = [
                "-c", script, "/proc/\(getpid())/fd/\(cores.descriptor)", "\(byte)", exclusive ? "x" : "s",
            ]
            let output = Pipe()
            process.standardOutput = output
            process.standardInput = Pipe()
            try process.run()
            let line = output.fileHandleForReading.availableData
            guard String(decoding: line, as: UTF8.self).hasPrefix("held") else {
                process.terminate()
                throw CocoaError(.fileLocking)
            }
        }

        func kill() {
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }

        deinit {
            if process.isRunning { kill() }
        }
    }
}
