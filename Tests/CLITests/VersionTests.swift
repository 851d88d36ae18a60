import Foundation
import Testing

@Suite("avatar-cropper --version")
struct VersionTests {
    @Test("prints the project's version, then each library's, as loaded")
    func version() throws {
        let run = try CLI.run(["--version"])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 5, "\(run.stdout)")
        #expect(lines.first?.wholeMatch(of: /avatar-cropper \d+\.\d+\.\d+/) != nil, "\(run.stdout)")
        for (line, library) in zip(lines.dropFirst(), ["libvips", "librdkafka", "libjpeg_turbo", "libpq"]) {
            // A version read from the library: digits and dots, never empty or "unknown".
            #expect(line.wholeMatch(of: /(\w+) \d+(\.\d+)+/)?.output.1 == library[...], "\(line)")
        }
    }
}
