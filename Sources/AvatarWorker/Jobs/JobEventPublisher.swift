import CropGeometry
import CropProtocol
import Foundation
import Imaging
import Logging
import Messaging
import Metrics
import Storage
import Synchronization

/// Turns a finished job's report into its events (docs/ARCHITECTURE.md §3): a result event for every
/// job, a numeric-only metrics record, and for a failure a DLQ record carrying the
/// original bytes and headers plus the error headers. Returns only once the broker
/// confirmed every record, so an offset is never committed before its events exist.
public final class JobEventPublisher: Sendable {
    public struct Topics: Sendable {
        public var results: String
        public var metrics: String
        public var dlq: String

        public init(results: String, metrics: String, dlq: String) {
            self.results = results
            self.metrics = metrics
            self.dlq = dlq
        }

        /// The topic configuration `avatar-cropper topics` creates each topic with (docs/DATA.md, window 5): the
        /// results topic is compacted as well as expired, so the null-value record a forget writes for the user's
        /// key deletes every earlier result of the user (paths, URLs, BlurHash, face boxes) at the next compaction.
        /// The metrics topic keeps the records' own timestamps (CreateTime, the coarse `finished_at`), not the
        /// broker's append time, which would join a record to its result.
        public var configs: [String: [String: String]] {
            [results: ["cleanup.policy": "compact,delete"], metrics: ["message.timestamp.type": "CreateTime"]]
        }
    }

    private let producer: KafkaProducer
    let topics: Topics
    private let publicBaseURL: String?
    private let recorder: JobMetricsRecorder

    public init(producer: KafkaProducer, topics: Topics, publicBaseURL: String?) {
        self.producer = producer
        self.topics = topics
        self.publicBaseURL = publicBaseURL
        self.recorder = JobMetricsRecorder()
    }

    /// Queues the job's events on the calling thread (so one user's results keep their order)
    /// and returns at once; `completion` runs on the producer's delivery thread with `true`
    /// once the broker confirmed every record, `false` if any failed. The pool thread is free
    /// for the next render meanwhile. `context`'s trace (`eventTrace`) goes on the result event and the DLQ record;
    /// its logger says how the job ended.
    func publish(_ report: JobReport, _ context: JobContext, completion: @escaping @Sendable (Bool) -> Void) {
        let (logger, trace) = (context.logger, context.eventTrace)
        let sample = CropMetricsSample(report)
        recorder.record(report, sample: sample)
        let records: [KafkaRecord]
        do {
            var built = [try resultRecord(report, trace: trace)]
            var metrics = KafkaRecord(
                topic: topics.metrics, key: nil, value: try CropCodec.encode(sample.message),
                headers: [
                    KafkaHeader(key: MessageHeader.contentType, value: Array(CropWireFormat.protobuf.contentType.utf8))
                ])
            // Its Kafka timestamp as coarse as its finished_at: the producer's clock would join it to its result
            // (docs/DATA.md, window 5).
            metrics.timestamp = sample.finishedAt
            built.append(metrics)
            // A forget, or a job its forget covers (a redelivery or replay of an earlier request, superseded or
            // failed): after its result, a null value for the user's key, so compaction deletes the user's results,
            // this one included (`ResultsErasure`; docs/DATA.md, window 5).
            if let userID = report.userID, report.erasesUser {
                built.append(ResultsErasure.record(topic: topics.results, userID: userID))
            }
            if let failure = report.failure {
                built.append(
                    Self.dlqRecord(
                        context.job.message, failure: failure, firstFailedAt: report.trace.firstFailedAt,
                        topic: topics.dlq,
                        trace: trace))
            }
            records = built
        } catch {
            logger.error("could not encode the job's events", metadata: [LogKey.error: "\(error)"])
            completion(false)
            return
        }
        let pending = Mutex((remaining: records.count, failed: false))
        let recorder = recorder
        for record in records {
            producer.send(record) { result in
                let done = pending.withLock { state -> (finished: Bool, failed: Bool) in
                    state.remaining -= 1
                    if case .failure(let error) = result {
                        state.failed = true
                        logger.error("could not publish the job's events", metadata: [LogKey.error: "\(error)"])
                    }
                    return (state.remaining == 0, state.failed)
                }
                guard done.finished else { return }
                // The job's result line, once its events are out: its outcome, and the span its events continue.
                switch (done.failed, report.outcome) {
                case (true, _): break
                case (false, .success(let disposition)):
                    logger.info(
                        "job succeeded",
                        metadata: [
                            LogKey.outcome: "\(disposition.wire.rawValue)",
                            LogKey.avatarVersion: "\(disposition.version)",
                        ])
                case (false, .failure(let failure)):
                    recorder.recordDLQ(failure)
                    logger.notice(
                        "job failed",
                        metadata: [
                            LogKey.errorCode: "\(failure.code.rawValue)",
                            LogKey.errorClass: "\(failure.errorClass.rawValue)",
                        ])
                }
                completion(!done.failed)
            }
        }
    }

    /// Waits until every queued event has been confirmed or has failed.
    public func flush(timeout: Duration) {
        try? producer.flush(timeout: timeout)
    }

    public func close() {
        producer.close(timeout: .seconds(10))
    }

    // MARK: - Records

