import Foundation
import Logging
import Metrics
import Synchronization

/// The poll loop, rebalance handling and callback state of one `KafkaConsumer`.
///
/// `@unchecked Sendable`: `logger` is set once during `KafkaConsumer.init`, before any poll; all other
/// mutable state is inside a `Mutex`.
final class ConsumerEvents: RDKafkaEventHandler, @unchecked Sendable {
    private struct State {
        weak var owner: KafkaConsumer?
        var delegate: (any KafkaConsumerDelegate)?
        var started = false
        var closing = false
        var fetchingStopped = false
        /// The partitions taken in assign callbacks and not yet given up: what the statistics report lag
        /// for. Kept here rather than asked of librdkafka (`rd_kafka_assignment`) from inside the statistics
        /// callback: that call waits on librdkafka's main thread, which during `rd_kafka_consumer_close`
        /// waits on this one, and the worker's shutdown hung there.
        var assigned: Set<TopicPartition> = []
    }

    var logger: Logger
    let metrics: KafkaMetricsRecorder
    private let state = Mutex(State())
    let statistics = Mutex<KafkaStatistics?>(nil)
    private let lagGauges = Mutex<[TopicPartition: Gauge]>([:])

    init(logger: Logger, metrics: KafkaMetricsRecorder) {
        self.logger = logger
        self.metrics = metrics
    }

    // MARK: Lifecycle

    /// Returns false when already started or closing.
    func start(owner: KafkaConsumer, delegate: any KafkaConsumerDelegate) -> Bool {
        state.withLock { state in
            guard !state.started, !state.closing else { return false }
            state.started = true
            state.owner = owner
            state.delegate = delegate
            return true
        }
    }

    /// Returns false when closing had already begun.
    func beginClosing() -> Bool {
        state.withLock { state in
            defer { state.closing = true }
            return !state.closing
        }
    }

    /// A reader's partitions, taken without a rebalance: what the statistics report lag for.
    func assigned(_ partitions: [TopicPartition]) {
        state.withLock { $0.assigned.formUnion(partitions) }
    }

    func stopFetching() {
        state.withLock { $0.fetchingStopped = true }
    }

    private var session: (owner: KafkaConsumer, delegate: any KafkaConsumerDelegate)? {
        state.withLock { state in
            guard let owner = state.owner, let delegate = state.delegate else { return nil }
            return (owner, delegate)
        }
    }

    /// Runs on the poll thread until `close` begins, then leaves the group and destroys the client.
    func pollLoop(client: RDKafkaClient) {
        logger.debug("Consumer poll thread started")
        while !state.withLock({ $0.closing }) {
            let polled: RDKafkaPolled?
            do {
                // Rebalance, log, error and statistics callbacks run inside this call, on this thread.
                polled = try client.pollConsumer(timeout: .milliseconds(100))
            } catch {
                break  // destroyed
            }
            switch polled {
            case .message(let message):
                if let session {
                    session.delegate.consumer(session.owner, received: message)
                }
            case .error(let error, let topic, let partition):
                handleConsumeError(error, topic: topic, partition: partition)
            case nil:
                continue
            }
        }
        leaveGroup(client: client)
        state.withLock { $0.delegate = nil }
        client.destroy()
        logger.debug("Consumer poll thread finished")
    }

    /// Closes the consumer: revokes the assignment (rebalance callback, on this thread) and
    /// leaves the group.
    func leaveGroup(client: RDKafkaClient) {
        do {
            try client.closeConsumer()
            logger.info("Consumer left the group")
        } catch {
            logger.warning("Consumer did not leave the group cleanly", metadata: [KafkaLogKeys.error: "\(error)"])
        }
    }

    private func handleConsumeError(_ error: KafkaError, topic: String?, partition: Int32) {
        var metadata: Logger.Metadata = [KafkaLogKeys.error: "\(error)"]
        if let topic {
            metadata[KafkaLogKeys.topic] = "\(topic)"
            metadata[KafkaLogKeys.partition] = "\(partition)"
        }
        metrics.clientError(error.errorName)
        logger.warning("Consumer error", metadata: metadata)
    }

    // MARK: Rebalance

