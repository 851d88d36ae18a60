import ArgumentParser
import AvatarWorker
import Foundation
import Logging

/// Options every infrastructure command shares: a config file, a secrets directory and `--set key=value`
/// overrides (docs/CONFIGURATION.md: flags, then environment, then secrets directory, then file, then defaults).
struct ConfigOptions: ParsableArguments {
    @Option(
        name: .customLong("config"),
        help: "A config file of `key = value` lines (default: $AVATAR_CONFIG; keys in docs/CONFIGURATION.md).")
    var configFile: String?

    @Option(
        name: .customLong("secrets-dir"),
        help: "A folder of files named by key, each holding that key's value (default: $AVATAR_SECRETS_DIR).")
    var secretsDirectory: String?

    @Option(name: .customLong("set"), help: "Override one configuration key, e.g. --set kafka.brokers=host:9092.")
    var overrides: [String] = []

    /// The configuration, refused with every problem listed.
    func values() throws -> ConfigurationValues {
        let sources = try read()
        do {
            return try ConfigurationValues(
                flags: overrides, environment: sources.environment, file: sources.file,
                secretsDirectory: sources.directory)
        } catch {
            throw ValidationError("\(error)")
        }
    }

    /// The configuration with its problems kept (`config --check`).
    func inspect() throws -> ConfigurationValues {
        let sources = try read()
        return ConfigurationValues.inspect(
            flags: overrides, environment: sources.environment, file: sources.file,
            secretsDirectory: sources.directory)
    }

    private func read() throws -> (environment: [String: String], file: String?, directory: String?) {
        let environment = ProcessInfo.processInfo.environment
        var file: String?
        if let path = configFile ?? environment[ConfigurationValues.configFileVariable] {
            do {
                file = try String(contentsOfFile: path, encoding: .utf8)
            } catch {
                throw ValidationError("cannot read the config file \(path)")
            }
        }
        return (environment, file, secretsDirectory ?? environment[ConfigurationValues.secretsDirectoryVariable])
    }
}

/// A logger for the infrastructure commands, at the configured level.
func makeLogger(_ label: String, values: ConfigurationValues) throws -> Logger {
    var logger = Logger(label: label)
    do {
        logger.logLevel = try WorkerFactory.logLevel(values)
    } catch {
        throw ValidationError("\(error)")
    }
    return logger
}
