import Crdkafka

/// One result of `rd_kafka_consumer_poll`, copied into Swift values.
enum RDKafkaPolled {
    case message(KafkaMessage)
    /// A consume error (partition EOF is not reported); `topic` and `partition` when it concerns one.
    case error(KafkaError, topic: String?, partition: Int32)
}

/// The consumer calls of a client: everything `KafkaConsumer` and `ConsumerEvents` ask librdkafka.
extension RDKafkaClient {
    /// Serves logs, errors, statistics and rebalances from `rd_kafka_consumer_poll`, then subscribes.
    func subscribe(_ topics: [String]) throws {
        try withHandle("rd_kafka_subscribe") { rk in
            try rdCheck(rd_kafka_poll_set_consumer(rk), "rd_kafka_poll_set_consumer")
            let list = RDKafkaTopicPartitionList(topics.map { TopicPartition(topic: $0, partition: -1) })
            try rdCheck(rd_kafka_subscribe(rk, list.pointer), "rd_kafka_subscribe", context: .invalidArgument)
        }
    }

    /// Takes `offsets` (partition → first offset to read) as the whole assignment, without joining the group, and serves
    /// logs, errors and statistics from `rd_kafka_consumer_poll`.
    func assign(_ offsets: [TopicPartition: Int64]) throws {
        try withHandle("rd_kafka_assign") { rk in
            try rdCheck(rd_kafka_poll_set_consumer(rk), "rd_kafka_poll_set_consumer")
            let list = RDKafkaTopicPartitionList(offsets: offsets)
            try rdCheck(rd_kafka_assign(rk, list.pointer), "rd_kafka_assign", context: .invalidArgument)
        }
    }

    /// Waits up to `timeout` for a message or a consume error. Rebalance, log, error and statistics
    /// callbacks run inside this call, on this thread. Throws `.closed` once the client is destroyed.
    func pollConsumer(timeout: Duration) throws -> RDKafkaPolled? {
        try withHandle("rd_kafka_consumer_poll") { rk in
            guard let pointer = rd_kafka_consumer_poll(rk, timeout.milliseconds) else { return nil }
            defer { rd_kafka_message_destroy(pointer) }
            let m = pointer.pointee
            if m.err == RD_KAFKA_RESP_ERR_NO_ERROR { return .message(KafkaMessage(copying: pointer)) }
            if m.err == RD_KAFKA_RESP_ERR__PARTITION_EOF { return nil }
            let error = KafkaError(rd: m.err, operation: "rd_kafka_consumer_poll", context: .broker)
            return .error(error, topic: m.rkt.map { String(cString: rd_kafka_topic_name($0)) }, partition: m.partition)
        }
    }

    /// `rd_kafka_consumer_close`: revokes the assignment (rebalance callback, on this thread) and
    /// leaves the group.
    func closeConsumer() throws {
        try withHandle("rd_kafka_consumer_close") { rk in
            try rdCheck(rd_kafka_consumer_close(rk), "rd_kafka_consumer_close")
        }
    }

    /// Commits `offsets` and waits for the broker.
    func commit(_ offsets: [TopicPartition: Int64]) throws {
        try withHandle("rd_kafka_commit") { rk in try RDKafkaConsumerCalls.commit(rk, offsets) }
    }

    /// Commits `offsets` without waiting; a failure reaches the handler's `handleAsyncCommitFailure`
    /// when the poll thread serves the result (it is queued on the consumer queue).
    func commitAsync(_ offsets: [TopicPartition: Int64]) throws {
        try withHandle("rd_kafka_commit_queue") { rk in
            let list = RDKafkaTopicPartitionList(offsets: offsets)
            let queue = rd_kafka_queue_get_consumer(rk)
            defer { if let queue { rd_kafka_queue_destroy(queue) } }
            let err = rd_kafka_commit_queue(
                rk, list.pointer, queue,
                { rk, err, offsets, _ in
                    guard let handler = RDKafkaCallbackBox.handler(of: rk) else { return }
                    if err != RD_KAFKA_RESP_ERR_NO_ERROR {
                        handler.handleAsyncCommitFailure(
                            KafkaError(rd: err, operation: "rd_kafka_commit_queue", context: .commit))
                    } else if let offsets, let (tp, partitionErr) = RDKafkaTopicPartitionList.firstError(of: offsets) {
                        handler.handleAsyncCommitFailure(
                            KafkaError(
                                rd: partitionErr, operation: "rd_kafka_commit_queue", context: .commit,
                                detail: "partition \(tp)"))
                    }
                }, nil)
            try rdCheck(err, "rd_kafka_commit_queue", context: .commit)
        }
    }

