import Crdkafka

/// The librdkafka the clients run on.
public enum KafkaLibrary {
    /// Its version as the loaded library reports it (`rd_kafka_version_str`), e.g. "2.8.0".
    public static var version: String { String(cString: rd_kafka_version_str()) }
}
