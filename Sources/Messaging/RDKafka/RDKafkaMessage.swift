import Crdkafka
import Foundation

extension KafkaMessage {
    /// Copies a consumed `rd_kafka_message_t` (which must have no error) into Swift values.
    init(copying message: UnsafePointer<rd_kafka_message_t>) {
        let m = message.pointee
        let topic = m.rkt.map { String(cString: rd_kafka_topic_name($0)) } ?? ""
        let key: [UInt8]? = m.key.map { Array(UnsafeRawBufferPointer(start: $0, count: m.key_len)) }
        let value: [UInt8] = m.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: m.len)) } ?? []
        var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let millis = rd_kafka_message_timestamp(message, &timestampType)
        let timestamp: Date? =
            timestampType == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE || millis < 0
            ? nil : Date(timeIntervalSince1970: Double(millis) / 1000)
        self.init(
            topic: topic, partition: m.partition, offset: m.offset, key: key, value: value,
            headers: Self.headers(of: message), timestamp: timestamp)
        valueIsNull = m.payload == nil
    }

    static func headers(of message: UnsafePointer<rd_kafka_message_t>) -> [KafkaHeader] {
        var headers: OpaquePointer?
        // _NOENT: the message has no headers. The list stays owned by the message.
        guard rd_kafka_message_headers(message, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR, let headers else {
            return []
        }
        var result: [KafkaHeader] = []
        var index = 0
        while true {
            var name: UnsafePointer<CChar>?
            var value: UnsafeRawPointer?
            var size = 0
            guard rd_kafka_header_get_all(headers, index, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR,
                let name
            else { break }
            result.append(
                KafkaHeader(
                    key: String(cString: name),
                    value: value.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) }
                ))
            index += 1
        }
        return result
    }
}
