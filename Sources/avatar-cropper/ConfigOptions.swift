import ArgumentParser
import AvatarWorker
import Foundation
import Logging

/// Options every infrastructure command shares: a config file and `--set key=value`
/// overrides (flags, then environment, then the file, then defaults).
struct ConfigOptions: ParsableArguments {
    @Option(name: .customLong("config"), help: "A config file of `key = value` lines (see README: Configuration).")
    var configFile: String?

    @Option(name: .customLong("set"), help: "Override one configuration key, e.g. --set kafka.brokers=host:9092.")
    var overrides: [String] = []

    func values() throws -> ConfigurationValues {
        var environment = ProcessInfo.processInfo.environment
        let file: String?
        if let path = configFile ?? environment["AVATAR_CONFIG"] {
            do {
                file = try String(contentsOfFile: path, encoding: .utf8)
            } catch {
                throw ValidationError("cannot read the config file")
            }
        } else {
            file = nil
        }
        environment["AVATAR_CONFIG"] = nil
        do {
            return try ConfigurationValues(flags: overrides, environment: environment, file: file)
        } catch {
            throw ValidationError("\(error)")
        }
    }
}

/// A logger for the infrastructure commands, at the configured level. The first call also installs the
/// configured log format (`log.format`) as the process's logging backend, so every logger of the process
/// (librdkafka's and libpq's messages included) writes in it.
func makeLogger(_ label: String, values: ConfigurationValues) throws -> Logger {
    let (format, level): (LogFormat, Logger.Level)
    do {
        (format, level) = try LogFormat.configured(values)
    } catch {
        throw ValidationError("\(error)")
    }
    format.bootstrap(level: level)
    var logger = Logger(label: label)
    logger.logLevel = level
    return logger
}
