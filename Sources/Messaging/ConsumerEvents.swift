import Crdkafka
import Foundation
import Logging
import Metrics

/// The poll loop, rebalance handling and callback state of one `KafkaConsumer`.
///
/// `@unchecked Sendable`: `logger` is set once during `KafkaConsumer.init`, before any poll; all other
/// mutable state is inside `Locked`.
final class ConsumerEvents: RDKafkaEventHandler, @unchecked Sendable {
    private struct State {
        weak var owner: KafkaConsumer?
        var delegate: (any KafkaConsumerDelegate)?
        var started = false
        var closing = false
        var fetchingStopped = false
    }

    var logger: Logger
    let metrics: KafkaMetricsRecorder
    private let state = Locked(State())
    let statistics = Locked<KafkaStatistics?>(nil)
    private let lagGauges = Locked<[TopicPartition: Gauge]>([:])

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
            let polled: UnsafeMutablePointer<rd_kafka_message_t>?
            do {
                polled = try client.withHandle("rd_kafka_consumer_poll") { rk in
                    // Rebalance, log, error and statistics callbacks run inside this call, on this thread.
                    rd_kafka_consumer_poll(rk, 100)
                }
            } catch {
                break  // destroyed
            }
            guard let pointer = polled else { continue }
            let err = pointer.pointee.err
            let message = err == RD_KAFKA_RESP_ERR_NO_ERROR ? KafkaMessage(copying: pointer) : nil
            if message == nil {
                handleConsumeError(pointer)
            }
            rd_kafka_message_destroy(pointer)
            if let message, let session {
                session.delegate.consumer(session.owner, received: message)
            }
        }
        leaveGroup(client: client)
        state.withLock { $0.delegate = nil }
        client.destroy()
        logger.debug("Consumer poll thread finished")
    }

    /// `rd_kafka_consumer_close`: revokes the assignment (rebalance callback, on this thread) and
    /// leaves the group.
    func leaveGroup(client: RDKafkaClient) {
        do {
            try client.withHandle("rd_kafka_consumer_close") { rk in
                try rdCheck(rd_kafka_consumer_close(rk), "rd_kafka_consumer_close")
            }
            logger.info("Consumer left the group")
        } catch {
            logger.warning("Consumer did not leave the group cleanly", metadata: [KafkaLogKeys.error: "\(error)"])
        }
    }

    private func handleConsumeError(_ message: UnsafePointer<rd_kafka_message_t>) {
        let m = message.pointee
        guard m.err != RD_KAFKA_RESP_ERR__PARTITION_EOF else { return }
        let error = KafkaError(rd: m.err, operation: "rd_kafka_consumer_poll", context: .broker)
        var metadata: Logger.Metadata = [KafkaLogKeys.error: "\(error)"]
        if let rkt = m.rkt {
            metadata[KafkaLogKeys.topic] = "\(String(cString: rd_kafka_topic_name(rkt)))"
            metadata[KafkaLogKeys.partition] = "\(m.partition)"
        }
        metrics.clientError(error.errorName)
        logger.warning("Consumer error", metadata: metadata)
    }

    // MARK: Rebalance

    func handleRebalance(
        rk: OpaquePointer, err: rd_kafka_resp_err_t, partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>
    ) {
        let tps = RDKafkaTopicPartitionList.partitions(of: partitions)
        let rebalanceProtocol = String(cString: rd_kafka_rebalance_protocol(rk))
        let cooperative = rebalanceProtocol == "COOPERATIVE"
        var metadata: Logger.Metadata = [
            KafkaLogKeys.partitions: "\(tps.map(\.description))", KafkaLogKeys.protocolName: "\(rebalanceProtocol)",
        ]
        switch err {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
            countRebalance("assign")
            do {
                if cooperative {
                    try rdCheck(error: rd_kafka_incremental_assign(rk, partitions), "rd_kafka_incremental_assign")
                } else {
                    try rdCheck(rd_kafka_assign(rk, partitions), "rd_kafka_assign")
                }
            } catch {
                metadata[KafkaLogKeys.error] = "\(error)"
                logger.error("Could not take the assigned partitions", metadata: metadata)
                return
            }
            // An assignment starts afresh: librdkafka keeps an application pause across a revoke and
            // re-assignment, and the delegate dropped its backpressure state for these partitions when they
            // were revoked, so nothing would ever resume them. Once fetching has stopped, they stay paused.
            try? Self.setPaused(rk, state.withLock({ $0.fetchingStopped }), RDKafkaTopicPartitionList(tps))
            logger.info("Partitions assigned", metadata: metadata)
            if let session {
                session.delegate.consumer(session.owner, assigned: tps)
            }

        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
            let lost = rd_kafka_assignment_lost(rk) != 0
            countRebalance(lost ? "lost" : "revoke")
            logger.info(lost ? "Partitions lost" : "Partitions being revoked", metadata: metadata)
            let offsets = session.map { $0.delegate.consumer($0.owner, revoking: tps) } ?? [:]
            if lost {
                if !offsets.isEmpty {
                    logger.warning("Assignment lost: offsets not committed", metadata: metadata)
                }
            } else if !offsets.isEmpty {
                do {
                    try commitSync(rk, offsets, mode: "rebalance")
                    logger.debug("Committed before revoke", metadata: metadata)
                } catch {
                    metadata[KafkaLogKeys.error] = "\(error)"
                    logger.error("Commit before revoke failed", metadata: metadata)
                }
            }
            resetLag(tps)
            do {
                if cooperative {
                    try rdCheck(error: rd_kafka_incremental_unassign(rk, partitions), "rd_kafka_incremental_unassign")
                } else {
                    try rdCheck(rd_kafka_assign(rk, nil), "rd_kafka_assign")
                }
            } catch {
                metadata[KafkaLogKeys.error] = "\(error)"
                logger.error("Could not give up the revoked partitions", metadata: metadata)
            }

        default:
            countRebalance("error")
            metadata[KafkaLogKeys.error] = "\(KafkaError(rd: err, operation: "rebalance", context: .rebalance))"
            logger.error("Rebalance failed; unassigning", metadata: metadata)
            if let session {
                _ = session.delegate.consumer(session.owner, revoking: tps)
            }
            resetLag(tps)
            do {
                try rdCheck(rd_kafka_assign(rk, nil), "rd_kafka_assign")
            } catch {
                logger.error("Could not unassign after a failed rebalance", metadata: [KafkaLogKeys.error: "\(error)"])
            }
        }
    }

    private func countRebalance(_ kind: String) {
        metrics.rebalance(kind)
    }

    // MARK: Statistics

    func handleStatistics(json: String, rk: OpaquePointer) {
        let parsed: KafkaStatistics
        do {
            parsed = try KafkaStatistics(json: json)
        } catch {
            logger.debug("Unparseable librdkafka statistics", metadata: [KafkaLogKeys.error: "\(error)"])
            return
        }
        statistics.withLock { $0 = parsed }
        let assigned = (try? Self.assignment(rk)) ?? []
        for tp in assigned {
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

    /// Partitions this consumer no longer owns report no lag (another member reports it).
    private func resetLag(_ tps: [TopicPartition]) {
        for tp in tps where lagGauges.withLock({ $0[tp] != nil }) {
            lagGauge(tp).record(0)
        }
    }

    // MARK: C operations shared with KafkaConsumer

    func commitSync(_ rk: OpaquePointer, _ offsets: [TopicPartition: Int64], mode: String) throws {
        let list = RDKafkaTopicPartitionList(offsets: offsets)
        do {
            try rdCheck(rd_kafka_commit(rk, list.pointer, 0), "rd_kafka_commit", context: .commit)
            if let (tp, err) = list.firstError() {
                try rdCheck(err, "rd_kafka_commit", context: .commit, detail: "partition \(tp)")
            }
        } catch {
            metrics.commitFailure(error, mode: mode)
            throw error
        }
    }

    func commitAsync(_ rk: OpaquePointer, _ offsets: [TopicPartition: Int64]) throws {
        let list = RDKafkaTopicPartitionList(offsets: offsets)
        // The result is served on the consumer queue, i.e. by the poll thread.
        let queue = rd_kafka_queue_get_consumer(rk)
        defer { if let queue { rd_kafka_queue_destroy(queue) } }
        let err = rd_kafka_commit_queue(
            rk, list.pointer, queue,
            { rk, err, offsets, _ in
                guard let handler = RDKafkaCallbackBox.handler(of: rk) else { return }
                var failure: KafkaError?
                if err != RD_KAFKA_RESP_ERR_NO_ERROR {
                    failure = KafkaError(rd: err, operation: "rd_kafka_commit_queue", context: .commit)
                } else if let offsets, let (tp, partitionErr) = RDKafkaTopicPartitionList.firstError(of: offsets) {
                    failure = KafkaError(
                        rd: partitionErr, operation: "rd_kafka_commit_queue", context: .commit,
                        detail: "partition \(tp)")
                }
                guard let failure else { return }
                handler.metrics.commitFailure(failure, mode: "async")
                handler.logger.warning("Asynchronous commit failed", metadata: [KafkaLogKeys.error: "\(failure)"])
            }, nil)
        try rdCheck(err, "rd_kafka_commit_queue", context: .commit)
    }

    static func setPaused(_ rk: OpaquePointer, _ paused: Bool, _ list: RDKafkaTopicPartitionList) throws {
        guard list.pointer.pointee.cnt > 0 else { return }
        let operation = paused ? "rd_kafka_pause_partitions" : "rd_kafka_resume_partitions"
        let err = paused ? rd_kafka_pause_partitions(rk, list.pointer) : rd_kafka_resume_partitions(rk, list.pointer)
        try rdCheck(err, operation)
        if let (tp, partitionErr) = list.firstError() {
            try rdCheck(partitionErr, operation, detail: "partition \(tp)")
        }
    }

    static func assignment(_ rk: OpaquePointer) throws -> Set<TopicPartition> {
        var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
        try rdCheck(rd_kafka_assignment(rk, &list), "rd_kafka_assignment")
        guard let list else { return [] }
        return Set(RDKafkaTopicPartitionList(owning: list).partitions)
    }
}
