import Foundation
import Testing

/// `promtool` (Debian package `prometheus`) on the PATH, if any.
private let promtool: String? = (ProcessInfo.processInfo.environment["PATH"] ?? "")
    .split(separator: ":").map { "\($0)/promtool" }
    .first { FileManager.default.isExecutableFile(atPath: $0) }

@Suite("Prometheus configuration (promtool)", .enabled(if: promtool != nil))
struct PromtoolTests {
    @Test("promtool accepts the compose stack's prometheus.yml")
    func checkConfig() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(promtool))
        process.arguments = ["check", "config", "--syntax-only", Repo.url("deploy/prometheus/prometheus.yml").path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
    }
}
