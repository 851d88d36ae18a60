import ArgumentParser
import AvatarWorker
import Foundation
import Logging

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Print every configuration key, or check a configuration (--check).",
        discussion: """
            Without options: every key with its environment variable, default, whether it is required or secret, \
            and what it sets (the same table as docs/CONFIGURATION.md, which --markdown prints). With --check: \
            loads --set flags, the environment, the secrets directory and the config file exactly as `worker` \
            does, prints the effective configuration (secrets masked) and exits non-zero listing every problem: \
            unknown keys, unknown AVATAR_* variables, bad values, missing required keys. Nothing is contacted.
            """)

    @OptionGroup var config: ConfigOptions

    @Flag(help: "Check the configuration `worker` would run with, and print it with secrets masked.")
    var check = false

    @Flag(help: "Print the reference as Markdown (docs/CONFIGURATION.md).")
    var markdown = false

    func run() throws {
        guard check else {
            print(markdown ? ConfigurationReference.markdown() : ConfigurationReference.text(), terminator: "")
            return
        }
        let values = try config.inspect()
        print(ConfigurationReference.effective(values), terminator: "")
        var problems = values.problems
        do {
            _ = try WorkerSettings(values)
        } catch {
            problems += "\(error)".split(separator: "\n").map(String.init)
        }
        // An s3:// URL is checked as the worker builds its store (a file:// one would create its folder).
        for url in [values[.storageURL], values[.storageSourcesURL]].compactMap({ $0 }) where url.hasPrefix("s3:") {
            do {
                _ = try WorkerFactory.store(url: url, values: values, logger: Logger(label: "avatar-cropper.config"))
            } catch {
                problems.append("\(error)")
            }
        }
        guard problems.isEmpty else {
            var standardError = StandardError()
            print("\n\(problems.count) problem\(problems.count == 1 ? "" : "s"):", to: &standardError)
            for problem in problems { print("  \(problem)", to: &standardError) }
            throw ExitCode.failure
        }
        print("\nconfiguration OK")
    }
}

/// Standard error as a `TextOutputStream`, for `print(_:to:)`.
struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        FileHandle.standardError.write(Data(string.utf8))
    }
}
