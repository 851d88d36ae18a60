import Foundation
import Imaging

#if AVATAR_TEST_SEAMS
    /// TEST-ONLY seams inside the render, for the crash, chaos, deadline and memory tests (the worker's
    /// `JobTestSeams` names them; debug builds only: docs/ARCHITECTURE.md §3, "Test seams"). They run where the
    /// render runs — in the render helper, which has no environment, so the worker passes the choice with each job —
    /// just before the render, after the helper's address space was capped. A source whose bytes contain
    /// - `AVATAR-TEST-SLEEP-MS=<digits>` sleeps that long first (a slow render, or one past its deadline);
    /// - `AVATAR-TEST-ABORT` aborts (SIGABRT); `AVATAR-TEST-SIGNAL=SEGV` or `=KILL` raises that signal: a native
    ///   crash of the process that renders;
    /// - `AVATAR-TEST-ALLOCATE-MB=<digits>` allocates and touches that many MiB, failing the render as
    ///   `out_of_memory` when the allocation is refused (the helper's address-space cap);
    /// - `AVATAR-TEST-GLIB-ALLOCATE-MB=<digits>` allocates that many MiB through GLib, as libvips does: refused,
    ///   GLib's answer is to end the process (the helper exits as out of memory, `RenderHelperServer.outOfMemory`);
    /// - `AVATAR-TEST-ESCAPE=…` tries the escapes of an attack on the helper from inside it (`EscapeAttempts`);
    /// - `AVATAR-TEST-FORGE=<name>` answers with a forged reply (`ForgedReply`).
    public enum RenderTestSeams: String, Sendable, Codable {
        case sourceMarkers = "source-markers"

        static let sleepMarker = Array("AVATAR-TEST-SLEEP-MS=".utf8)
        static let abortMarker = Array("AVATAR-TEST-ABORT".utf8)
        static let signalMarker = Array("AVATAR-TEST-SIGNAL=".utf8)
        static let allocateMarker = Array("AVATAR-TEST-ALLOCATE-MB=".utf8)
        static let glibAllocateMarker = Array("AVATAR-TEST-GLIB-ALLOCATE-MB=".utf8)

        func beforeRender(_ source: [UInt8]) throws(ImagingError) {
            try EscapeAttempts.run(source)
            if let milliseconds = Self.number(after: Self.sleepMarker, in: source) {
                Thread.sleep(forTimeInterval: Double(milliseconds) / 1000)
            }
            if Self.find(Self.abortMarker, in: source) != nil { abort() }
            if let end = Self.find(Self.signalMarker, in: source) {
                let name = String(decoding: source[end...].prefix(4), as: UTF8.self)
                if name == "SEGV" { raise(SIGSEGV) }
                if name == "KILL" { raise(SIGKILL) }
            }
            if let megabytes = Self.number(after: Self.allocateMarker, in: source) {
                let bytes = megabytes << 20
                guard let memory = malloc(bytes) else {
                    throw ImagingError(.outOfMemory, detail: "test seam: \(megabytes) MiB refused")
                }
                defer { free(memory) }
                let pages = memory.bindMemory(to: UInt8.self, capacity: bytes)
                for offset in stride(from: 0, to: bytes, by: 4096) { pages[offset] = 1 }
            }
            if let megabytes = Self.number(after: Self.glibAllocateMarker, in: source) {
                Vips.allocateAndRelease(bytes: megabytes << 20)
            }
        }

        /// The digits (at most 7) after `marker`, as a number.
        static func number(after marker: [UInt8], in bytes: [UInt8]) -> Int? {
            guard let end = find(marker, in: bytes) else { return nil }
            let digits = bytes[end...].prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }.prefix(7)
            return Int(String(decoding: digits, as: UTF8.self))
        }

        /// The index just past the first occurrence of `marker` in `bytes`.
        static func find(_ marker: [UInt8], in bytes: [UInt8]) -> Int? {
            guard let first = marker.first, bytes.count >= marker.count else { return nil }
            var index = 0
            let last = bytes.count - marker.count
            while index <= last {
                if bytes[index] == first && bytes[index..<index + marker.count].elementsEqual(marker) {
                    return index + marker.count
                }
                index += 1
            }
            return nil
        }
    }
#else
    /// A release build has no render test seams: this type has no value, so the `seams` a session and a probe carry
    /// are always nil, and a helper refuses a message that names one (docs/ARCHITECTURE.md §3, "Test seams").
    public enum RenderTestSeams: Sendable, Codable {
        public init(from decoder: any Decoder) throws {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "this build has no test seams"))
        }

        public func encode(to encoder: any Encoder) throws { switch self {} }

        func beforeRender(_ source: [UInt8]) throws(ImagingError) { switch self {} }
    }
#endif
