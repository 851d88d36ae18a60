import Foundation
import Messaging

/// Whether the consumer is in a state to work (`/readyz` check `kafka`): not shutting down,
/// partitions assigned, librdkafka statistics recent (the poll thread is alive and polling) and
/// at least one broker connection up in them.
public enum ConsumerReadiness {
    public static func evaluate(
        draining: Bool, assignedPartitions: Int, statistics: KafkaStatistics?, statisticsInterval: Duration,
        now: Date = Date()
    ) -> ReadinessCheck.Status {
        if draining { return .failed("draining: shutting down") }
        if assignedPartitions <= 0 { return .failed("no partitions assigned") }
        guard let statistics else { return .failed("no librdkafka statistics yet") }
        // Statistics carry whole seconds; allow three intervals plus that rounding.
        let maximumAge = 3 * statisticsInterval.seconds + 1
        if let time = statistics.time, now.timeIntervalSince(time) > maximumAge {
            return .failed("librdkafka statistics are \(Int(now.timeIntervalSince(time))) s old")
        }
        guard statistics.anyBrokerUp else { return .failed("no broker connection up") }
        return .ok("\(assignedPartitions) partition(s) assigned, broker connection up")
    }
}

extension AvatarWorkerService {
    /// The `kafka` check of `/readyz` (`ConsumerReadiness`): never blocks.
    public func consumerReadiness() -> ReadinessCheck.Status {
        let interval =
            settings.kafka.properties["statistics.interval.ms"].flatMap(Int.init)
            .map { Duration.milliseconds($0) } ?? KafkaConsumer.defaultStatisticsInterval
        let (draining, assigned) = flow.withLock { ($0.stopping, $0.partitionsAssigned) }
        return ConsumerReadiness.evaluate(
            draining: draining, assignedPartitions: assigned, statistics: consumer.latestStatistics,
            statisticsInterval: interval)
    }
}
