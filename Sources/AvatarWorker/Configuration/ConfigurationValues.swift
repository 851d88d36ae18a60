import Configuration
import Foundation

/// The worker's configuration (docs/ARCHITECTURE.md §5, reference in docs/CONFIGURATION.md), read through
/// swift-configuration. Sources, strongest first: flags (`--set key=value`), the environment
/// (`AVATAR_SECTION_NAME`, or `AVATAR_SECTION_NAME_FILE` naming a file that holds the value), a secrets
/// directory (one file per key, named by the key, as Kubernetes mounts a Secret), a config file
/// (`key = value` lines), then each key's default, which `ConfigurationKey` states (and nothing else restates).
///
/// Unknown keys in flags, files and the secrets directory, and unknown `AVATAR_*` variables, are refused with
/// the nearest known name (a typo must not silently fall back to a default); librdkafka properties pass through
/// under `kafka.property.`.
public struct ConfigurationValues: Sendable {
    private let reader: ConfigReader
    /// librdkafka properties passed through (`kafka.property.*`), without the prefix.
    public let kafkaProperties: [String: String]
    /// Where each key that is set got its value (`flags`, `environment AVATAR_…`, …), by key name.
    public let sources: [String: String]
    /// Everything wrong with the sources (unknown names, malformed lines, unreadable files). The throwing
    /// initialiser refuses any; `inspect` keeps them for `config --check`.
    public let problems: [String]

    public struct Error: Swift.Error, CustomStringConvertible {
        public var description: String
    }

    /// The variable naming a config file (`--config`).
    public static let configFileVariable = "AVATAR_CONFIG"
    /// The variable naming a secrets directory (`--secrets-dir`).
    public static let secretsDirectoryVariable = "AVATAR_SECRETS_DIR"
    /// A variable `AVATAR_X_FILE` names a file holding the value of `AVATAR_X`.
    public static let fileVariableSuffix = "_FILE"
    /// The variable naming the test seams a debug build's worker installs (docs/ARCHITECTURE.md §3, "Test seams").
    public static let testSeamsVariable = "AVATAR_TEST_SEAMS"
    /// Whether this build has test seams, and so reads `testSeamsVariable`: a release build refuses it as unknown.
    #if AVATAR_TEST_SEAMS
        public static let buildHasTestSeams = true
    #else
        public static let buildHasTestSeams = false
    #endif
    /// `AVATAR_` variables that are not configuration but reach the workers the test harness starts (in their
    /// inherited environment), exactly these; any other is refused, so a look-alike of a real key
    /// (`AVATAR_S3_SECRET_KEY`, an input of scripts/start-seaweedfs.sh) cannot pass for one. A test checks the list
    /// against the scripts.
    static let harnessVariables: Set<String> = [
        // scripts/services.sh's `.run/env`, which scripts/test.sh, demo.sh and the bench scripts export.
        "AVATAR_TEST_DATABASE_URL", "AVATAR_TEST_KAFKA_BROKERS", "AVATAR_TEST_PYTHON", "AVATAR_TEST_CORPUS",
        "AVATAR_TEST_S3_ENDPOINT", "AVATAR_TEST_S3_REGION", "AVATAR_TEST_S3_BUCKET", "AVATAR_TEST_S3_ACCESS_KEY",
        "AVATAR_TEST_S3_SECRET_KEY", "AVATAR_TEST_TOMBSTONE_KEY",
        // What scripts/test.sh, chaos.sh and the bench scripts export for services.sh and the tests.
        "AVATAR_RUN_DIR", "AVATAR_PG_PORT", "AVATAR_KAFKA_PORT", "AVATAR_S3_PORT", "AVATAR_KAFKA_DURABLE",
        "AVATAR_REQUIRE_SERVICES",
        // The test targets' own settings (Tests/TestEnvironment, WorkerHarness).
        "AVATAR_TEST_LOG_LEVEL", "AVATAR_CROPPER_BINARY",
    ]

    /// Merges the sources and refuses any problem. `flags` are `key=value` pairs (`--set`); `file` is the
    /// text of a config file with one `key = value` per line and `#` comments; `secretsDirectory` is a
    /// folder of files named by key.
    public init(
        flags: [String] = [], environment: [String: String] = [:], file: String? = nil,
        secretsDirectory: String? = nil
    ) throws {
        self.init(loading: flags, environment, file, secretsDirectory)
        guard problems.isEmpty else { throw Error(description: problems.joined(separator: "\n")) }
    }

