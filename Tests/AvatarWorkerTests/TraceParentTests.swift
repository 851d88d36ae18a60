import Messaging
import Testing

@testable import AvatarWorker

@Suite("W3C traceparent")
struct TraceParentTests {
    static let example = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test("the specification's example parses and prints back the same")
    func roundTrip() throws {
        let value = try #require(TraceParent(header: Self.example))
        #expect(value.traceID.count == 16 && value.traceID.first == 0x4b && value.traceID.last == 0x36)
        #expect(value.parentID == [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7])
        #expect(value.isSampled)
        #expect(value.header == Self.example)
    }

    @Test(
        "invalid values are refused, so the receiver starts a new trace",
        arguments: [
            "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",  // too short
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // upper case
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // zero trace id
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // zero parent id
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // forbidden version
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  // version 00 has no more fields
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // separator
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",  // not hex
        ])
    func invalid(header: String) {
        #expect(TraceParent(header: header) == nil)
    }

    @Test("a later version with more fields is read as version 00")
    func laterVersion() {
        let value = TraceParent(header: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra")
        #expect(value?.header == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
        #expect(value?.isSampled == false)
    }

    @Test("random values are valid, sampled, and differ")
    func random() {
        let first = TraceParent.random()
        let second = TraceParent.random()
        #expect(TraceParent(header: first.header) == first)
        #expect(first.isSampled && !TraceParent.random(sampled: false).isSampled)
        #expect(first.traceID != second.traceID)
    }

    @Test("a replayed request keeps the trace context its DLQ record carries, so it stays in the same trace")
    func replayKeepsTheTrace() throws {
        let record = DLQRecord(
            KafkaMessage(
                topic: "avatar.crop.dlq", partition: 0, offset: 3, key: nil, value: [1],
                headers: [
                    KafkaHeader(key: TraceParent.headerName, string: Self.example),
                    KafkaHeader(key: TraceParent.stateHeaderName, string: "vendor=1"),
                    KafkaHeader(key: MessageHeader.errorCode, string: "STORAGE_UNAVAILABLE"),
                ],
                timestamp: nil))
        let replayed = record.replayRecord(topic: "avatar.crop.requests")
        func header(_ name: String) -> String? {
            replayed.headers.first { $0.key == name }?.value.map { String(decoding: $0, as: UTF8.self) }
        }
        #expect(header(TraceParent.headerName) == Self.example)
        #expect(header(TraceParent.stateHeaderName) == "vendor=1")
        #expect(header(MessageHeader.errorCode) == nil)
    }
}
