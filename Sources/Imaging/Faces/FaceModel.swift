import Crypto
import Foundation

/// The face detector's model file (docs/ARCHITECTURE.md §2, "Faces"): YuNet 2023mar, pinned by its SHA-256 and
/// installed beside the worker by `scripts/fetch-face-model.sh`. Its bytes are read and checked once per process;
/// the network is built from these bytes, never from the path again.
public struct FaceModel: Sendable {
    /// The file's name wherever it is installed.
    public static let fileName = "face_detection_yunet_2023mar.onnx"
    /// The pinned SHA-256 of the file (the same pin as `scripts/fetch-face-model.sh`).
    public static let sha256 = "8f2383e4dd3cfbb4553ea8718107fc0423210dc964f9f4280604804ed2552fa4"
    /// Larger files are not this model (it is 232,589 bytes); refused before they are read whole.
    static let maxBytes = 4 << 20

    public let bytes: [UInt8]

    /// Reads the model at `path` and checks its hash.
    public static func load(path: String) throws(FaceDetectionError) -> FaceModel {
        let data: Data
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            if let size = attributes[.size] as? Int, size > maxBytes {
                throw FaceDetectionError(.modelInvalid, detail: "the model file is \(size) bytes")
            }
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch let error as FaceDetectionError {
            throw error
        } catch {
            throw FaceDetectionError(.modelMissing, detail: "cannot read the face model: \(error.localizedDescription)")
        }
        let digest = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
        guard digest == sha256 else {
            throw FaceDetectionError(.modelInvalid, detail: "the face model's SHA-256 is \(digest), not the pinned one")
        }
        return FaceModel(bytes: [UInt8](data))
    }

    /// Why the model at `path` cannot be used (missing, unreadable, not the pinned file), or nil when it can.
    public static func problem(path: String) -> FaceDetectionError? {
        do {
            _ = try load(path: path)
            return nil
        } catch {
            return error
        }
    }

    /// Where the installed model is for the program `executable` (resolved through symlinks): beside it, or in
    /// `../share/avatar-cropper/` from its directory (the image's layout), the first that exists; beside it if
    /// neither does.
    public static func defaultPath(executable: String = "/proc/self/exe") -> String {
        let resolved = URL(fileURLWithPath: executable).resolvingSymlinksInPath()
        let directory = resolved.deletingLastPathComponent()
        let beside = directory.appendingPathComponent(fileName).path
        let shared = directory.deletingLastPathComponent()
            .appendingPathComponent("share/avatar-cropper/\(fileName)").path
        for path in [beside, shared] where FileManager.default.fileExists(atPath: path) {
            return path
        }
        return beside
    }
}

/// Why faces could not be looked for. Never a job's failure: the render falls back to the centred square and
/// reports the code (`FaceReport.error`).
public struct FaceDetectionError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    public enum Code: String, Sendable, Hashable, Codable {
        /// No model is loaded in this process, or its file cannot be read.
        case modelMissing = "model_missing"
        /// The file is not the pinned model, or OpenCV cannot build a network from it.
        case modelInvalid = "model_invalid"
        /// The small decode for detection failed (the render itself may still succeed).
        case decodeFailed = "decode_failed"
        /// OpenCV failed on the image.
        case detectFailed = "detect_failed"
    }

    public var code: Code
    /// Diagnostic text (no user data).
    public var detail: String

    public init(_ code: Code, detail: String = "") {
        self.code = code
        self.detail = detail
    }

    public var description: String { "FaceDetectionError(\(code.rawValue))" }
    public var debugDescription: String { detail.isEmpty ? description : "\(description): \(detail)" }
}