    /// Merges the sources like the throwing initialiser, keeping every problem in `problems`.
    public static func inspect(
        flags: [String] = [], environment: [String: String] = [:], file: String? = nil,
        secretsDirectory: String? = nil
    ) -> ConfigurationValues {
        ConfigurationValues(loading: flags, environment, file, secretsDirectory)
    }

    private init(loading flags: [String], _ environment: [String: String], _ file: String?, _ directory: String?) {
        var problems: [String] = []
        let filePairs = file.map { Self.fileLines($0, problems: &problems) } ?? []
        var flagPairs: [(String, String)] = []
        for flag in flags {
            guard let pair = Self.pair(flag) else {
                problems.append("--set expects key=value, got '\(flag)'")
                continue
            }
            flagPairs.append(pair)
        }
        for (key, _) in filePairs where !Self.isKnown(key) {
            problems.append("unknown configuration key '\(key)' in the config file\(Self.suggestion(key))")
        }
        for (key, _) in flagPairs where !Self.isKnown(key) {
            problems.append("unknown configuration key '\(key)' in --set\(Self.suggestion(key))")
        }
        let directoryPairs = directory.map { Self.directoryPairs($0, problems: &problems) } ?? []
        let environmentPairs = Self.environmentPairs(environment, problems: &problems)

        let layers: [(name: String, pairs: [(String, String)])] = [
            ("flags", flagPairs), ("environment", environmentPairs), ("secrets directory", directoryPairs),
            ("config file", filePairs),
        ]
        var sources: [String: String] = [:]
        var properties: [String: String] = [:]
        // Weakest first, so a stronger source overwrites.
        for layer in layers.reversed() {
            for (key, value) in layer.pairs where Self.isKnown(key) {
                sources[key] = layer.name
                if key.hasPrefix(ConfigurationKey.kafkaPropertyPrefix) {
                    properties[String(key.dropFirst(ConfigurationKey.kafkaPropertyPrefix.count))] = value
                }
            }
        }
        kafkaProperties = properties
        self.sources = sources
        self.problems = problems
        reader = ConfigReader(providers: layers.map { Self.provider($0.name, $0.pairs) })
    }

    public static func isKnown(_ key: String) -> Bool {
        key.hasPrefix(ConfigurationKey.kafkaPropertyPrefix)
            || ConfigurationKey.all.contains { $0.name == key || $0.deprecatedNames.contains(key) }
    }

    /// Whether the worker reads this `AVATAR_*` variable (a key, its `_FILE` form, a librdkafka property, the
    /// config file or secrets directory, the test seams in a build that has them) or leaves it to the test harness;
    /// nil when it does, else why not, with the variable it was probably meant to be. `testSeams` is whether the
    /// build has test seams (a parameter so the tests can ask as a release build).
    public static func environmentProblem(_ name: String, testSeams: Bool = buildHasTestSeams) -> String? {
        if name == configFileVariable || name == secretsDirectoryVariable || harnessVariables.contains(name)
            || (testSeams && name == testSeamsVariable)
        {
            return nil
        }
        if environmentKey(name) != nil { return nil }
        if name.hasSuffix(fileVariableSuffix), environmentKey(String(name.dropLast(fileVariableSuffix.count))) != nil {
            return nil
        }
        let keys = ConfigurationKey.all.map(\.environmentName)
        let known = keys + keys.map { $0 + fileVariableSuffix } + [configFileVariable, secretsDirectoryVariable]
        let meant = nearest(to: name, among: known) ?? nearest(holdingWordsOf: name, among: keys)
        return "unknown environment variable \(name)\(meant.map { "; did you mean \($0)?" } ?? "")"
    }

    /// The key an `AVATAR_*` variable sets, or nil.
    static func environmentKey(_ name: String) -> String? {
        if let key = ConfigurationKey.all.first(where: { $0.environmentName == name }) { return key.name }
        if let deprecated = ConfigurationKey.all.flatMap(\.deprecatedNames).first(where: {
            ConfigurationKey.environmentName(for: $0) == name
        }) {
            return deprecated
        }
        let prefix = ConfigurationKey.kafkaPropertyEnvironmentPrefix
        // `AVATAR_KAFKA_PROPERTY_SASL_PASSWORD_FILE` names a file (no librdkafka property ends in `.file`).
        guard name.hasPrefix(prefix), name.count > prefix.count, !name.hasSuffix(fileVariableSuffix) else {
            return nil
        }
        let property = name.dropFirst(prefix.count).lowercased().replacingOccurrences(of: "_", with: ".")
        return ConfigurationKey.kafkaPropertyPrefix + property
    }

