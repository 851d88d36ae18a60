import Foundation
import Logging
import Synchronization

/// How the process writes its logs (`log.format`): `json`, one object per line (`JSONLogHandler`), or `text`,
/// swift-log's human-readable lines. Without the key, json when standard error is not a terminal (as in a
/// container), text when it is.
public enum LogFormat: String, Sendable, CaseIterable {
    case json, text

    /// The configured format (`log.format`); the level is `WorkerFactory.logLevel`.
    public static func configured(
        _ values: ConfigurationValues, standardErrorIsTerminal: Bool = isatty(STDERR_FILENO) != 0
    ) throws -> LogFormat {
        guard let name = values[.logFormat] else { return standardErrorIsTerminal ? .text : .json }
        guard let format = LogFormat(rawValue: name) else {
            let formats = allCases.map(\.rawValue).joined(separator: ", ")
            throw ConfigurationValues.Error(
                description: "\(ConfigurationKey.logFormat.name) must be one of \(formats), got '\(name)'")
        }
        return format
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
