import Crdkafka
import Foundation

enum RDKafkaProduce {
    /// Enqueues `record` on `rk` with `rd_kafka_produceva` (librdkafka copies key, value and headers).
    /// `deliveryID` comes back in the delivery report as the message's opaque.
    static func produce(_ rk: OpaquePointer, _ record: KafkaRecord, deliveryID: UInt64) throws {
        // Topic and header names must be NUL-terminated; they only need to live during the call.
        var cStrings: [UnsafeMutablePointer<CChar>] = []
        defer { cStrings.forEach { $0.deallocate() } }
        func cString(_ text: String) -> UnsafeMutablePointer<CChar> {
            let utf8 = Array(text.utf8CString)
            let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count)
            pointer.initialize(from: utf8, count: utf8.count)
            cStrings.append(pointer)
            return pointer
        }

        var vus: [rd_kafka_vu_t] = []
        var vu = rd_kafka_vu_t()
        vu.vtype = RD_KAFKA_VTYPE_TOPIC
        vu.u.cstr = UnsafePointer(cString(record.topic))
        vus.append(vu)

        vu = rd_kafka_vu_t()
        vu.vtype = RD_KAFKA_VTYPE_MSGFLAGS
        vu.u.i = RD_KAFKA_MSG_F_COPY
        vus.append(vu)

        vu = rd_kafka_vu_t()
        vu.vtype = RD_KAFKA_VTYPE_OPAQUE
        vu.u.ptr = UnsafeMutableRawPointer(bitPattern: UInt(deliveryID))
        vus.append(vu)

        if let partition = record.partition {
            vu = rd_kafka_vu_t()
            vu.vtype = RD_KAFKA_VTYPE_PARTITION
            vu.u.i32 = partition
            vus.append(vu)
        }

        if let timestamp = record.timestamp {
            vu = rd_kafka_vu_t()
            vu.vtype = RD_KAFKA_VTYPE_TIMESTAMP
            vu.u.i64 = Int64((timestamp.timeIntervalSince1970 * 1000).rounded(.down))
            vus.append(vu)
        }

        // Header values: copied into one buffer so every pointer stays valid for the call.
        let valueBytes = record.headers.reduce(0) { $0 + ($1.value?.count ?? 0) }
        let headerBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(valueBytes, 1), alignment: 1)
        defer { headerBuffer.deallocate() }
        var used = 0
        for header in record.headers {
            vu = rd_kafka_vu_t()
            vu.vtype = RD_KAFKA_VTYPE_HEADER
            vu.u.header.name = UnsafePointer(cString(header.key))
            if let value = header.value {
                let slice = UnsafeMutableRawBufferPointer(rebasing: headerBuffer[used..<(used + value.count)])
                slice.copyBytes(from: value)
                vu.u.header.val = UnsafeRawPointer(slice.baseAddress ?? headerBuffer.baseAddress!)
                vu.u.header.size = value.count
                used += value.count
            } else {
                vu.u.header.val = nil  // a null header value
                vu.u.header.size = 0
            }
            vus.append(vu)
        }

        let error: OpaquePointer? = record.value.withUnsafeBytes { value in
            var vus = vus
            var valueVU = rd_kafka_vu_t()
            valueVU.vtype = RD_KAFKA_VTYPE_VALUE
            // A NULL pointer is a null value (a tombstone).
            valueVU.u.mem.ptr =
                record.nullValue ? nil : value.baseAddress.map { UnsafeMutableRawPointer(mutating: $0) }
            valueVU.u.mem.size = record.nullValue ? 0 : value.count
            vus.append(valueVU)
            guard let key = record.key else {
                return rd_kafka_produceva(rk, vus, vus.count)
            }
            return key.withUnsafeBytes { key in
                var keyVU = rd_kafka_vu_t()
                keyVU.vtype = RD_KAFKA_VTYPE_KEY
                // An empty key stays an empty key (not a null one): it needs a non-NULL pointer.
                keyVU.u.mem.ptr =
                    key.baseAddress.map { UnsafeMutableRawPointer(mutating: $0) } ?? headerBuffer.baseAddress
                keyVU.u.mem.size = key.count
                vus.append(keyVU)
                return rd_kafka_produceva(rk, vus, vus.count)
            }
        }
        try rdCheck(error: error, "rd_kafka_produceva", context: .delivery)
    }
}

/// The producer calls of a client.
extension RDKafkaClient {
    /// Serves delivery reports, logs, errors and statistics on this thread for up to `timeout`.
    /// Throws `.closed` once the client is destroyed.
    func serveEvents(timeout: Duration) throws {
        try withHandle("rd_kafka_poll") { _ = rd_kafka_poll($0, timeout.milliseconds) }
    }

    /// Waits until every queued message has been delivered or has failed.
    func flush(timeout: Duration) throws {
        try withHandle("rd_kafka_flush") { rk in
            try rdCheck(rd_kafka_flush(rk, timeout.milliseconds), "rd_kafka_flush", context: .timeout)
        }
    }

    /// Messages queued or in flight, not yet acknowledged.
    func outstandingMessages() throws -> Int {
        try withHandle("rd_kafka_outq_len") { Int(rd_kafka_outq_len($0)) }
    }

    /// Queues `record`; its delivery report carries `deliveryID`.
    func produce(_ record: KafkaRecord, deliveryID: UInt64) throws {
        try withHandle("rd_kafka_produceva") { rk in
            try RDKafkaProduce.produce(rk, record, deliveryID: deliveryID)
        }
    }
}
