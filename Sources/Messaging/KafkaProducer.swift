import Foundation
import Logging
import Metrics
import Synchronization

/// A Kafka producer. Delivery reports are served by a dedicated poll thread (never a Swift
/// concurrency executor); `send` resumes when the report for its message arrives.
public final class KafkaProducer: Sendable {
    private let client: RDKafkaClient
    private let events: ProducerEvents
    private let pollThread: JoinableThread
    private let logger: Logger

    /// - Parameter configuration: passed through to librdkafka; e.g. `acks`, `linger.ms`,
    ///   `message.timeout.ms` (how long librdkafka retries before a delivery fails),
    ///   `enable.idempotence`, `compression.type`, `statistics.interval.ms`. Consumer-only
    ///   properties (`session.timeout.ms`, `group.id`, …) are left out, so one configuration can
    ///   serve a process's consumer and producers.
    /// - Parameter metricsFactory: where `kafka_delivery_failures_total` etc. go; nil uses the global
    ///   `MetricsSystem`.
    public init(
        configuration: KafkaConfiguration, logger: Logger, metricsFactory: (any MetricsFactory)? = nil
    ) throws {
        let events = ProducerEvents(logger: logger, metrics: KafkaMetricsRecorder(factory: metricsFactory))
        let client = try RDKafkaClient.make(
            kind: .producer, properties: configuration.forProducer.librdkafkaProperties(), handler: events)
        var logger = logger
        logger[metadataKey: KafkaLogKeys.client] = "\(client.name)"
        events.logger = logger
        self.logger = logger
        self.events = events
        self.client = client
        self.pollThread = JoinableThread(name: "kafka-producer-poll") { [client, events] in
            while !events.stopPolling {
                // Serves delivery reports, logs, errors and statistics on this thread.
                guard (try? client.serveEvents(timeout: .milliseconds(100))) != nil else { break }
            }
        }
    }

    deinit {
        close(timeout: .zero)
    }

