import Crdkafka

// The one place where librdkafka error codes become KafkaError values. Every C call that reports an
// error goes through `rdCheck` (which throws) or `KafkaError(rd:...)` (for errors that arrive in
// callbacks and are delivered rather than thrown); both record the call site.

/// Throws a `KafkaError` when `err` is not `RD_KAFKA_RESP_ERR_NO_ERROR`.
///
/// - Parameter context: the category used when the code itself does not say more (e.g. `.delivery`
///   for a failed delivery report). `.commit` always wins: every failed commit is a `.commit` error.
func rdCheck(
    _ err: rd_kafka_resp_err_t, _ operation: String, context: KafkaError.Code = .broker, detail: String? = nil,
    file: String = #fileID, line: Int = #line
) throws {
    guard err != RD_KAFKA_RESP_ERR_NO_ERROR else { return }
    throw KafkaError(rd: err, operation: operation, context: context, detail: detail, file: file, line: line)
}

/// Throws a `KafkaError` when `error` (an `rd_kafka_error_t *` returned by newer librdkafka APIs) is
/// not NULL; takes ownership of `error` and destroys it.
func rdCheck(
    error: OpaquePointer?, _ operation: String, context: KafkaError.Code = .broker,
    file: String = #fileID, line: Int = #line
) throws {
    guard let error else { return }
    defer { rd_kafka_error_destroy(error) }
    var kafkaError = KafkaError(
        rd: rd_kafka_error_code(error), operation: operation, context: context,
        detail: String(cString: rd_kafka_error_string(error)), file: file, line: line
    )
    kafkaError.isRetriable = kafkaError.isRetriable || rd_kafka_error_is_retriable(error) != 0
    kafkaError.isFatal = rd_kafka_error_is_fatal(error) != 0
    throw kafkaError
}

extension KafkaError {
    /// Maps a librdkafka code to a KafkaError with a category and retriability.
    init(
        rd err: rd_kafka_resp_err_t, operation: String, context: KafkaError.Code, detail: String? = nil,
        file: String = #fileID, line: Int = #line
    ) {
        self.init(
            code: context == .commit ? .commit : (Self.category(of: err) ?? context),
            rawCode: err.rawValue,
            errorName: String(cString: rd_kafka_err2name(err)),
            isRetriable: Self.isRetriable(err),
            isFatal: err == RD_KAFKA_RESP_ERR__FATAL,
            operation: operation,
            detail: detail ?? String(cString: rd_kafka_err2str(err)),
            file: file,
            line: line
        )
    }

    /// The category a code belongs to on its own, or nil when it depends on the operation.
    static func category(of err: rd_kafka_resp_err_t) -> KafkaError.Code? {
        switch err {
        case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_RESP_ERR__TIMED_OUT, RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE,
            RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
            return .timeout
        case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE,
            RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE:
            return .messageTooLarge
        case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC, RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION,
            RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_ID:
            return .unknownTopic
        case RD_KAFKA_RESP_ERR__DESTROY, RD_KAFKA_RESP_ERR__PURGE_QUEUE, RD_KAFKA_RESP_ERR__PURGE_INFLIGHT:
            return .closed
        case RD_KAFKA_RESP_ERR__QUEUE_FULL:
            return .queueFull
        case RD_KAFKA_RESP_ERR__INVALID_ARG, RD_KAFKA_RESP_ERR__INVALID_TYPE:
            return .invalidArgument
        case RD_KAFKA_RESP_ERR__NOT_CONFIGURED, RD_KAFKA_RESP_ERR_INVALID_CONFIG:
            return .configuration
        case RD_KAFKA_RESP_ERR__AUTHENTICATION, RD_KAFKA_RESP_ERR__SSL, RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED,
            RD_KAFKA_RESP_ERR_UNSUPPORTED_SASL_MECHANISM, RD_KAFKA_RESP_ERR_ILLEGAL_SASL_STATE:
            return .authentication
        case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED,
            RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED, RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            return .authorization
        case RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION, RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID,
            RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS, RD_KAFKA_RESP_ERR__ASSIGNMENT_LOST,
            RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID, RD_KAFKA_RESP_ERR_STALE_MEMBER_EPOCH:
            return .rebalance
        default:
            return nil
        }
    }

    /// Whether the same operation may succeed when tried again (Kafka's retriable errors plus
    /// librdkafka's transient local ones).
    static func isRetriable(_ err: rd_kafka_resp_err_t) -> Bool {
        switch err {
        case RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, RD_KAFKA_RESP_ERR__RESOLVE,
            RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_RESP_ERR__TIMED_OUT, RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE,
            RD_KAFKA_RESP_ERR__QUEUE_FULL, RD_KAFKA_RESP_ERR__WAIT_COORD, RD_KAFKA_RESP_ERR__WAIT_CACHE,
            RD_KAFKA_RESP_ERR__RETRY, RD_KAFKA_RESP_ERR__IN_PROGRESS, RD_KAFKA_RESP_ERR__PREV_IN_PROGRESS,
            RD_KAFKA_RESP_ERR__NODE_UPDATE, RD_KAFKA_RESP_ERR__ISR_INSUFF,
            RD_KAFKA_RESP_ERR_INVALID_MSG, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
            RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
            RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE,
            RD_KAFKA_RESP_ERR_REPLICA_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION,
            RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS, RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE,
            RD_KAFKA_RESP_ERR_NOT_COORDINATOR, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
            RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND, RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS,
            RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR, RD_KAFKA_RESP_ERR_FETCH_SESSION_ID_NOT_FOUND,
            RD_KAFKA_RESP_ERR_INVALID_FETCH_SESSION_EPOCH, RD_KAFKA_RESP_ERR_FENCED_LEADER_EPOCH,
            RD_KAFKA_RESP_ERR_UNKNOWN_LEADER_EPOCH, RD_KAFKA_RESP_ERR_OFFSET_NOT_AVAILABLE,
            RD_KAFKA_RESP_ERR_PREFERRED_LEADER_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_THROTTLING_QUOTA_EXCEEDED,
            RD_KAFKA_RESP_ERR_UNSTABLE_OFFSET_COMMIT, RD_KAFKA_RESP_ERR_STALE_MEMBER_EPOCH:
            return true
        default:
            return false
        }
    }
}

/// Throws a `.configuration` KafkaError when setting a configuration property failed. The message
/// names the property but never its value (it may be a secret).
func rdCheck(
    conf result: rd_kafka_conf_res_t, property: String, errorText: String,
    file: String = #fileID, line: Int = #line
) throws {
    guard result != RD_KAFKA_CONF_OK else { return }
    let kind = result == RD_KAFKA_CONF_UNKNOWN ? "unknown property" : "invalid value"
    throw KafkaError(
        code: .configuration, rawCode: result.rawValue, errorName: kind, operation: "rd_kafka_conf_set(\(property))",
        detail: KafkaConfiguration.isSecret(property) ? kind : errorText, file: file, line: line
    )
}

/// librdkafka's symbolic error names, for `KafkaResponseCode.name`.
enum RDKafkaErrorNames {
    static func name(of code: Int32) -> String {
        String(cString: rd_kafka_err2name(rd_kafka_resp_err_t(rawValue: code)))
    }
}

extension KafkaResponseCode {
    init(_ err: rd_kafka_resp_err_t) { self.init(rawValue: err.rawValue) }

    var rdValue: rd_kafka_resp_err_t { rd_kafka_resp_err_t(rawValue: rawValue) }
}
