import Foundation

/// Raw configuration: flags, then environment, then a config file, then defaults (DESIGN §5).
public struct ConfigurationValues: Sendable {
    private var values: [String: String]

    public struct Error: Swift.Error, CustomStringConvertible {
        public var description: String
    }

    /// Merges the sources. `flags` are `key=value` pairs (`--set`); `file` is the text of a
    /// config file with one `key = value` per line and `#` comments.
    public init(flags: [String] = [], environment: [String: String] = [:], file: String? = nil) throws {
        var merged: [String: String] = [:]
        for key in ConfigurationKey.all {
            if let value = key.defaultValue { merged[key.name] = value }
        }
        if let file {
            for (number, line) in file.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let text = line.trimmingCharacters(in: .whitespaces)
                if text.isEmpty || text.hasPrefix("#") { continue }
                guard let (key, value) = Self.pair(text) else {
                    throw Error(description: "config file line \(number + 1): expected key = value")
                }
                merged[key] = value
            }
        }
        for (name, value) in environment {
            if name.hasPrefix(ConfigurationKey.kafkaPropertyEnvironmentPrefix) {
                let property = name.dropFirst(ConfigurationKey.kafkaPropertyEnvironmentPrefix.count)
                    .lowercased().replacingOccurrences(of: "_", with: ".")
                merged[ConfigurationKey.kafkaPropertyPrefix + property] = value
            } else if let key = ConfigurationKey.all.first(where: { $0.environmentName == name }) {
                merged[key.name] = value
            }
        }
        for flag in flags {
            guard let (key, value) = Self.pair(flag) else {
                throw Error(description: "--set expects key=value, got '\(flag)'")
            }
            merged[key] = value
        }
        for key in merged.keys where !Self.isKnown(key) {
            throw Error(description: "unknown configuration key '\(key)'")
        }
        values = merged
    }

    public static func isKnown(_ key: String) -> Bool {
        key.hasPrefix(ConfigurationKey.kafkaPropertyPrefix) || ConfigurationKey.all.contains { $0.name == key }
    }

    private static func pair(_ text: String) -> (String, String)? {
        guard let equals = text.firstIndex(of: "=") else { return nil }
        let key = text[..<equals].trimmingCharacters(in: .whitespaces)
        let value = text[text.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        return key.isEmpty ? nil : (key, value)
    }

    public subscript(_ key: ConfigurationKey) -> String? {
        values[key.name].flatMap { $0.isEmpty ? nil : $0 }
    }

    public func require(_ key: ConfigurationKey) throws -> String {
        guard let value = self[key] else {
            throw Error(description: "\(key.name) is required (environment \(key.environmentName))")
        }
        return value
    }

    public func int(_ key: ConfigurationKey) throws -> Int? {
        guard let text = self[key] else { return nil }
        guard let value = Int(text) else {
            throw Error(description: "\(key.name) must be a whole number, got '\(text)'")
        }
        return value
    }

    public func double(_ key: ConfigurationKey) throws -> Double? {
        guard let text = self[key] else { return nil }
        guard let value = Double(text), value.isFinite else {
            throw Error(description: "\(key.name) must be a number, got '\(text)'")
        }
        return value
    }

    /// librdkafka properties passed through (`kafka.property.*`), without the prefix.
    public var kafkaProperties: [String: String] {
        var properties: [String: String] = [:]
        for (key, value) in values where key.hasPrefix(ConfigurationKey.kafkaPropertyPrefix) {
            properties[String(key.dropFirst(ConfigurationKey.kafkaPropertyPrefix.count))] = value
        }
        return properties
    }
}