    private func resultRecord(_ report: JobReport, trace: [KafkaHeader]) throws -> KafkaRecord {
        let result: Avatar_Crop_V1_CropResult
        switch report.outcome {
        case .failure(let failure):
            if let request = report.request {
                result = CropResultBuilder.failure(
                    for: request, finishedAt: report.trace.finishedAt, code: failure.code,
                    errorClass: failure.errorClass, attempts: failure.attempts)
            } else {
                result = CropResultBuilder.failure(
                    jobID: report.jobID, userID: report.userID, requestedAt: nil, finishedAt: report.trace.finishedAt,
                    code: failure.code, errorClass: failure.errorClass, attempts: failure.attempts)
            }
        case .success(let disposition):
            guard let request = report.request else { throw JobReport.SuccessWithoutRequest() }
            // For a superseded job, the avatar that won, as the deciding transaction read it (crop_result.proto).
            result = CropResultBuilder.success(
                for: request, finishedAt: report.trace.finishedAt,
                success(report.trace, request: request, disposition: disposition))
        }
        var headers = [
            KafkaHeader(key: MessageHeader.contentType, value: Array(CropWireFormat.protobuf.contentType.utf8))
        ]
        if let jobID = report.jobID { headers.append(KafkaHeader(key: MessageHeader.jobID, value: Array(jobID.utf8))) }
        headers += trace
        let key = report.userID.map(ResultsErasure.key)
        return KafkaRecord(topic: topics.results, key: key, value: try CropCodec.encode(result), headers: headers)
    }

    private func success(_ trace: JobTrace, request: ValidatedCropRequest, disposition: JobDisposition)
        -> CropSuccess
    {
        let (version, path) = (disposition.version, disposition.path)
        let url =
            path.isEmpty
            ? ""
            : publicBaseURL.map {
                AvatarKeys.versionedURL(baseURL: $0, key: path, version: version)
            } ?? ""
        let plan = trace.render?.plan
        var success = CropSuccess(
            avatarPath: path, avatarVersion: version, url: url, size: request.outputSize,
            format: AvatarFormat(fileName: path) ?? .png,
            disposition: disposition.wire, blurHash: trace.render?.blurHash,
            qualityLimited: plan?.qualityLimited ?? false, fallbackUsed: trace.render?.fallbackUsed ?? false,
            cropAdjusted: plan.map { $0.zoomClamped || $0.panClamped } ?? false,
            renditions: trace.extraPaths.map { extra in
                CropRendition(
                    size: extra.size, path: extra.path,
                    url: publicBaseURL.map {
                        AvatarKeys.versionedURL(baseURL: $0, key: extra.path, version: version)
                    } ?? "", format: extra.format, bytes: extra.bytes)
            },
            plan: disposition.wire == .applied ? plan : nil
        ).adding(faces: disposition.wire == .applied ? trace.render?.faces : nil)
        if disposition.wire == .applied { success.bytes = trace.render?.avatar.data.count ?? 0 }
        return success
    }

    /// The original message, bytes and headers untouched, plus why it failed. The provenance headers are the
    /// worker's own: where it consumed the message and when the ledger first saw the job fail; any the request
    /// carried (forged or from a replay) are dropped. `trace` (the failed job's span) replaces the request's
    /// trace context, so a replay continues the trace from the failure.
    static func dlqRecord(
        _ original: KafkaMessage, failure: JobFailure, firstFailedAt: Date?, topic dlqTopic: String,
        trace: [KafkaHeader] = []
    ) -> KafkaRecord {
        var errorHeaders: Set<String> = [
            MessageHeader.errorCode, MessageHeader.errorClass, MessageHeader.errorMessage, MessageHeader.attempts,
            MessageHeader.originalTopic, MessageHeader.originalPartition, MessageHeader.originalOffset,
            MessageHeader.firstFailureTime,
        ]
        errorHeaders.formUnion(trace.map(\.key))
        // The request's own headers are kept, but never so many or so large that the copy could not be sent.
        var headers = Array(
            original.headers.filter { !errorHeaders.contains($0.key) && $0.key.utf8.count <= 256 }
                .filter { ($0.value?.count ?? 0) <= Self.maxEchoedHeaderBytes }.prefix(32))
        let firstFailure = (firstFailedAt ?? Date()).formatted(.iso8601)
        let topic = original.topic
        let partition = "\(original.partition)"
        let offset = "\(original.offset)"
        func header(_ key: String, _ value: String) -> KafkaHeader { KafkaHeader(key: key, value: Array(value.utf8)) }
        headers += [
            header(MessageHeader.errorCode, failure.code.rawValue),
            header(MessageHeader.errorClass, failure.errorClass.rawValue),
            header(MessageHeader.errorMessage, failure.userMessage),
            header(MessageHeader.attempts, "\(failure.attempts)"),
            header(MessageHeader.originalTopic, topic),
            header(MessageHeader.originalPartition, partition),
            header(MessageHeader.originalOffset, offset),
            header(MessageHeader.firstFailureTime, firstFailure),
        ]
        headers += trace
        // A record over the producer's message.max.bytes would fail forever and pin its partition: the value
        // is cut to fit, and the record says so (headers first: they are what replay and operators read).
        var value = original.value
        if value.count > Self.maxDLQValueBytes {
            headers.append(header(MessageHeader.valueTruncated, "\(value.count)"))
            value = Array(value.prefix(Self.maxDLQValueBytes))
        }
        return KafkaRecord(topic: dlqTopic, key: original.key, value: value, headers: headers)
    }

    /// The largest request value a DLQ record carries whole: below librdkafka's default `message.max.bytes`
    /// (1,000,000) with room for the headers and the record's framing.
    static let maxDLQValueBytes = 900_000
    /// Request headers larger than this are not copied into the DLQ record.
    static let maxEchoedHeaderBytes = 4096
}
