extension String {
    /// The NUL-terminated text librdkafka wrote into an error buffer.
    init(errorBuffer: [CChar]) {
        let bytes = errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        self.init(decoding: bytes, as: UTF8.self)
    }
}
