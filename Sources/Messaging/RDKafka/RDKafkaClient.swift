import Crdkafka
import Foundation
import Logging

/// Receives what librdkafka reports through its callbacks, in Swift types. librdkafka calls them only
/// from inside our own poll calls (`rd_kafka_poll`, `rd_kafka_consumer_poll`, `rd_kafka_consumer_close`,
/// ...), on the thread making that call: logs are routed through the main queue (`log.queue=true`),
/// never invoked from librdkafka's internal threads.
protocol RDKafkaEventHandler: AnyObject, Sendable {
    var logger: Logger { get }
    var metrics: KafkaMetricsRecorder { get }
    /// Runs inside a poll or close call: it must not call back into librdkafka (a synchronous request
    /// such as `rd_kafka_assignment` deadlocks inside `rd_kafka_consumer_close`).
    func handleStatistics(json: String)
    /// The delivery report of the message produced with `deliveryID`.
    func handleDelivery(deliveryID: UInt64, result: Result<KafkaDelivery, KafkaError>)
    /// A consumer group rebalance; the handler must take or give up the partitions through `rebalance`.
    func handleRebalance(_ rebalance: RDKafkaRebalance)
    /// An asynchronous commit (`commitAsync`) failed.
    func handleAsyncCommitFailure(_ error: KafkaError)
}

extension RDKafkaEventHandler {
    func handleStatistics(json: String) {}
    func handleDelivery(deliveryID: UInt64, result: Result<KafkaDelivery, KafkaError>) {}
    func handleRebalance(_ rebalance: RDKafkaRebalance) {}
    func handleAsyncCommitFailure(_ error: KafkaError) {}

    func handleLog(level: Int32, facility: String, message: String) {
        logger.log(
            level: Self.logLevel(syslog: level), "\(message)", metadata: [KafkaLogKeys.facility: "\(facility)"]
        )
    }

    /// `fatal`: for a fatal error, the underlying code and reason (`rd_kafka_fatal_error`).
    func handleError(_ error: KafkaError, reason: String, fatal: (code: KafkaResponseCode, reason: String)?) {
        metrics.clientError(error.errorName)
        if let fatal {
            logger.critical(
                "librdkafka raised a fatal error; the client is unusable",
                metadata: [
                    KafkaLogKeys.error: "\(fatal.code)",
                    "kafka.detail": "\(fatal.reason)",
                ])
        } else {
            // Transient broker errors (a broker went down, all brokers down) are retried by librdkafka.
            logger.warning("\(error)", metadata: ["kafka.detail": "\(reason)"])
        }
    }

    static func logLevel(syslog level: Int32) -> Logger.Level {
        switch level {
        case ...2: .critical
        case 3: .error
        case 4: .warning
        case 5: .notice
        case 6: .info
        default: .debug
        }
    }
}

/// What librdkafka's `opaque` points to: keeps the handler alive for as long as the handle exists.
final class RDKafkaCallbackBox: Sendable {
    let handler: any RDKafkaEventHandler

    init(_ handler: any RDKafkaEventHandler) {
        self.handler = handler
    }

    static func handler(of rk: OpaquePointer?) -> (any RDKafkaEventHandler)? {
        guard let rk, let opaque = rd_kafka_opaque(rk) else { return nil }
        return Unmanaged<RDKafkaCallbackBox>.fromOpaque(opaque).takeUnretainedValue().handler
    }
}

/// The one owner of an `rd_kafka_t *`.
///
/// Operations borrow the handle through `withHandle`; `destroy()` waits until no borrower is left,
/// then destroys it, so a concurrent call can never use a destroyed handle (it throws `.closed`).
///
/// `@unchecked Sendable`: librdkafka handles are thread-safe; `handle`, `closing` and `borrowers` are
/// only accessed while holding `condition`.
final class RDKafkaClient: @unchecked Sendable {
    enum Kind {
        case producer, consumer
    }

    private let condition = NSCondition()
    private var handle: OpaquePointer?
    private var closing = false
    private var borrowers = 0
    /// Referenced (unretained) by librdkafka as the handle's opaque; must outlive the handle.
    private let box: RDKafkaCallbackBox
    /// librdkafka's instance name, e.g. `rdkafka#consumer-1`.
    let name: String

    private init(handle: OpaquePointer, box: RDKafkaCallbackBox) {
        self.handle = handle
        self.box = box
        self.name = String(cString: rd_kafka_name(handle))
    }

