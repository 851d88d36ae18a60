import Foundation

/// TEST-ONLY hooks into the job flow. Nothing here is active in production: the marker hooks run only when the
/// environment variable `AVATAR_TEST_RENDER_HOOKS=1` is set (never set it on a real deployment), and
/// `beforeCommit` / `whileCommitting` can only be set in-process by a test.
///
/// With the marker hooks on, a source whose bytes contain
/// - `AVATAR-TEST-ABORT` makes the worker process abort just before rendering (a native crash, for the
///   poison-message tests);
/// - `AVATAR-TEST-SLEEP-MS=<digits>` delays its render by that many milliseconds (to slow one job down in the
///   race tests); with both markers, the sleep comes first.
public struct JobTestHooks: Sendable {
    public static let environmentVariable = "AVATAR_TEST_RENDER_HOOKS"
    static let abortMarker = Array("AVATAR-TEST-ABORT".utf8)
    static let sleepMarker = Array("AVATAR-TEST-SLEEP-MS=".utf8)

    public var markersEnabled: Bool
    /// Runs (with the job id) after the versioned upload and before the publishing transaction.
    public var beforeCommit: (@Sendable (String) -> Void)?
    /// Runs (with the job id) once the job has passed its point of no return (`JobDeadline.enterCommit`),
    /// before the publishing transaction.
    public var whileCommitting: (@Sendable (String) -> Void)?

    public init(
        markersEnabled: Bool = false, beforeCommit: (@Sendable (String) -> Void)? = nil,
        whileCommitting: (@Sendable (String) -> Void)? = nil
    ) {
        self.markersEnabled = markersEnabled
        self.beforeCommit = beforeCommit
        self.whileCommitting = whileCommitting
    }

    /// The hooks the process environment turns on (none in production).
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        -> JobTestHooks
    {
        JobTestHooks(markersEnabled: environment[environmentVariable] == "1")
    }

    /// Called with the source bytes just before rendering.
    func beforeRender(_ source: [UInt8]) {
        guard markersEnabled else { return }
        // Sleep first: with both markers, the job holds its render slot for a while, then dies.
        if let end = Self.find(Self.sleepMarker, in: source) {
            let digits = source[end...].prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }.prefix(7)
            if let milliseconds = Int(String(decoding: digits, as: UTF8.self)) {
                Thread.sleep(forTimeInterval: Double(milliseconds) / 1000)
            }
        }
        if Self.find(Self.abortMarker, in: source) != nil { abort() }
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
