import ArgumentParser
import AvatarWorker
import Messaging

struct TopicsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "topics",
        abstract: "Create the requests, results, metrics and DLQ topics if they do not exist.",
        discussion: """
            Partitions bound how many workers share the load: a consumer group spreads partitions over workers. \
            The results topic is created compacted as well as expired (cleanup.policy=compact,delete), so a \
            forget's null-value record deletes the user's results; a topic that exists is left as it is \
            (docs/DATA.md, window 5, says what to set on it).
            """)

    @OptionGroup var config: ConfigOptions

    @Option(help: "Partitions of the requests topic (results, metrics and DLQ get the same).")
    var partitions: Int32 = 6

    func run() throws {
        let values = try config.values()
        let names = try [ConfigurationKey.topicRequests, .topicResults, .topicMetrics, .topicDLQ].map(values.require)
        try KafkaAdmin.createTopics(
            names, partitions: partitions, configs: try WorkerFactory.eventTopics(values).configs,
            configuration: try WorkerFactory.kafkaConfiguration(values), timeout: .seconds(30))
        for name in names { print("topic \(name) ready") }
    }
}
