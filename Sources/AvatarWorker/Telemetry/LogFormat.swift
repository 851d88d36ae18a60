import Foundation
import Logging
import Synchronization

/// How the process writes its logs (`log.format`): `json`, one object per line (`JSONLogHandler`), or `text`,
/// swift-log's human-readable lines. Without the key, json when standard error is not a terminal (as in a
/// container), text when it is.
public enum LogFormat: String, Sendable, CaseIterable {
    case json, text

    /// The configured format and level (`log.format`, `log.level`).
    public static func configured(
        _ values: ConfigurationValues, standardErrorIsTerminal: Bool = isatty(STDERR_FILENO) != 0
    )
        throws -> (format: LogFormat, level: Logger.Level)
    {
        let format: LogFormat
        if let name = values[.logFormat] {
            guard let parsed = LogFormat(rawValue: name) else {
                let formats = allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigurationValues.Error(
                    description: "\(ConfigurationKey.logFormat.name) must be one of \(formats), got '\(name)'")
            }
            format = parsed
        } else {
            format = standardErrorIsTerminal ? .text : .json
        }
        let name = try values.require(.logLevel)
        guard let level = Logger.Level(rawValue: name) else {
            let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
            throw ConfigurationValues.Error(
                description: "\(ConfigurationKey.logLevel.name) must be one of \(levels), got '\(name)'")
        }
        return (format, level)
    }

    /// A handler of this format at `level`, on standard error.
    public func handler(label: String, level: Logger.Level, metadataProvider: Logger.MetadataProvider? = nil)
        -> any LogHandler
    {
        var handler: any LogHandler
        switch self {
        case .json: handler = JSONLogHandler(label: label, metadataProvider: metadataProvider)
        case .text: handler = StreamLogHandler.standardError(label: label, metadataProvider: metadataProvider)
        }
        handler.logLevel = level
        return handler
    }

    /// Installs this format as the process's logging backend (`LoggingSystem.bootstrap`), so every logger —
    /// the worker's, the Kafka clients' (librdkafka's log queue) and the Postgres connections' (libpq's
    /// notices) — writes through it at `level`. The first call wins; later calls return false.
    @discardableResult
    public func bootstrap(level: Logger.Level, metadataProvider: Logger.MetadataProvider? = nil) -> Bool {
        let first = Self.bootstrapped.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return false }
        LoggingSystem.bootstrap(
            { label, provider in self.handler(label: label, level: level, metadataProvider: provider) },
            metadataProvider: metadataProvider)
        return true
    }

    private static let bootstrapped = Mutex(false)
}