    /// Sends `record` and returns where it was stored once the broker acknowledged it.
    ///
    /// Throws a `KafkaError` when the record cannot be queued (e.g. `.messageTooLarge`) or its delivery
    /// fails (`.delivery`, `.timeout` after `message.timeout.ms`, `.unknownTopic`, ...; see `isRetriable`).
    /// A full local queue is waited out. Once queued, a message cannot be recalled, so cancelling the
    /// task does not abandon the wait.
    public func send(_ record: KafkaRecord) async throws -> (partition: Int32, offset: Int64) {
        while true {
            do {
                let delivery = try await withCheckedThrowingContinuation { continuation in
                    do {
                        try enqueue(record) { continuation.resume(with: $0) }
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
                return (delivery.partition, delivery.offset)
            } catch let error as KafkaError where error.code == .queueFull {
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    /// Queues `record` on the calling thread and returns at once; `completion` runs on the
    /// producer's delivery thread with where the record was stored, or why it failed. Records
    /// queued one after another from one thread keep their order, which tasks started for the
    /// async `send` would not guarantee. A full local queue is waited out for up to `queueFullWait`
    /// (so call this from a thread of your own, never from Swift concurrency), then the record fails
    /// with `.queueFull`: a broker gone for good must not hold the caller forever.
    public func send(
        _ record: KafkaRecord, queueFullWait: Duration = .seconds(30),
        completion: @escaping @Sendable (Result<(partition: Int32, offset: Int64), KafkaError>) -> Void
    ) {
        let deadline = ContinuousClock.now + queueFullWait
        while true {
            do {
                _ = try enqueue(record) { result in completion(result.map { ($0.partition, $0.offset) }) }
                return
            } catch let error as KafkaError where error.code == .queueFull {
                guard ContinuousClock.now < deadline else {
                    completion(.failure(error))
                    return
                }
                Thread.sleep(forTimeInterval: 0.005)
            } catch let error as KafkaError {
                completion(.failure(error))
                return
            } catch {
                completion(
                    .failure(KafkaError(code: .delivery, isRetriable: false, operation: "send", detail: "\(error)")))
                return
            }
        }
    }

    /// Waits until every queued message has been delivered or has failed.
    public func flush(timeout: Duration) throws {
        try client.flush(timeout: timeout)
    }

    /// Messages queued or in flight, not yet acknowledged.
    public var outstandingMessages: Int {
        (try? client.outstandingMessages()) ?? 0
    }

    /// The latest librdkafka statistics (needs `statistics.interval.ms` > 0).
    public var latestStatistics: KafkaStatistics? {
        events.statistics.withLock { $0 }
    }

    /// Flushes (up to `timeout`), stops the poll thread and destroys the client. Messages still
    /// undelivered fail with `.closed`. Idempotent.
    public func close(timeout: Duration) {
        guard events.beginClosing() else { return }
        if timeout > .zero {
            do {
                try flush(timeout: timeout)
            } catch {
                logger.warning(
                    "Closing the producer with undelivered messages",
                    metadata: [KafkaLogKeys.error: "\(error)", KafkaLogKeys.count: "\(outstandingMessages)"])
            }
        }
        events.requestStopPolling()
        if pollThread.isCurrent {
            logger.error("KafkaProducer.close called from its own poll thread; not joining it")
        } else {
            pollThread.join()
        }
        client.destroy()
        events.failAll(with: .closed("close"))
    }

    /// Registers the completion, then enqueues the record; returns the delivery id.
    @discardableResult
    private func enqueue(
        _ record: KafkaRecord, completion: @escaping @Sendable (Result<KafkaDelivery, KafkaError>) -> Void
    ) throws -> UInt64 {
        let id = try events.register(topic: record.topic, completion)
        do {
            try client.produce(record, deliveryID: id)
        } catch {
            // Unless `close` already failed the completion meanwhile (it reported the error), report it here.
            if events.forget(id) { throw error }
        }
        return id
    }
}

/// Pending deliveries and callback handling of one producer.
///
/// `@unchecked Sendable`: `logger` is set once during `KafkaProducer.init`, before the poll thread
/// starts; all other mutable state is inside a `Mutex`.
final class ProducerEvents: RDKafkaEventHandler, @unchecked Sendable {
    typealias Completion = @Sendable (Result<KafkaDelivery, KafkaError>) -> Void

    private struct Pending {
        var nextID: UInt64 = 1
        var completions: [UInt64: (topic: String, completion: Completion)] = [:]
        var closing = false
        var stopPolling = false
    }

    var logger: Logger
    let metrics: KafkaMetricsRecorder
    private let pending = Mutex(Pending())
    let statistics = Mutex<KafkaStatistics?>(nil)

    init(logger: Logger, metrics: KafkaMetricsRecorder) {
        self.logger = logger
        self.metrics = metrics
    }

    var stopPolling: Bool { pending.withLock { $0.stopPolling } }

    func requestStopPolling() {
        pending.withLock { $0.stopPolling = true }
    }

    /// Returns false when closing had already begun.
    func beginClosing() -> Bool {
        pending.withLock { state in
            defer { state.closing = true }
            return !state.closing
        }
    }

    /// Registers a completion for a message about to be produced; throws `.closed` once closing began.
    func register(topic: String, _ completion: @escaping Completion) throws -> UInt64 {
        try pending.withLock { state in
            guard !state.closing else { throw KafkaError.closed("send") }
            let id = state.nextID
            state.nextID += 1
            state.completions[id] = (topic, completion)
            return id
        }
    }

    /// Drops a pending delivery; returns whether it was still pending.
    func forget(_ id: UInt64) -> Bool {
        pending.withLock { $0.completions.removeValue(forKey: id) != nil }
    }

    func failAll(with error: KafkaError) {
        let all = pending.withLock { state in
            defer { state.completions.removeAll() }
            return Array(state.completions.values)
        }
        for entry in all {
            entry.completion(.failure(error))
        }
    }

    func handleDelivery(deliveryID id: UInt64, result: Result<KafkaDelivery, KafkaError>) {
        guard let entry = pending.withLock({ $0.completions.removeValue(forKey: id) }) else { return }
        if case .failure(let error) = result {
            metrics.deliveryFailure(topic: entry.topic, errorName: error.errorName)
            logger.warning(
                "Message delivery failed",
                metadata: [KafkaLogKeys.topic: "\(entry.topic)", KafkaLogKeys.error: "\(error)"])
        }
        entry.completion(result)
    }

    func handleStatistics(json: String) {
        do {
            let parsed = try KafkaStatistics(json: json)
            statistics.withLock { $0 = parsed }
        } catch {
            logger.debug("Unparseable librdkafka statistics", metadata: [KafkaLogKeys.error: "\(error)"])
        }
    }
}
