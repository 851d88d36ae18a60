import Foundation
import Logging
import Synchronization

/// A swift-log handler that writes one JSON object per line, for log collectors (`log.format=json`).
///
/// Each line holds, in this order: `time` (RFC 3339, UTC, microseconds), `level`, `label`, `source` (the
/// emitting module), `message`, then the metadata as top-level fields (`job_id`, `partition`, ... from
/// `LogKey`), and `error` when the event carries one. A metadata key that names one of those fields is
/// written with a leading underscore, so nothing is lost and nothing overwritten. Values are strings, or
/// arrays and objects for list and dictionary metadata.
///
/// librdkafka's and libpq's messages arrive here too: the Kafka clients serve librdkafka's log queue
/// through their `Logger` (`kafka.facility` metadata) and the Postgres connections receive libpq's notices
/// through theirs (`severity`, `sqlstate`).
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public var logLevel: Logger.Level = .info
    private let label: String
    private let output: LogLineOutput

    /// A handler writing to `output` (standard error unless a test gives its own).
    public init(
        label: String, metadataProvider: Logger.MetadataProvider? = nil, output: LogLineOutput = .standardError
    ) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() {
            merged.merge(provided) { _, provided in provided }
        }
        if let explicit = event.metadata {
            merged.merge(explicit) { _, explicit in explicit }
        }
        output.append(
            Self.line(
                time: Self.timestamp(), level: event.level, label: label, source: event.source,
                message: event.message.description, metadata: merged, error: event.error.map { "\($0)" }))
    }

    /// The fields every line has, in the order written.
    static let fixedFields = ["time", "level", "label", "source", "message", "error"]

    /// One line of JSON, newline included.
    static func line(
        time: String, level: Logger.Level, label: String, source: String, message: String,
        metadata: Logger.Metadata, error: String?
    ) -> String {
        var json = "{"
        appendField("time", .string(time), to: &json, first: true)
        appendField("level", .string(level.rawValue), to: &json)
        appendField("label", .string(label), to: &json)
        appendField("source", .string(source), to: &json)
        appendField("message", .string(message), to: &json)
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            appendField(fixedFields.contains(key) ? "_" + key : key, value, to: &json)
        }
        if let error {
            appendField("error", .string(error), to: &json)
        }
        json += "}\n"
        return json
    }

    private static func appendField(
        _ key: String, _ value: Logger.Metadata.Value, to json: inout String, first: Bool = false
    ) {
        if !first { json += "," }
        appendString(key, to: &json)
        json += ":"
        appendValue(value, to: &json)
    }

    private static func appendValue(_ value: Logger.Metadata.Value, to json: inout String) {
        switch value {
        case .string(let text):
            appendString(text, to: &json)
        case .stringConvertible(let convertible):
            appendString(convertible.description, to: &json)
        case .array(let values):
            json += "["
            for (index, element) in values.enumerated() {
                if index > 0 { json += "," }
                appendValue(element, to: &json)
            }
            json += "]"
        case .dictionary(let values):
            json += "{"
            for (index, (key, element)) in values.sorted(by: { $0.key < $1.key }).enumerated() {
                appendField(key, element, to: &json, first: index == 0)
            }
            json += "}"
        }
    }

    /// A JSON string literal (RFC 8259: quote, backslash and control characters escaped).
    static func appendString(_ text: String, to json: inout String) {
        json += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": json += "\\\""
            case "\\": json += "\\\\"
            case "\n": json += "\\n"
            case "\r": json += "\\r"
            case "\t": json += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                json += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: json.unicodeScalars.append(scalar)
            }
        }
        json += "\""
    }

    /// The current time in RFC 3339, UTC, with microseconds: `2026-01-31T09:05:07.123456Z`.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return timestamp(seconds: now.tv_sec, microseconds: Int(now.tv_nsec) / 1000)
    }

    static func timestamp(seconds: time_t, microseconds: Int) -> String {
        var seconds = seconds
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return padded(Int(parts.tm_year) + 1900, 4) + "-" + padded(Int(parts.tm_mon) + 1, 2) + "-"
            + padded(Int(parts.tm_mday), 2) + "T" + padded(Int(parts.tm_hour), 2) + ":" + padded(Int(parts.tm_min), 2)
            + ":" + padded(Int(parts.tm_sec), 2) + "." + padded(microseconds, 6) + "Z"
    }
}

/// Where log lines go: whole lines, one `write(2)` loop at a time, so lines from different threads never
/// interleave.
public final class LogLineOutput: Sendable {
    private let descriptor: Int32
    private let lock = Mutex<Void>(())

    public init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    public static let standardError = LogLineOutput(descriptor: STDERR_FILENO)

    func append(_ line: String) {
        var line = line
        line.withUTF8 { bytes in
            lock.withLock { _ in
                var offset = 0
                while offset < bytes.count {
                    let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        return  // nowhere left to report a failing log stream
                    }
                    offset += written
                }
            }
        }
    }
}
