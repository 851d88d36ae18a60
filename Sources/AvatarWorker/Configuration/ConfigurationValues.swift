import Configuration
import Foundation

/// The worker's configuration, read through swift-configuration: flags (`--set key=value`), then
/// the environment (`AVATAR_SECTION_NAME`), then a config file (`key = value` lines), then each key's default,
/// which `ConfigurationKey` states (and nothing else restates).
///
/// Unknown keys in flags and files are refused (a typo must not silently fall back to a default);
/// librdkafka properties pass through under `kafka.property.`.
public struct ConfigurationValues: Sendable {
    private let reader: ConfigReader
    /// librdkafka properties passed through (`kafka.property.*`), without the prefix.
    public let kafkaProperties: [String: String]

    public struct Error: Swift.Error, CustomStringConvertible {
        public var description: String
    }

    /// Merges the sources. `flags` are `key=value` pairs (`--set`); `file` is the text of a
    /// config file with one `key = value` per line and `#` comments.
    public init(flags: [String] = [], environment: [String: String] = [:], file: String? = nil) throws {
        let filePairs = try file.map(Self.fileLines) ?? []
        let flagPairs = try flags.map { flag in
            guard let pair = Self.pair(flag) else { throw Error(description: "--set expects key=value, got '\(flag)'") }
            return pair
        }
        for (key, _) in filePairs + flagPairs where !Self.isKnown(key) {
            throw Error(description: "unknown configuration key '\(key)'")
        }

        // librdkafka's property names are open-ended, so they are collected here rather than looked up.
        var properties: [String: String] = [:]
        let environmentProperties = environment.compactMap { name, value -> (String, String)? in
            guard name.hasPrefix(ConfigurationKey.kafkaPropertyEnvironmentPrefix) else { return nil }
            let property = name.dropFirst(ConfigurationKey.kafkaPropertyEnvironmentPrefix.count)
                .lowercased().replacingOccurrences(of: "_", with: ".")
            return (ConfigurationKey.kafkaPropertyPrefix + property, value)
        }
        for (key, value) in filePairs + environmentProperties + flagPairs
        where key.hasPrefix(ConfigurationKey.kafkaPropertyPrefix) {
            properties[String(key.dropFirst(ConfigurationKey.kafkaPropertyPrefix.count))] = value
        }
        kafkaProperties = properties

        // The environment provider names `kafka.group-id` KAFKA_GROUP_ID; our variables carry the AVATAR_ prefix.
        let environmentProvider = KeyMappingProvider(
            upstream: EnvironmentVariablesProvider(
                environmentVariables: environment.filter { $0.key.hasPrefix("AVATAR_") },
                secretsSpecifier: .specific(Set(ConfigurationKey.all.filter(\.isSecret).map(\.environmentName))))
        ) { key in key.prepending(["avatar"]) }
        reader = ConfigReader(providers: [
            Self.provider("flags", flagPairs), environmentProvider, Self.provider("config file", filePairs),
        ])
    }

    public static func isKnown(_ key: String) -> Bool {
        key.hasPrefix(ConfigurationKey.kafkaPropertyPrefix)
            || ConfigurationKey.all.contains { $0.name == key || $0.deprecatedNames.contains(key) }
    }

    /// The key's value (under its name, else under a deprecated name), or its default; nil when none is set
    /// (an empty value counts as unset).
    public subscript(_ key: ConfigurationKey) -> String? {
        let value =
            ([key.name] + key.deprecatedNames).lazy.compactMap {
                reader.string(forKey: ConfigKey($0), isSecret: key.isSecret)
            }.first ?? key.defaultValue
        return value.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Deprecated names set in some source, with the key that replaces each: the worker logs them at start.
    public var deprecatedNamesInUse: [(deprecated: String, key: ConfigurationKey)] {
        ConfigurationKey.all.flatMap { key in
            key.deprecatedNames.filter { reader.string(forKey: ConfigKey($0)) != nil }.map { ($0, key) }
        }
    }

    public func require(_ key: ConfigurationKey) throws -> String {
        guard let value = self[key] else {
            throw Error(description: "\(key.name) is required (environment \(key.environmentName))")
        }
        return value
    }

    /// A whole number, at least `minimum`; nil when the key is unset and has no default.
    public func int(_ key: ConfigurationKey, minimum: Int? = nil) throws -> Int? {
        guard let text = self[key] else { return nil }
        guard let value = Int(text) else {
            throw Error(description: "\(key.name) must be a whole number, got '\(text)'")
        }
        if let minimum, value < minimum {
            throw Error(description: "\(key.name) must be at least \(minimum), got \(value)")
        }
        return value
    }

    /// A whole number for a key that has a default (so it always has a value), at least `minimum`.
    public func integer(_ key: ConfigurationKey, minimum: Int? = nil) throws -> Int {
        guard let value = try int(key, minimum: minimum) else {
            throw Error(description: "\(key.name) is required (environment \(key.environmentName))")
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

    // MARK: - Sources

    private static func provider(_ name: String, _ pairs: [(String, String)]) -> InMemoryProvider {
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        for (key, value) in pairs where !key.hasPrefix(ConfigurationKey.kafkaPropertyPrefix) {
            let isSecret = ConfigurationKey.all.first { $0.name == key }?.isSecret ?? false
            values[AbsoluteConfigKey(ConfigKey(key))] = ConfigValue(.string(value), isSecret: isSecret)
        }
        return InMemoryProvider(name: name, values: values)
    }

    private static func fileLines(_ file: String) throws -> [(String, String)] {
        var pairs: [(String, String)] = []
        for (number, line) in file.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty || text.hasPrefix("#") { continue }
            guard let pair = pair(text) else {
                throw Error(description: "config file line \(number + 1): expected key = value")
            }
            pairs.append(pair)
        }
        return pairs
    }

    private static func pair(_ text: String) -> (String, String)? {
        guard let equals = text.firstIndex(of: "=") else { return nil }
        let key = text[..<equals].trimmingCharacters(in: .whitespaces)
        let value = text[text.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        return key.isEmpty ? nil : (key, value)
    }
}
