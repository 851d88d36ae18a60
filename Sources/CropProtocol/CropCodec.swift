import SwiftProtobuf

/// Reads and writes the crop messages in either wire format.
public enum CropCodec {
    /// Largest message accepted, in bytes. A crop request is well under 1 KiB.
    public static let maxMessageBytes = 64 * 1024

    /// Decodes a request, choosing the format from the `content-type` header value. Does not
    /// validate it: see `ValidatedCropRequest(_:)` or `validatedRequest(_:contentType:)`.
    public static func decodeRequest(
        _ bytes: [UInt8], contentType: String?
    ) throws(ProtocolError) -> Avatar_Crop_V1_CropRequest {
        try decode(Avatar_Crop_V1_CropRequest.self, from: bytes, format: CropWireFormat(contentType: contentType))
    }

    /// Decodes and validates a request in one step.
    public static func validatedRequest(
        _ bytes: [UInt8], contentType: String?
    ) throws(ProtocolError) -> ValidatedCropRequest {
        try ValidatedCropRequest(decodeRequest(bytes, contentType: contentType))
    }

    /// Decodes any message. Binary keeps unknown fields (newer producers); JSON rejects unknown
    /// field names, so a misspelt field fails loudly instead of being ignored.
    public static func decode<M: SwiftProtobuf.Message>(
        _ type: M.Type, from bytes: [UInt8], format: CropWireFormat
    ) throws(ProtocolError) -> M {
        guard bytes.count <= maxMessageBytes else {
            throw ProtocolError(
                .malformed, reason: "message larger than \(maxMessageBytes) bytes", detail: "\(bytes.count) bytes")
        }
        do {
            switch format {
            case .protobuf:
                return try M(serializedBytes: bytes)
            case .json:
                return try M(jsonUTF8Bytes: bytes)
            }
        } catch {
            throw ProtocolError(
                .malformed, reason: "not a \(M.protoMessageName) in \(format.name)", detail: String(describing: error))
        }
    }

    /// Encodes any message: binary protobuf, or the JSON mapping with lowerCamelCase names
    /// (`preserveProtoFieldNames` keeps the .proto names instead).
    public static func encode(
        _ message: some SwiftProtobuf.Message, format: CropWireFormat = .protobuf, preserveProtoFieldNames: Bool = false
    ) throws(ProtocolError) -> [UInt8] {
        do {
            switch format {
            case .protobuf:
                return try message.serializedBytes()
            case .json:
                var options = JSONEncodingOptions()
                options.preserveProtoFieldNames = preserveProtoFieldNames
                return try message.jsonUTF8Bytes(options: options)
            }
        } catch {
            throw ProtocolError(
                .encodingFailed, reason: "could not encode a \(type(of: message).protoMessageName) as \(format.name)",
                detail: String(describing: error))
        }
    }
}

extension CropWireFormat {
    fileprivate var name: String {
        switch self {
        case .protobuf: "protobuf"
        case .json: "JSON"
        }
    }
}
