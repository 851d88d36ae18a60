import AvatarWorker
import Foundation

/// One configuration key a deploy file sets, as it is written there.
struct ConfigurationSetting: Hashable, CustomStringConvertible {
    enum Form: String {
        /// An environment variable name (`AVATAR_WORKER_POOL_WIDTH`).
        case environment
        /// A `key = value` line of a config file (`worker.pool-width`).
        case file
        /// A `--set key=value` argument (`worker.pool-width`).
        case flag
    }

    var name: String
    var form: Form
    /// Where: a file and a place in it, for the failure message.
    var source: String

    var description: String { "\(name) (\(form.rawValue), \(source))" }
}

/// Checks that every configuration key the deploy files set is one the worker reads
/// (`ConfigurationKey.all`), and collects those keys from Dockerfiles, compose files,
/// Kubernetes manifests, config files and command lines.
enum ConfigurationAudit {
    /// librdkafka properties the deploy files may pass through (`kafka.property.*`,
    /// `AVATAR_KAFKA_PROPERTY_*`). The worker accepts any name, and librdkafka reports a
    /// misspelt one only when the worker starts, so the deploy files keep to this list of
    /// real property names (librdkafka's CONFIGURATION.md).
    static let librdkafkaProperties: Set<String> = [
        "security.protocol", "sasl.mechanisms", "sasl.username", "sasl.password",
        "ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.key.password",
        "ssl.endpoint.identification.algorithm",
        "session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms",
        "statistics.interval.ms", "queued.max.messages.kbytes", "fetch.max.bytes", "client.id",
        "client.rack", "socket.keepalive.enable",
    ]

    /// Environment variables the worker reads that are not configuration keys.
    static let otherEnvironment: Set<String> = [
        ConfigurationValues.configFileVariable, ConfigurationValues.secretsDirectoryVariable,
    ]

    static let environmentPrefix = "AVATAR_"
    static let kafkaPropertyEnvironmentPrefix = "AVATAR_KAFKA_PROPERTY_"

    /// Why the worker would not read this setting, or nil when it does.
    static func problem(_ setting: ConfigurationSetting) -> String? {
        switch setting.form {
        case .environment:
            let name = setting.name
            if otherEnvironment.contains(name) { return nil }
            // `AVATAR_X_FILE` names a file holding AVATAR_X's value (the deploy files use it for secrets).
            if name.hasSuffix(ConfigurationValues.fileVariableSuffix) {
                return problem(.init(name: String(name.dropLast(5)), form: .environment, source: setting.source))
            }
            if name.hasPrefix(kafkaPropertyEnvironmentPrefix) {
                let property = name.dropFirst(kafkaPropertyEnvironmentPrefix.count).lowercased()
                    .replacingOccurrences(of: "_", with: ".")
                return librdkafkaProperties.contains(property)
                    ? nil : "librdkafka property '\(property)' is not in the allow-list of real property names"
            }
            if ConfigurationKey.all.contains(where: { $0.environmentName == name }) { return nil }
            return "no configuration key has the environment name \(name)"
        case .file, .flag:
            let key = setting.name
            if key.hasPrefix(ConfigurationKey.kafkaPropertyPrefix) {
                let property = String(key.dropFirst(ConfigurationKey.kafkaPropertyPrefix.count))
                return librdkafkaProperties.contains(property)
                    ? nil : "librdkafka property '\(property)' is not in the allow-list of real property names"
            }
            guard ConfigurationValues.isKnown(key), ConfigurationKey.all.contains(where: { $0.name == key }) else {
                return "'\(key)' is not a configuration key"
            }
            return nil
        }
    }

    /// Every setting with a problem, described for a failure message.
    static func problems(_ settings: [ConfigurationSetting]) -> [String] {
        settings.compactMap { setting in problem(setting).map { "\(setting): \($0)" } }
    }

    // MARK: Collecting settings