    /// Whether a value is a secret: a key declared secret, or a librdkafka property holding a password,
    /// a secret or a private key.
    public static func isSecret(_ key: String) -> Bool {
        if let declared = ConfigurationKey.all.first(where: { $0.name == key }) { return declared.isSecret }
        guard key.hasPrefix(ConfigurationKey.kafkaPropertyPrefix) else { return false }
        return ["password", "secret", "key.pem", "oauthbearer.config"].contains { key.contains($0) }
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
        for (key, value) in pairs
        where ConfigurationKey.all.contains(where: { $0.name == key || $0.deprecatedNames.contains(key) }) {
            values[AbsoluteConfigKey(ConfigKey(key))] = ConfigValue(.string(value), isSecret: isSecret(key))
        }
        return InMemoryProvider(name: name, values: values)
    }

    /// `AVATAR_*` variables as (key, value); a `_FILE` variable's file is read here.
    private static func environmentPairs(_ environment: [String: String], problems: inout [String]) -> [(
        String, String
    )] {
        var pairs: [(String, String)] = []
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) where name.hasPrefix("AVATAR_") {
            if let problem = environmentProblem(name) {
                problems.append(problem)
                continue
            }
            if let key = environmentKey(name) {
                pairs.append((key, value))
                continue
            }
            let base = String(name.dropLast(fileVariableSuffix.count))
            guard name.hasSuffix(fileVariableSuffix), let key = environmentKey(base) else { continue }
            if environment[base] != nil {
                problems.append("both \(base) and \(name) are set: set one")
                continue
            }
            if let text = secretFile(value, naming: name, problems: &problems) { pairs.append((key, text)) }
        }
        return pairs
    }

    /// One file per key, named by the key (`database.url`); dot-files (Kubernetes' `..data`) are skipped.
    private static func directoryPairs(_ directory: String, problems: inout [String]) -> [(String, String)] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else {
            problems.append("cannot read the secrets directory \(directory)")
            return []
        }
        var pairs: [(String, String)] = []
        for name in names.sorted() where !name.hasPrefix(".") {
            guard isKnown(name) else {
                problems.append("unknown configuration key '\(name)' in the secrets directory\(suggestion(name))")
                continue
            }
            let path = URL(fileURLWithPath: directory).appendingPathComponent(name).path
            if let text = secretFile(path, naming: "\(directory)/\(name)", problems: &problems) {
                pairs.append((name, text))
            }
        }
        return pairs
    }

    /// A file's text without the line break an editor or `echo` leaves at its end.
    private static func secretFile(_ path: String, naming source: String, problems: inout [String]) -> String? {
        guard let data = FileManager.default.contents(atPath: path), var text = String(data: data, encoding: .utf8)
        else {
            problems.append("cannot read \(path) (from \(source))")
            return nil
        }
        while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
        return text
    }

    private static func fileLines(_ file: String, problems: inout [String]) -> [(String, String)] {
        var pairs: [(String, String)] = []
        for (number, line) in file.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty || text.hasPrefix("#") { continue }
            guard let pair = pair(text) else {
                problems.append("config file line \(number + 1): expected key = value")
                continue
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

    // MARK: - Nearest names

    private static func suggestion(_ key: String) -> String {
        nearest(to: key, among: ConfigurationKey.all.map(\.name)).map { "; did you mean \($0)?" } ?? ""
    }

    /// The candidate with the fewest single-character edits from `name`, if it is close enough to be a typo.
    static func nearest(to name: String, among candidates: [String]) -> String? {
        let scored = candidates.map { ($0, editDistance(name.lowercased(), $0.lowercased())) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= max(3, name.count / 3) else { return nil }
        return best.0
    }

    /// The candidate, fewest edits first, whose words (split at `_`) hold all of `name`'s in order: a name guessed
    /// from another tool's conventions rather than mistyped (`AVATAR_S3_SECRET_KEY`,
    /// `AVATAR_STORAGE_S3_SECRET_ACCESS_KEY`), too far from any key for `nearest(to:among:)`.
    static func nearest(holdingWordsOf name: String, among candidates: [String]) -> String? {
        let words = name.uppercased().split(separator: "_").dropFirst()
        guard !words.isEmpty else { return nil }
        let holding = candidates.filter { candidate in
            var wanted = words[...]
            for word in candidate.split(separator: "_") where word == wanted.first { wanted.removeFirst() }
            return wanted.isEmpty
        }
        return holding.min { editDistance(name, $0) < editDistance(name, $1) }
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }
}
