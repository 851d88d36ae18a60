import Foundation
import TestEnvironment
import Testing

/// `promtool` (Debian package `prometheus`) on the PATH, if any. The deploy checks run wherever it is
/// installed and are skipped elsewhere, even under AVATAR_REQUIRE_SERVICES (they check files, not services).
private let promtool: String? = TestService.tool("promtool").value

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