    /// The keys of a config file's `key = value` lines (`#` comments and blank lines skipped).
    static func fileSettings(_ text: String, source: String) -> [ConfigurationSetting] {
        var settings: [ConfigurationSetting] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let key =
                line.split(separator: "=", maxSplits: 1).first.map {
                    $0.trimmingCharacters(in: .whitespaces)
                } ?? line
            settings.append(.init(name: key, form: .file, source: "\(source) line \(number + 1)"))
        }
        return settings
    }

    /// The keys of `--set key=value` / `--set=key=value` arguments.
    static func flagSettings(_ arguments: [String], source: String) -> [ConfigurationSetting] {
        var settings: [ConfigurationSetting] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            var pair: String?
            if argument == "--set", index + 1 < arguments.count {
                pair = arguments[index + 1]
                index += 1
            } else if argument.hasPrefix("--set=") {
                pair = String(argument.dropFirst("--set=".count))
            }
            if let pair {
                let key = pair.split(separator: "=", maxSplits: 1).first.map(String.init) ?? pair
                settings.append(.init(name: key, form: .flag, source: source))
            }
            index += 1
        }
        return settings
    }

    /// Settings anywhere in a parsed YAML document (compose file or Kubernetes manifest):
    /// - `environment:` mappings or `NAME=value` lists (compose) and `env:` lists of `name:` (Kubernetes)
    ///   → environment names starting with `AVATAR_`;
    /// - `command:`, `args:` and `entrypoint:` lists or strings → `--set` flags;
    /// - ConfigMap `data:` entries named `*.conf` → config-file lines.
    static func yamlSettings(_ node: Any, source: String, path: String = "") -> [ConfigurationSetting] {
        var settings: [ConfigurationSetting] = []
        if let list = node as? [Any] {
            for (index, element) in list.enumerated() {
                settings += yamlSettings(element, source: source, path: "\(path)[\(index)]")
            }
            return settings
        }
        guard let mapping = node as? [String: Any] else { return [] }
        for (key, value) in mapping.sorted(by: { $0.key < $1.key }) {
            let here = path.isEmpty ? key : "\(path).\(key)"
            switch key {
            case "environment":
                settings += environmentNames(composeEnvironment: value)
                    .map { .init(name: $0, form: .environment, source: "\(source) \(here)") }
            case "env":
                for (index, entry) in ((value as? [Any]) ?? []).enumerated() {
                    if let name = (entry as? [String: Any])?.string("name"), name.hasPrefix(environmentPrefix) {
                        settings.append(.init(name: name, form: .environment, source: "\(source) \(here)[\(index)]"))
                    }
                }
            case "command", "args", "entrypoint":
                settings += flagSettings(words(value), source: "\(source) \(here)")
            default:
                break
            }
            if key == "data", mapping.string("kind") == "ConfigMap", let data = value as? [String: Any] {
                for (name, content) in data.sorted(by: { $0.key < $1.key }) where name.hasSuffix(".conf") {
                    settings += fileSettings(scalarText(content) ?? "", source: "\(source) \(here).\(name)")
                }
            }
            if !(value is String) {
                settings += yamlSettings(value, source: source, path: here)
            }
        }
        return settings
    }

    /// The `AVATAR_*` names of a compose `environment:` (a mapping or a list of `NAME=value`).
    static func environmentNames(composeEnvironment value: Any) -> [String] {
        let names: [String]
        if let mapping = value as? [String: Any] {
            names = Array(mapping.keys)
        } else if let list = value as? [Any] {
            names = list.compactMap(scalarText).map { String($0.split(separator: "=", maxSplits: 1).first ?? "") }
        } else {
            names = []
        }
        return names.filter { $0.hasPrefix(environmentPrefix) }.sorted()
    }

    /// The words of a command given as a list or as one shell-like string.
    static func words(_ value: Any) -> [String] {
        if let list = value as? [Any] {
            return list.compactMap(scalarText).flatMap { $0.split(separator: " ").map(String.init) }
        }
        return scalarText(value).map { $0.split(separator: " ").map(String.init) } ?? []
    }

    /// Settings in a Dockerfile: `ENV AVATAR_*` names, `--set` in `CMD`/`ENTRYPOINT`/`RUN`.
    static func dockerfileSettings(_ dockerfile: Dockerfile, source: String) -> [ConfigurationSetting] {
        var settings: [ConfigurationSetting] = []
        for instruction in dockerfile.instructions {
            let place = "\(source) line \(instruction.line)"
            switch instruction.keyword {
            case "ENV":
                settings += Dockerfile.environmentNames(instruction.arguments)
                    .filter { $0.hasPrefix(environmentPrefix) }
                    .map { .init(name: $0, form: .environment, source: place) }
            case "CMD", "ENTRYPOINT", "RUN":
                let words =
                    Dockerfile.execForm(instruction.arguments)
                    ?? instruction.arguments.split(separator: " ").map(String.init)
                settings += flagSettings(words, source: place)
            default:
                break
            }
        }
        return settings
    }

    /// A net under the structured readers: every `AVATAR_NAME` and `kafka.property.name` token
    /// anywhere in a text (comments, scripts, shell strings), as settings to check.
    static func mentionedSettings(_ text: String, source: String) -> [ConfigurationSetting] {
        var settings: [ConfigurationSetting] = []
        let range = NSRange(text.startIndex..., in: text)
        let environment = try! NSRegularExpression(pattern: "AVATAR_[A-Z0-9_]*[A-Z0-9]")
        for match in environment.matches(in: text, range: range) {
            guard let found = Range(match.range, in: text) else { continue }
            settings.append(.init(name: String(text[found]), form: .environment, source: "\(source) (mentioned)"))
        }
        let property = try! NSRegularExpression(pattern: "kafka\\.property\\.[a-z0-9.]*[a-z0-9]")
        for match in property.matches(in: text, range: range) {
            guard let found = Range(match.range, in: text) else { continue }
            settings.append(.init(name: String(text[found]), form: .file, source: "\(source) (mentioned)"))
        }
        return settings
    }
}
