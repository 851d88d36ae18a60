import Foundation
import Testing

@testable import AvatarWorker

@Suite("Build info and the start log's configuration")
struct BuildInfoTests {
    @Test("each library's version is read from the library (digits and dots)")
    func versions() {
        let build = BuildInfo.current
        #expect(build.version == BuildInfo.projectVersion)
        #expect(build.libraries.map(\.name) == ["libvips", "librdkafka", "libjpeg_turbo", "libpq"])
        for library in build.libraries {
            #expect(library.version.wholeMatch(of: /\d+(\.\d+)+/) != nil, "\(library.name) \(library.version)")
        }
        #expect(build.labels.map(\.0) == ["version", "libvips", "librdkafka", "libjpeg_turbo", "libpq"])
        #expect(build.versionText.split(separator: "\n").first == "avatar-cropper \(BuildInfo.projectVersion)")
    }

    @Test("the effective configuration lists set and default values and leaves secrets out")
    func effectiveSettings() throws {
        let values = try ConfigurationValues(
            flags: [
                "database.url=postgresql://worker:hunter2@db/avatars", "storage.s3.secret-access-key=s3cret",
                "kafka.property.sasl.password=kafka-pass", "kafka.property.client.id=w1",
                "kafka.property.ssl.key.password=key-pass",
            ],
            environment: ["AVATAR_WORKER_RENDER_SLOTS": "3"])
        let settings = Dictionary(values.effectiveSettings.map { ($0.key, $0.value) }) { first, _ in first }
        #expect(settings["worker.render-slots"] == "3")
        #expect(settings["kafka.topic.requests"] == ConfigurationKey.topicRequests.defaultValue)
        #expect(settings["kafka.property.client.id"] == "w1")
        #expect(settings["database.url"] == "<redacted>")
        #expect(settings["storage.s3.secret-access-key"] == "<redacted>")
        #expect(settings["kafka.property.sasl.password"] == "<redacted>")
        #expect(settings["kafka.property.ssl.key.password"] == "<redacted>")
        #expect(settings["storage.s3.access-key-id"] == nil, "unset keys without a default are left out")
        let text = "\(values.effectiveSettings)"
        for secret in ["hunter2", "s3cret", "kafka-pass", "key-pass"] {
            #expect(!text.contains(secret))
        }
        let metadata = BuildInfo.current.startMetadata(values)
        #expect(!"\(metadata)".contains("hunter2"))
    }
}
