import CropGeometry
import Foundation
import Imaging
import Logging
import TestEnvironment
import Testing

@testable import RenderHelpers

/// Every reply is untrusted input (docs/SECURITY.md, "Replies are untrusted"): thousands of mutations of a real
/// probe's and render's replies go through the worker's decode and `ReplyCheck`. Each is refused or yields a result
/// the worker can use; none traps (a trap here ends the test process, which fails the run).
@Suite("Reply check")
struct ReplyCheckTests {
    static let logger = Logger(label: "test.reply-check")
    static let options = RenderOptions(extraSizes: [80], blurHash: true)

    /// A real job's replies, and the result file its renditions were written into.
    private struct Job {
        var check: ReplyCheck
        var probed: HelperReply
        var rendered: HelperReply
        var header: ImageHeader
        var result: MemoryFile
    }

    private func job() throws -> Job {
        try Vips.initialise()
        let bytes = Array(
            try Data(contentsOf: TestFiles.fixtures.appendingPathComponent("size/craft-beer_640x640.jpg")))
        let session = try Renders.inProcess.session(renderer: AvatarRenderer(logger: Self.logger), seams: nil)
        defer { session.end() }
        let probe = try session.probe(bytes, input: .centred, options: Self.options, cancellation: nil)
        let rendered = try session.render(
            fallback: false, reservedBytes: probe.estimate.fullResolution, cancellation: nil)
        let check = ReplyCheck(
            nonce: 42, sourceLength: bytes.count, options: Self.options, limits: ImageLimits(), maxEstimate: 1 << 32,
            resultCapacity: ReplyCheck.resultCapacity(for: Self.options))
        let result = try MemoryFile.sealedResult(capacity: check.resultCapacity)
        try result.writeMapped(([rendered.avatar] + rendered.extras).map(\.data))
        // Fixed timings: measured ones differ between runs, and so would the replies' bytes the seeded mutations
        // meet, and with them every count.
        var image = RenderedImage(rendered)
        image.timings = Self.timings
        return Job(
            check: check, probed: .probed(nonce: 42, probe), rendered: .rendered(nonce: 42, image),
            header: probe.header, result: result)
    }

    /// Plausible timings of one PNG render (one format, so no dictionary's order varies either).
    static var timings: RenderTimings {
        var timings = RenderTimings()
        timings.probe = .milliseconds(2)
        timings.render = .milliseconds(30)
        timings.encode = .milliseconds(12)
        timings.encodeByFormat = [.png: .milliseconds(10)]
        timings.encodeCPUByFormat = [.png: .milliseconds(10)]
        timings.total = .milliseconds(44)
        return timings
    }

    @Test("the genuine replies pass, with the same renditions")
    func genuine() throws {
        let job = try job()
        defer { job.result.close() }
        _ = try job.check.probed(job.probed)
        let result = try job.check.rendered(job.rendered, probed: job.header, result: job.result, elapsed: .seconds(5))
        #expect(result.avatar.size == 512 && result.extras.map(\.size) == [80])
    }

