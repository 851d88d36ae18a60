/// How a message is encoded on Kafka, announced by the `content-type` header (docs/ARCHITECTURE.md §4).
public enum CropWireFormat: Sendable, Hashable {
    /// Binary protobuf: `application/x-protobuf` (also `application/protobuf`,
    /// `application/vnd.google.protobuf`), or no header at all.
    case protobuf
    /// The protobuf JSON mapping: `application/json`. Field names in lowerCamelCase or as in the .proto file.
    case json

    /// The header value producers should send.
    public var contentType: String {
        switch self {
        case .protobuf: "application/x-protobuf"
        case .json: "application/json"
        }
    }

    /// The format a `content-type` header value announces; parameters (`; charset=utf-8`),
    /// case and surrounding spaces are ignored. A missing or empty header means protobuf.
    public init(contentType: String?) throws(ProtocolError) {
        guard let contentType else {
            self = .protobuf
            return
        }
        let mediaType =
            contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)
            .first.map { $0.trimmingSpaces().lowercased() } ?? ""
        switch mediaType {
        case "", "application/x-protobuf", "application/protobuf", "application/vnd.google.protobuf":
            self = .protobuf
        case "application/json":
            self = .json
        default:
            throw ProtocolError(
                .unsupportedContentType,
                reason: "content-type must be application/x-protobuf or application/json",
                detail: "content-type: \(contentType.prefix(100))")
        }
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }
}