    func handleRebalance(_ rebalance: RDKafkaRebalance) {
        let tps = rebalance.partitions
        var metadata: Logger.Metadata = [
            KafkaLogKeys.partitions: "\(tps.map(\.description))",
            KafkaLogKeys.protocolName: "\(rebalance.protocolName)",
        ]
        switch rebalance.kind {
        case .assign:
            countRebalance("assign")
            do {
                try rebalance.take()
            } catch {
                metadata[KafkaLogKeys.error] = "\(error)"
                logger.error("Could not take the assigned partitions", metadata: metadata)
                return
            }
            // An assignment starts afresh: librdkafka keeps an application pause across a revoke and
            // re-assignment, and the delegate dropped its backpressure state for these partitions when they
            // were revoked, so nothing would ever resume them. Once fetching has stopped, they stay paused.
            let fetchingStopped = state.withLock { state in
                state.assigned.formUnion(tps)
                return state.fetchingStopped
            }
            try? rebalance.setPaused(fetchingStopped, tps)
            logger.info("Partitions assigned", metadata: metadata)
            if let session {
                session.delegate.consumer(session.owner, assigned: tps)
            }

        case .revoke(let lost):
            countRebalance(lost ? "lost" : "revoke")
            logger.info(lost ? "Partitions lost" : "Partitions being revoked", metadata: metadata)
            let offsets = session.map { $0.delegate.consumer($0.owner, revoking: tps) } ?? [:]
            if lost {
                if !offsets.isEmpty {
                    logger.warning("Assignment lost: offsets not committed", metadata: metadata)
                }
            } else if !offsets.isEmpty {
                do {
                    try rebalance.commit(offsets)
                    logger.debug("Committed before revoke", metadata: metadata)
                } catch {
                    metrics.commitFailure(error, mode: "rebalance")
                    metadata[KafkaLogKeys.error] = "\(error)"
                    logger.error("Commit before revoke failed", metadata: metadata)
                }
            }
            release(tps)
            do {
                try rebalance.giveUp()
            } catch {
                metadata[KafkaLogKeys.error] = "\(error)"
                logger.error("Could not give up the revoked partitions", metadata: metadata)
            }

        case .failed(let error):
            countRebalance("error")
            metadata[KafkaLogKeys.error] = "\(error)"
            logger.error("Rebalance failed; unassigning", metadata: metadata)
            if let session {
                _ = session.delegate.consumer(session.owner, revoking: tps)
            }
            release(tps)
            do {
                try rebalance.unassignAll()
            } catch {
                logger.error("Could not unassign after a failed rebalance", metadata: [KafkaLogKeys.error: "\(error)"])
            }
        }
    }

    private func countRebalance(_ kind: String) {
        metrics.rebalance(kind)
    }

    // MARK: Statistics

    func handleStatistics(json: String) {
        let parsed: KafkaStatistics
        do {
            parsed = try KafkaStatistics(json: json)
        } catch {
            logger.debug("Unparseable librdkafka statistics", metadata: [KafkaLogKeys.error: "\(error)"])
            return
        }
        statistics.withLock { $0 = parsed }
        for tp in state.withLock({ $0.assigned }) {
            guard let lag = parsed.partitions[tp]?.consumerLag else { continue }
            lagGauge(tp).record(lag)
        }
        if let session {
            session.delegate.consumer(session.owner, statistics: parsed)
        }
    }

    private func lagGauge(_ tp: TopicPartition) -> Gauge {
        lagGauges.withLock { gauges in
            if let gauge = gauges[tp] { return gauge }
            let gauge = metrics.consumerLag(tp)
            gauges[tp] = gauge
            return gauge
        }
    }

    /// Partitions this consumer gave up: no longer counted as assigned, and they report no lag (another
    /// member reports it).
    private func release(_ tps: [TopicPartition]) {
        state.withLock { $0.assigned.subtract(tps) }
        for tp in tps where lagGauges.withLock({ $0[tp] != nil }) {
            lagGauge(tp).record(0)
        }
    }

    // MARK: Commits

    /// Commits `offsets` and waits; failures are counted under `mode`.
    func commit(_ client: RDKafkaClient, _ offsets: [TopicPartition: Int64], mode: String) throws {
        do {
            try client.commit(offsets)
        } catch {
            metrics.commitFailure(error, mode: mode)
            throw error
        }
    }

    func handleAsyncCommitFailure(_ error: KafkaError) {
        metrics.commitFailure(error, mode: "async")
        logger.warning("Asynchronous commit failed", metadata: [KafkaLogKeys.error: "\(error)"])
    }
}
