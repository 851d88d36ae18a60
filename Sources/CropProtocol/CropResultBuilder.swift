import CropGeometry
import Foundation
import SwiftProtobuf

/// What a successful job did (the `Disposition` enum of crop_result.proto).
public enum CropDisposition: String, Sendable, Hashable, CaseIterable {
    /// A new avatar version was rendered, uploaded and published.
    case applied
    /// The job had already been applied (redelivery or replay): nothing changed.
    case duplicate
    /// A newer request of the user is already applied: this one was not.
    case superseded
    /// A forget request erased the user's avatars (avatar path empty, version 0).
    case forgotten

    public var wireValue: Avatar_Crop_V1_CropResult.Disposition {
        switch self {
        case .applied: .applied
        case .duplicate: .duplicate
        case .superseded: .superseded
        case .forgotten: .forgotten
        }
    }
}

/// A published object besides the avatar's primary one: the avatar in another format, or an extra size.
public struct CropRendition: Sendable, Hashable {
    public var size: Int
    /// Object-store key, as the caller laid it out (`Storage`'s `AvatarKeys`, docs/ARCHITECTURE.md §3).
    public var path: String
    /// Public URL with "?v={version}", or empty.
    public var url: String
    public var format: AvatarFormat
    /// The object's size in bytes.
    public var bytes: Int

    public init(size: Int, path: String, url: String = "", format: AvatarFormat = .png, bytes: Int = 0) {
        self.size = size
        self.path = path
        self.url = url
        self.format = format
        self.bytes = bytes
    }
}

/// The user-facing notices a success may carry.
public enum CropNotice {
    /// The job was rendered from the thumbnail-resolution decode (docs/ARCHITECTURE.md §2).
    public static let fallback = "Using an optimized preview to finish the crop"
}

/// The avatar a successful job leaves published (for `.duplicate` and `.superseded`: the one
/// already there).
public struct CropSuccess: Sendable, Hashable {
    public var avatarPath: String
    public var avatarVersion: Int64
    /// Public URL with "?v={avatarVersion}" (the caller's, from `Storage`'s `AvatarKeys.versionedURL`), or empty.
    public var url: String
    public var size: Int
    public var format: AvatarFormat
    /// The avatar's bytes (applied jobs; 0 otherwise).
    public var bytes: Int = 0
    public var disposition: CropDisposition
    public var blurHash: String?
    public var qualityLimited: Bool
    public var fallbackUsed: Bool
    /// Shown to the user; `fallbackUsed` without a notice gets `CropNotice.fallback`.
    public var notice: String?
    /// The zoom or pan clamp engaged.
    public var cropAdjusted: Bool
    public var renditions: [CropRendition]
    /// The crop math's decisions for a rendered job (nil for duplicate and superseded jobs).
    public var plan: CropPlan?
    /// The faces the face rule looked at (a request without a pose, default face), best first; empty otherwise.
    public var faces: [FaceBox] = []
    /// Indices into `faces` of the faces the square frames.
    public var keptFaces: [Int] = []
    /// The square is the face rule's.
    public var faceRuleUsed = false

    public init(
        avatarPath: String,
        avatarVersion: Int64,
        url: String = "",
        size: Int,
        format: AvatarFormat,
        disposition: CropDisposition = .applied,
        blurHash: String? = nil,
        qualityLimited: Bool = false,
        fallbackUsed: Bool = false,
        notice: String? = nil,
        cropAdjusted: Bool = false,
        renditions: [CropRendition] = [],
        plan: CropPlan? = nil
    ) {
        self.avatarPath = avatarPath
        self.avatarVersion = avatarVersion
        self.url = url
        self.size = size
        self.format = format
        self.disposition = disposition
        self.blurHash = blurHash
        self.qualityLimited = qualityLimited
        self.fallbackUsed = fallbackUsed
        self.notice = notice
        self.cropAdjusted = cropAdjusted
        self.renditions = renditions
        self.plan = plan
    }
}

