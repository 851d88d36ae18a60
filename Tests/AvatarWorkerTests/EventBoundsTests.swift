import CropProtocol
import Foundation
import Messaging
import Testing

@testable import AvatarWorker

/// Issue "nothing can stall a worker", finding 4: events that could never be sent would pin the partition.
@Suite("Event bounds")
struct EventBoundsTests {
    static func message(value: [UInt8], headers: [KafkaHeader]) -> KafkaMessage {
        KafkaMessage(
            topic: "requests", partition: 3, offset: 42, key: Array("user".utf8), value: value, headers: headers,
            timestamp: nil)
    }

    @Test("a DLQ copy of a request too large to send keeps its headers and a truncated, marked value")
    func oversizedRequest() {
        let huge = [UInt8](repeating: 7, count: 3_000_000)
        let original = Self.message(
            value: huge,
            headers: [
                KafkaHeader(key: "content-type", value: Array("application/x-protobuf".utf8)),
                KafkaHeader(key: "trace", value: [UInt8](repeating: 1, count: 100_000)),
            ])
        let record = JobEventPublisher.dlqRecord(
            original, failure: JobFailure(.malformedRequest, detail: ""), firstFailedAt: nil, topic: "dlq")
        #expect(record.value.count == JobEventPublisher.maxDLQValueBytes)
        #expect(record.headers.first { $0.key == MessageHeader.valueTruncated }?.value == Array("3000000".utf8))
        #expect(record.headers.contains { $0.key == "content-type" })
        #expect(!record.headers.contains { $0.key == "trace" }, "an oversized request header is not echoed")
        #expect(record.headers.first { $0.key == MessageHeader.errorCode }?.value == Array("MALFORMED_REQUEST".utf8))
        let total = record.value.count + record.headers.reduce(0) { $0 + $1.key.utf8.count + ($1.value?.count ?? 0) }
        #expect(total < 1_000_000, "fits librdkafka's default message.max.bytes")
    }

    @Test("a small request is copied whole")
    func smallRequest() {
        let record = JobEventPublisher.dlqRecord(
            Self.message(value: [1, 2, 3], headers: []), failure: JobFailure(.tooSmall, detail: ""),
            firstFailedAt: nil, topic: "dlq")
        #expect(record.value == [1, 2, 3])
        #expect(!record.headers.contains { $0.key == MessageHeader.valueTruncated })
    }

    @Test("an unreadable request's job-id header is echoed only when it is a plausible id")
    func jobIDHeader() {
        func id(_ value: String) -> String? {
            MessageHeader.boundedJobID(Self.message(value: [], headers: [KafkaHeader(key: "job-id", string: value)]))
        }
        #expect(id("7c1e2b9a-job") == "7c1e2b9a-job")
        #expect(id(String(repeating: "a", count: 129)) == nil)
        #expect(id("") == nil)
        #expect(id("has space") == nil)
        #expect(id("tab\u{9}") == nil)
        #expect(id("é") == nil)
    }
}
