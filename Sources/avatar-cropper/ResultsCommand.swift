import ArgumentParser
import AvatarWorker
import CropProtocol
import Foundation
import Logging
import Messaging
import Synchronization

struct ResultsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "results",
        abstract: "Print result events from the results topic as a table or JSON lines.",
        discussion: """
            Starts at the oldest result each partition still holds, joining no consumer group (a fixed \
            assignment; its group id, avatar-cropper-results-<uuid>, is never joined) and committing nothing, so \
            it never disturbs other readers. So \
            --count 1 prints the oldest retained result, not the newest: to follow a job you just enqueued, pass \
            the job id `enqueue` printed with --job-id.
            """)

    @OptionGroup var config: ConfigOptions

    @Option(help: "Stop after this many results.") var count: Int?
    @Option(help: "Stop after this many seconds.") var timeout: Double = 60
    @Option(name: .customLong("job-id"), help: "Only these jobs (repeatable); stops when all were seen.")
    var jobIDs: [String] = []
    @Flag(help: "JSON lines (protobuf JSON mapping) instead of a table.") var json = false

    func run() async throws {
        let values = try config.values()
        var logger = try makeLogger("avatar-cropper.results", values: values)
        logger.logLevel = max(logger.logLevel, .warning)
        var kafka = try WorkerFactory.kafkaConfiguration(values)
        kafka.properties["auto.offset.reset"] = "earliest"
        let start = try KafkaAdmin.startOfEveryPartition(
            of: [try values.require(.topicResults)], configuration: kafka, timeout: .seconds(30), logger: logger)
        let consumer = try KafkaConsumer(
            configuration: kafka, reading: start,
            groupID: "avatar-cropper-results-\(UUID().uuidString.lowercased())", logger: logger)
        let collector = ResultCollector()
        consumer.run(delegate: collector)
        defer { consumer.close() }

        let wanted = Set(jobIDs)
        var seen = Set<String>()
        var printed = 0
        if !json { print(ResultRow.header) }
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while ContinuousClock.now < deadline {
            for message in collector.drain() {
                // A forget's null value for its user's key (docs/DATA.md, window 5) is no result.
                guard !message.valueIsNull,
                    let result = try? CropCodec.decode(
                        Avatar_Crop_V1_CropResult.self, from: message.value, format: .protobuf)
                else { continue }
                if !wanted.isEmpty && !wanted.contains(result.jobID) { continue }
                seen.insert(result.jobID)
                printed += 1
                if json {
                    print(String(decoding: try CropCodec.encode(result, format: .json), as: UTF8.self))
                } else {
                    print(ResultRow(result).line)
                }
            }
            if let count, printed >= count { return }
            if !wanted.isEmpty && seen.isSuperset(of: wanted) { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        if (count != nil || !wanted.isEmpty) {
            throw ValidationError("timed out after \(printed) results")
        }
    }
}

/// Collects messages from the consumer's poll thread.
private final class ResultCollector: KafkaConsumerDelegate, Sendable {
    private let messages = Mutex<[KafkaMessage]>([])

    func drain() -> [KafkaMessage] {
        messages.withLock {
            let all = $0; $0 = []; return all
        }
    }
    func consumer(_ c: KafkaConsumer, received message: KafkaMessage) { messages.withLock { $0.append(message) } }
    func consumer(_ c: KafkaConsumer, assigned: [TopicPartition]) {}
    func consumer(_ c: KafkaConsumer, revoking: [TopicPartition]) -> [TopicPartition: Int64] { [:] }
}

/// One result as a table row.
struct ResultRow {
    static let header = pad(["job", "outcome", "s_min", "s_max", "fallback", "latency_ms", "version", "path"])

    let line: String

    init(_ result: Avatar_Crop_V1_CropResult) {
        let latency =
            result.hasRequestedAt
            ? String(format: "%.0f", (result.finishedAt.date.timeIntervalSince(result.requestedAt.date)) * 1000) : "-"
        switch result.outcome {
        case .success(let success):
            let outcome = String(describing: success.disposition).lowercased()
            line = Self.pad([
                result.jobID, outcome, Self.number(success.crop.sMin), Self.number(success.crop.sMax),
                success.fallbackUsed ? "yes" : "no", latency, "\(success.avatarVersion)", success.avatarPath,
            ])
        case .failure(let failure):
            line = Self.pad([
                result.jobID, "failed:\(failure.errorCode)", "-", "-", "-", latency, "-", failure.userMessage,
            ])
        case nil:
            line = Self.pad([result.jobID, "unknown", "-", "-", "-", latency, "-", "-"])
        }
    }

    private static func number(_ value: Double) -> String { value == 0 ? "-" : String(format: "%.3f", value) }

    private static func pad(_ columns: [String]) -> String {
        let widths = [38, 26, 7, 7, 8, 10, 7, 0]
        return zip(columns, widths).map { column, width in
            width == 0 ? column : column.padding(toLength: max(width, column.count + 1), withPad: " ", startingAt: 0)
        }.joined()
    }
}