/// Builds `CropResult` messages from plain Swift values.
public enum CropResultBuilder {
    /// A success result for a request.
    public static func success(
        for request: ValidatedCropRequest, finishedAt: Date, _ success: CropSuccess
    ) -> Avatar_Crop_V1_CropResult {
        var result = header(
            jobID: request.jobID, userID: request.userID, requestedAt: request.requestedAt, finishedAt: finishedAt)
        var wire = Avatar_Crop_V1_CropResult.Success()
        wire.avatarPath = success.avatarPath
        wire.avatarVersion = success.avatarVersion
        wire.url = success.url
        wire.size = UInt32(clamping: success.size)
        wire.format = success.format.wireValue
        wire.disposition = success.disposition.wireValue
        wire.blurhash = success.blurHash ?? ""
        wire.qualityLimited = success.qualityLimited
        wire.fallbackUsed = success.fallbackUsed
        wire.notice = success.notice ?? (success.fallbackUsed ? CropNotice.fallback : "")
        wire.cropAdjusted = success.cropAdjusted
        wire.bytes = UInt64(clamping: success.bytes)
        // By size; a size's formats in the order given.
        let ordered = success.renditions.enumerated().sorted {
            ($0.element.size, $0.offset) < ($1.element.size, $1.offset)
        }
        wire.renditions = ordered.map(\.element).map { rendition in
            var entry = Avatar_Crop_V1_CropResult.Rendition()
            entry.size = UInt32(clamping: rendition.size)
            entry.path = rendition.path
            entry.url = rendition.url
            entry.format = rendition.format.wireValue
            entry.bytes = UInt64(clamping: rendition.bytes)
            return entry
        }
        if let plan = success.plan {
            var crop = Avatar_Crop_V1_CropResult.AppliedCrop()
            crop.sMin = plan.sMin
            crop.sMax = plan.sMax
            crop.scaleApplied = plan.scaleApplied
            crop.x = UInt32(clamping: plan.pixelCrop.x)
            crop.y = UInt32(clamping: plan.pixelCrop.y)
            crop.side = UInt32(clamping: plan.pixelCrop.side)
            crop.sourceWidth = UInt32(clamping: plan.source.width)
            crop.sourceHeight = UInt32(clamping: plan.source.height)
            let pose = appliedPose(plan, request: request)
            crop.poseScale = pose.scale
            crop.poseTx = pose.tx
            crop.poseTy = pose.ty
            crop.faceRuleUsed = success.faceRuleUsed
            crop.faces = success.faces.enumerated().map { index, face in
                var entry = Avatar_Crop_V1_CropResult.Face()
                entry.x = face.x
                entry.y = face.y
                entry.width = face.width
                entry.height = face.height
                entry.score = face.score
                entry.kept = success.keptFaces.contains(index)
                return entry
            }
            wire.crop = crop
        }
        result.success = wire
        return result
    }

    /// The pose that shows `plan`'s square in the editor, for the request's reference size (its zoom scaled by
    /// reference / source; offsets are in points either way), or the source's without a reference.
    static func appliedPose(_ plan: CropPlan, request: ValidatedCropRequest) -> EditorPose {
        var pose = CropGeometry.pose(of: plan, settings: request.editorSettings)
        switch request.input {
        case .pose(_, let reference?), .rect(_, let reference?):
            pose.scale *= Double(plan.source.width) / Double(reference.width)
        case .centred, .pose(_, nil), .rect(_, nil):
            break
        }
        return pose
    }

    /// A failure result. `jobID` / `userID` are `nil` when the request did not yield valid
    /// ones; `errorClass` defaults to the code's; the user message is always the code's (`CropErrorCode.userMessage`).
    public static func failure(
        jobID: String?,
        userID: UUID?,
        requestedAt: Date?,
        finishedAt: Date,
        code: CropErrorCode,
        errorClass: CropErrorClass? = nil,
        attempts: Int
    ) -> Avatar_Crop_V1_CropResult {
        var result = header(jobID: jobID, userID: userID, requestedAt: requestedAt, finishedAt: finishedAt)
        var wire = Avatar_Crop_V1_CropResult.Failure()
        wire.errorCode = code.rawValue
        wire.errorClass = (errorClass ?? code.defaultClass).wireValue
        wire.userMessage = code.userMessage
        wire.attempts = UInt32(clamping: max(attempts, 1))
        result.failure = wire
        return result
    }

    /// A failure result for a validated request.
    public static func failure(
        for request: ValidatedCropRequest,
        finishedAt: Date,
        code: CropErrorCode,
        errorClass: CropErrorClass? = nil,
        attempts: Int
    ) -> Avatar_Crop_V1_CropResult {
        failure(
            jobID: request.jobID, userID: request.userID, requestedAt: request.requestedAt, finishedAt: finishedAt,
            code: code, errorClass: errorClass, attempts: attempts)
    }

    /// A failure result for a request that could not be read or validated (permanent, one attempt).
    public static func failure(for error: ProtocolError, finishedAt: Date) -> Avatar_Crop_V1_CropResult {
        failure(
            jobID: error.jobID, userID: error.userID, requestedAt: nil, finishedAt: finishedAt,
            code: error.errorCode, errorClass: .permanent, attempts: 1)
    }

    private static func header(
        jobID: String?, userID: UUID?, requestedAt: Date?, finishedAt: Date
    ) -> Avatar_Crop_V1_CropResult {
        var result = Avatar_Crop_V1_CropResult()
        result.jobID = jobID ?? ""
        result.userID = userID?.uuidString.lowercased() ?? ""
        result.finishedAt = Google_Protobuf_Timestamp(date: finishedAt)
        if let requestedAt { result.requestedAt = Google_Protobuf_Timestamp(date: requestedAt) }
        return result
    }
}