    /// Creates a client from `properties` with the callbacks routed to `handler`.
    static func make(
        kind: Kind, properties: [(key: String, value: String)], handler: any RDKafkaEventHandler
    ) throws -> RDKafkaClient {
        guard let conf = rd_kafka_conf_new() else {
            throw KafkaError(code: .configuration, operation: "rd_kafka_conf_new")
        }
        var confOwned = true
        defer { if confOwned { rd_kafka_conf_destroy(conf) } }

        for (key, value) in properties {
            try setProperty(conf, key, value)
        }
        // Logs are queued and served by our poll calls instead of arriving on librdkafka threads.
        try setProperty(conf, "log.queue", "true")
        installCallbacks(conf, kind: kind)
        let box = RDKafkaCallbackBox(handler)
        rd_kafka_conf_set_opaque(conf, Unmanaged.passUnretained(box).toOpaque())

        var errorText = [CChar](repeating: 0, count: 512)
        let type = kind == .producer ? RD_KAFKA_PRODUCER : RD_KAFKA_CONSUMER
        guard let rk = rd_kafka_new(type, conf, &errorText, errorText.count) else {
            throw KafkaError(
                code: .configuration, operation: "rd_kafka_new", detail: String(errorBuffer: errorText))
        }
        confOwned = false  // rd_kafka_new took ownership
        let client = RDKafkaClient(handle: rk, box: box)
        try rdCheck(rd_kafka_set_log_queue(rk, nil), "rd_kafka_set_log_queue", context: .configuration)
        return client
    }

    private static func setProperty(_ conf: OpaquePointer, _ key: String, _ value: String) throws {
        var errorText = [CChar](repeating: 0, count: 512)
        let result = rd_kafka_conf_set(conf, key, value, &errorText, errorText.count)
        try rdCheck(conf: result, property: key, errorText: String(errorBuffer: errorText))
    }

    private static func installCallbacks(_ conf: OpaquePointer, kind: Kind) {
        rd_kafka_conf_set_log_cb(conf) { rk, level, facility, text in
            guard let handler = RDKafkaCallbackBox.handler(of: rk) else { return }
            handler.handleLog(
                level: level, facility: facility.map { String(cString: $0) } ?? "",
                message: text.map { String(cString: $0) } ?? "")
        }
        rd_kafka_conf_set_error_cb(conf) { rk, err, reason, _ in
            guard let rk, let handler = RDKafkaCallbackBox.handler(of: rk) else { return }
            let code = rd_kafka_resp_err_t(rawValue: err)
            let reason = reason.map { String(cString: $0) } ?? ""
            var fatal: (code: KafkaResponseCode, reason: String)?
            if code == RD_KAFKA_RESP_ERR__FATAL {
                var text = [CChar](repeating: 0, count: 512)
                let underlying = rd_kafka_fatal_error(rk, &text, text.count)
                fatal = (KafkaResponseCode(underlying), String(errorBuffer: text))
            }
            handler.handleError(
                KafkaError(rd: code, operation: "librdkafka", context: .broker, detail: reason), reason: reason,
                fatal: fatal)
        }
        rd_kafka_conf_set_stats_cb(conf) { rk, json, length, _ in
            guard let rk, let json, let handler = RDKafkaCallbackBox.handler(of: rk) else { return 0 }
            let text = json.withMemoryRebound(to: UInt8.self, capacity: length) {
                String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
            }
            handler.handleStatistics(json: text)
            return 0  // librdkafka frees the JSON buffer
        }
        switch kind {
        case .producer:
            rd_kafka_conf_set_dr_msg_cb(conf) { rk, message, _ in
                guard let message, let handler = RDKafkaCallbackBox.handler(of: rk) else { return }
                let m = message.pointee
                let result: Result<KafkaDelivery, KafkaError> =
                    m.err == RD_KAFKA_RESP_ERR_NO_ERROR
                    ? .success(KafkaDelivery(partition: m.partition, offset: m.offset))
                    : .failure(KafkaError(rd: m.err, operation: "delivery report", context: .delivery))
                handler.handleDelivery(deliveryID: UInt64(UInt(bitPattern: m._private)), result: result)
            }
        case .consumer:
            rd_kafka_conf_set_rebalance_cb(conf) { rk, err, partitions, _ in
                guard let rk, let partitions, let handler = RDKafkaCallbackBox.handler(of: rk) else { return }
                handler.handleRebalance(RDKafkaRebalance(rk: rk, err: err, partitions: partitions))
            }
        }
    }

    /// Runs `body` with the live handle; throws `.closed` once `destroy()` has started.
    func withHandle<Result>(
        _ operation: String, file: String = #fileID, line: Int = #line, _ body: (OpaquePointer) throws -> Result
    ) throws -> Result {
        condition.lock()
        guard let handle, !closing else {
            condition.unlock()
            throw KafkaError.closed(operation, file: file, line: line)
        }
        borrowers += 1
        condition.unlock()
        defer {
            condition.lock()
            borrowers -= 1
            if borrowers == 0 { condition.broadcast() }
            condition.unlock()
        }
        return try body(handle)
    }

    var isClosed: Bool {
        condition.lock()
        defer { condition.unlock() }
        return closing
    }

    /// Waits for current borrowers, then destroys the handle. Idempotent. Must not be called from
    /// inside `withHandle`.
    func destroy() {
        condition.lock()
        guard let handle, !closing else {
            condition.unlock()
            return
        }
        closing = true
        while borrowers > 0 {
            condition.wait()
        }
        self.handle = nil
        condition.unlock()
        rd_kafka_destroy(handle)
    }

    deinit {
        if let handle {
            rd_kafka_destroy(handle)
        }
    }
}