    /// Pauses or resumes fetching `partitions`.
    func setPaused(_ paused: Bool, _ partitions: [TopicPartition]) throws {
        try withHandle(paused ? "rd_kafka_pause_partitions" : "rd_kafka_resume_partitions") { rk in
            try RDKafkaConsumerCalls.setPaused(rk, paused, RDKafkaTopicPartitionList(partitions))
        }
    }

    /// Pauses every partition currently assigned.
    func pauseAssignment() throws {
        try withHandle("rd_kafka_pause_partitions") { rk in
            var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
            try rdCheck(rd_kafka_assignment(rk, &list), "rd_kafka_assignment")
            guard let list else { return }
            try RDKafkaConsumerCalls.setPaused(rk, true, RDKafkaTopicPartitionList(owning: list))
        }
    }

    func assignment() throws -> Set<TopicPartition> {
        try withHandle("rd_kafka_assignment") { try RDKafkaConsumerCalls.assignment($0) }
    }

    /// The committed offsets of `partitions`; partitions without one are left out.
    func committedOffsets(_ partitions: [TopicPartition], timeout: Duration) throws -> [TopicPartition: Int64] {
        try withHandle("rd_kafka_committed") { rk in
            let list = RDKafkaTopicPartitionList(partitions)
            try rdCheck(rd_kafka_committed(rk, list.pointer, timeout.milliseconds), "rd_kafka_committed")
            if let (tp, err) = list.firstError() {
                try rdCheck(err, "rd_kafka_committed", detail: "partition \(tp)")
            }
            return RDKafkaTopicPartitionList.offsets(of: list.pointer).filter { $0.value >= 0 }
        }
    }
}

/// One rebalance callback: what happens and the calls that answer it. Valid only for the duration of
/// the callback.
struct RDKafkaRebalance {
    enum Kind {
        case assign
        /// `lost`: the assignment was lost (session timeout), not revoked in order: do not commit.
        case revoke(lost: Bool)
        case failed(KafkaError)
    }

    private let rk: OpaquePointer
    private let list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>
    let kind: Kind
    let partitions: [TopicPartition]
    /// `EAGER` or `COOPERATIVE`.
    let protocolName: String

    init(rk: OpaquePointer, err: rd_kafka_resp_err_t, partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>)
    {
        self.rk = rk
        self.list = partitions
        self.partitions = RDKafkaTopicPartitionList.partitions(of: partitions)
        self.protocolName = String(cString: rd_kafka_rebalance_protocol(rk))
        switch err {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS: kind = .assign
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS: kind = .revoke(lost: rd_kafka_assignment_lost(rk) != 0)
        default: kind = .failed(KafkaError(rd: err, operation: "rebalance", context: .rebalance))
        }
    }

    private var cooperative: Bool { protocolName == "COOPERATIVE" }

    /// Takes the assigned partitions (incrementally under the cooperative protocol).
    func take() throws {
        if cooperative {
            try rdCheck(error: rd_kafka_incremental_assign(rk, list), "rd_kafka_incremental_assign")
        } else {
            try rdCheck(rd_kafka_assign(rk, list), "rd_kafka_assign")
        }
    }

    /// Gives up the revoked partitions (incrementally under the cooperative protocol).
    func giveUp() throws {
        if cooperative {
            try rdCheck(error: rd_kafka_incremental_unassign(rk, list), "rd_kafka_incremental_unassign")
        } else {
            try rdCheck(rd_kafka_assign(rk, nil), "rd_kafka_assign")
        }
    }

    /// Drops the whole assignment (after a failed rebalance).
    func unassignAll() throws {
        try rdCheck(rd_kafka_assign(rk, nil), "rd_kafka_assign")
    }

    /// Commits `offsets` synchronously, from inside the callback.
    func commit(_ offsets: [TopicPartition: Int64]) throws {
        try RDKafkaConsumerCalls.commit(rk, offsets)
    }

    /// Pauses or resumes `partitions` just taken (librdkafka keeps a pause across a revoke and re-assignment).
    func setPaused(_ paused: Bool, _ partitions: [TopicPartition]) throws {
        try RDKafkaConsumerCalls.setPaused(rk, paused, RDKafkaTopicPartitionList(partitions))
    }
}

/// The calls shared by the borrowing (`RDKafkaClient`) and in-callback (`RDKafkaRebalance`) paths.
private enum RDKafkaConsumerCalls {
    static func commit(_ rk: OpaquePointer, _ offsets: [TopicPartition: Int64]) throws {
        let list = RDKafkaTopicPartitionList(offsets: offsets)
        try rdCheck(rd_kafka_commit(rk, list.pointer, 0), "rd_kafka_commit", context: .commit)
        if let (tp, err) = list.firstError() {
            try rdCheck(err, "rd_kafka_commit", context: .commit, detail: "partition \(tp)")
        }
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