    @Test("thousands of mutated replies: each refused or usable, none traps")
    func mutations() throws {
        let job = try job()
        defer { job.result.close() }
        // Seeded, and the replies are the same bytes on every run (sorted keys, fixed timings), so the counts below
        // are the same too: 534 refused when written. Unseeded, or with Foundation's per-process key order, they
        // ranged 484–513.
        var generator = SplitMix64(seed: 42)
        var outcomes = (undecodable: 0, refused: 0, accepted: 0)
        for (reply, count) in [(job.probed, 2_000), (job.rendered, 4_000)] {
            let original = try HelperCoding.encode(reply)
            for _ in 0..<count {
                let mutated = Self.mutate(original, using: &generator)
                guard let decoded = try? HelperCoding.decode(HelperReply.self, from: mutated) else {
                    outcomes.undecodable += 1
                    continue
                }
                do {
                    if try job.check.failure(decoded) != nil {
                        outcomes.accepted += 1
                    } else if case .probed = reply {
                        let probe = try job.check.probed(decoded)
                        #expect(probe.estimate.fullResolution >= 0 && probe.estimate.fullResolution <= 1 << 32)
                        outcomes.accepted += 1
                    } else {
                        let result = try job.check.rendered(
                            decoded, probed: job.header, result: job.result, elapsed: .seconds(5))
                        #expect(result.avatar.size == 512 && result.extras.count == 1)
                        #expect(result.timings.encode <= .seconds(6))
                        outcomes.accepted += 1
                    }
                } catch {
                    outcomes.refused += 1
                }
            }
        }
        // The mutations reach the check, not only the JSON decoder, and it refuses what they break (with no check,
        // nothing would be refused).
        #expect(outcomes.refused > 250, "\(outcomes)")
        #expect(outcomes.undecodable > 0 && outcomes.accepted > 0, "\(outcomes)")
    }

    @Test("the forged replies a taken-over helper sent in the attack are each refused", arguments: ForgedReply.allCases)
    func forged(_ forgery: ForgedReply) throws {
        let job = try job()
        defer { job.result.close() }
        var refusedOrUnused = true
        for reply in [job.probed, job.rendered] {
            guard let bytes = try forgery.bytes(for: reply) else { continue }
            guard let decoded = try? HelperCoding.decode(HelperReply.self, from: bytes) else { continue }
            do {
                if try job.check.failure(decoded) != nil {
                    refusedOrUnused = false
                } else if case .probed = reply {
                    _ = try job.check.probed(decoded)
                    refusedOrUnused = false
                } else {
                    _ = try job.check.rendered(decoded, probed: job.header, result: job.result, elapsed: .seconds(5))
                    refusedOrUnused = false
                }
            } catch {}
        }
        #expect(refusedOrUnused, "\(forgery) was accepted")
    }

    /// Extreme numbers a forger would try.
    static let extremes = [
        "-1", "0", "9223372036854775807", "-9223372036854775808", "4611686018427387904", "1e308", "-1e308", "\"nan\"",
        "\"inf\"", "0.5", "99999999999999999999999",
    ]

    /// One to three mutations of `bytes`: a number replaced by an extreme, a byte flipped, a range cut or repeated.
    static func mutate(_ bytes: [UInt8], using generator: inout some RandomNumberGenerator) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<Int.random(in: 1...3, using: &generator) {
            switch Int.random(in: 0..<4, using: &generator) {
            case 0, 1:
                let numbers = numberRanges(in: bytes)
                guard let range = numbers.randomElement(using: &generator) else { continue }
                bytes.replaceSubrange(range, with: Array(extremes.randomElement(using: &generator)!.utf8))
            case 2:
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                bytes[index] ^= UInt8.random(in: 1...255, using: &generator)
            default:
                let start = Int.random(in: 0..<bytes.count, using: &generator)
                let end = min(bytes.count, start + Int.random(in: 1...40, using: &generator))
                if Bool.random(using: &generator) {
                    bytes.removeSubrange(start..<end)
                } else {
                    bytes.insert(contentsOf: bytes[start..<end], at: end)
                }
            }
            if bytes.isEmpty { bytes = [0x7B] }
        }
        return bytes
    }

    /// The ranges of JSON number tokens in `bytes`.
    static func numberRanges(in bytes: [UInt8]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var index = 0
        let digits = Set(Array("-0123456789.eE+".utf8))
        while index < bytes.count {
            if digits.contains(bytes[index]), index == 0 || [0x3A, 0x2C, 0x5B].contains(bytes[index - 1]) {
                var end = index
                while end < bytes.count, digits.contains(bytes[end]) { end += 1 }
                ranges.append(index..<end)
                index = end
            } else {
                index += 1
            }
        }
        return ranges
    }
}
