import Foundation

/// TEST-ONLY seams in the job flow, for the crash, chaos and deadline tests, which need them in the real binary.
/// Production never has one: `CropJobProcessor.Dependencies.testSeams` is nil unless a caller sets it, the
/// library never reads the environment for it, and the CLI installs one only when the test-only setting
/// `AVATAR_TEST_SEAMS` names it (`JobTestSeams.named`). Each seam runs on the job's pool thread.
public protocol JobTestSeams: Sendable {
    /// With the source bytes, just before rendering (the job holds its render slot).
    func beforeRender(_ source: [UInt8])
    /// With the job id, after the versioned upload and before the job asks to commit.
    func beforeCommit(jobID: String)
    /// With the job id, once the job has passed its point of no return (`JobDeadline.enterCommit`), before the
    /// publishing transaction.
    func whileCommitting(jobID: String)
    /// With the job id, once its publishing transaction committed, before the public copies and deletions.
    func afterCommit(jobID: String)
}

extension JobTestSeams {
    public func beforeRender(_ source: [UInt8]) {}
    public func beforeCommit(jobID: String) {}
    public func whileCommitting(jobID: String) {}
    public func afterCommit(jobID: String) {}
}

/// The test-only setting that names the seams the CLI installs (never set it on a real deployment).
public enum JobTestSeamsSetting {
    public static let environmentVariable = "AVATAR_TEST_SEAMS"

    /// The seams `name` stands for; nil for no name. An unknown name is an error, so a typo cannot silently turn
    /// a crash test into a test of nothing.
    public static func seams(named name: String?) throws -> (any JobTestSeams)? {
        switch name {
        case nil, "": return nil
        case SourceMarkerSeams.name: return SourceMarkerSeams()
        case let name?:
            throw ConfigurationValues.Error(description: "\(environmentVariable): unknown seams \"\(name)\"")
        }
    }
}

/// Seams driven by markers in a user's photo (`AVATAR_TEST_SEAMS=source-markers`). A source whose bytes contain
/// - `AVATAR-TEST-ABORT` makes the worker process abort just before rendering (a native crash, for the
///   poison-message tests);
/// - `AVATAR-TEST-SLEEP-MS=<digits>` delays its render by that many milliseconds (to slow one job down in the
///   race tests); with both markers, the sleep comes first.
public struct SourceMarkerSeams: JobTestSeams {
    public static let name = "source-markers"
    static let abortMarker = Array("AVATAR-TEST-ABORT".utf8)
    static let sleepMarker = Array("AVATAR-TEST-SLEEP-MS=".utf8)

    public init() {}

    public func beforeRender(_ source: [UInt8]) {
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
