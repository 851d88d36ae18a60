import Database
import Imaging
import Logging
import Messaging
import Metrics

/// Which build is running: the project's version and the versions of the C libraries it runs on, each read
/// from the loaded library through its wrapper module. `avatar-cropper --version` prints it, the worker
/// exports it as `avatar_build_info` and names it in its start log.
public struct BuildInfo: Sendable, Equatable {
    /// The project's version (stated here only).
    public static let projectVersion = "0.17.0"

    public struct Library: Sendable, Equatable {
        /// The name as a metric label and a log field: `libvips`, `librdkafka`, `libjpeg_turbo`, `libpq`.
        public var name: String
        public var version: String
    }

    public var version: String
    public var libraries: [Library]

    /// This process's build, with the versions of the libraries as loaded (read once).
    public static let current: BuildInfo = {
        BuildInfo(
            version: projectVersion,
            libraries: [
                Library(name: "libvips", version: Vips.version),
                Library(name: "librdkafka", version: KafkaLibrary.version),
                Library(name: "libjpeg_turbo", version: LibJPEG.version),
                Library(name: "libpq", version: LibPQ.version),
            ])
    }()

    /// What `--version` prints: `avatar-cropper 0.17.0`, then one `name version` line per library.
    public var versionText: String {
        (["avatar-cropper \(version)"] + libraries.map { "\($0.name) \($0.version)" }).joined(separator: "\n")
    }

    /// The labels of `avatar_build_info`: `version` and one per library.
    public var labels: [(String, String)] {
        [("version", version)] + libraries.map { ($0.name, $0.version) }
    }

    /// Sets the `avatar_build_info` gauge of these labels to 1 (Prometheus' build-info convention: join on it
    /// to see which build a series came from).
    public func record() {
        Gauge(label: MetricName.buildInfo, dimensions: labels).record(1)
    }

    /// The start log's fields: `version`, `libraries` (name: version) and `configuration`, the effective
    /// non-secret settings (`ConfigurationValues.effectiveSettings`).
    public func startMetadata(_ values: ConfigurationValues) -> Logger.Metadata {
        var libraries: Logger.Metadata = [:]
        for library in self.libraries { libraries[library.name] = .string(library.version) }
        var configuration: Logger.Metadata = [:]
        for setting in values.effectiveSettings { configuration[setting.key] = .string(setting.value) }
        return [
            "version": .string(version), "libraries": .dictionary(libraries),
            "configuration": .dictionary(configuration),
        ]
    }
}
