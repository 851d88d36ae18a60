import CropGeometry
import Foundation
import SwiftProtobuf

/// A crop request whose every field has been checked and defaulted: what the worker acts on.
/// Build it from a decoded message with `init(_:)`, or directly (producers, tests) and send
/// `message`.
public struct ValidatedCropRequest: Sendable, Hashable {
    /// 1–128 characters of `[A-Za-z0-9._:-]`.
    public var jobID: String
    public var userID: UUID
    /// Object-store key of the uploaded original (relative, no "." or ".." segments).
    public var sourceKey: String
    /// The pose or rectangle and the image size it refers to, or the centred square.
    public var input: CropInput
    /// Side of the avatar in pixels (`editorSettings.outputSize` holds the same value).
    public var outputSize: Int
    /// The avatar's formats, the first the one `avatar_path` names; nil: the fleet's (`formats(fleet:extras:)`).
    public var formats: [AvatarFormat]?
    /// The extra sizes' formats; nil: the fleet's, else the avatar's.
    public var extraFormats: [AvatarFormat]?
    /// JPEG quality 1–100 (kept, but unused, without a JPEG rendition).
    public var quality: Int
    /// Distinct extra rendition sides, ascending, without `outputSize`.
    public var extraSizes: [Int]
    public var wantBlurHash: Bool
    /// When the user confirmed the edit; orders the requests of one user.
    public var requestedAt: Date
    /// Colour transparent pixels are flattened onto; `nil` means the default (white).
    public var background: RGBColor?
    /// Screen scale and mask diameter from the pose (defaults for other inputs), the output
    /// size, and the server's own policy values (quality and zoom multipliers) as defaults.
    public var editorSettings: EditorSettings
    /// A crop, or a forget (then `sourceKey` is empty and the crop fields are the defaults).
    public var kind: CropRequestKind = .crop
    /// The square a request without a pose gets; `nil`: the fleet's default (`image.default-crop`).
    public var defaultCrop: DefaultCrop?

    public init(
        jobID: String,
        userID: UUID,
        sourceKey: String,
        input: CropInput = .centred,
        outputSize: Int = CropRequestLimits.defaultOutputSize,
        formats: [AvatarFormat]? = nil,
        extraFormats: [AvatarFormat]? = nil,
        quality: Int = CropRequestLimits.defaultQuality,
        extraSizes: [Int] = [],
        wantBlurHash: Bool = false,
        requestedAt: Date,
        background: RGBColor? = nil,
        editorSettings: EditorSettings? = nil
    ) {
        self.jobID = jobID
        self.userID = userID
        self.sourceKey = sourceKey
        self.input = input
        self.outputSize = outputSize
        self.formats = formats
        self.extraFormats = extraFormats
        self.quality = quality
        self.extraSizes = extraSizes
        self.wantBlurHash = wantBlurHash
        self.requestedAt = requestedAt
        self.background = background
        self.editorSettings = editorSettings ?? EditorSettings(outputSize: outputSize)
    }

    /// A request to forget `userID` (`CropRequestKind.forget`).
    public static func forget(jobID: String, userID: UUID, requestedAt: Date) -> ValidatedCropRequest {
        var request = ValidatedCropRequest(jobID: jobID, userID: userID, sourceKey: "", requestedAt: requestedAt)
        request.kind = .forget
        return request
    }

    /// Validates a decoded request, applying the documented defaults. Checks `job_id` and
    /// `user_id` first, so an error about any later field carries both (`ProtocolError.jobID`,
    /// `.userID`) and the failure result can name the job.
    public init(_ message: Avatar_Crop_V1_CropRequest) throws(ProtocolError) {
        guard !message.jobID.isEmpty else {
            throw ProtocolError(.invalidJobID, reason: "job_id is missing")
        }
        guard CropRequestLimits.isValidJobID(message.jobID) else {
            throw ProtocolError(.invalidJobID, reason: "job_id must be 1-128 characters of [A-Za-z0-9._:-]")
        }
        let jobID = message.jobID
        guard !message.userID.isEmpty else {
            throw ProtocolError(.invalidUserID, reason: "user_id is missing", jobID: jobID)
        }
        guard let userID = CropRequestLimits.parseUserID(message.userID) else {
            throw ProtocolError(.invalidUserID, reason: "user_id must be a UUID", jobID: jobID)
        }
        let check = FieldChecker(jobID: jobID, userID: userID)

        guard message.hasRequestedAt else { throw check.missing("requested_at") }
        let stamp = message.requestedAt
        guard stamp.seconds > 0, stamp.seconds <= Self.maxTimestampSeconds, (0..<1_000_000_000).contains(stamp.nanos)
        else { throw check.invalid("requested_at", "requested_at must be a valid time after 1970") }
        let requestedAt = stamp.date

        switch message.kind {
        case .unspecified, .crop:
            break
        case .forget:
            try check.require(message.sourceKey.isEmpty, "source_key", "a forget request carries no source_key")
            self = .forget(jobID: jobID, userID: userID, requestedAt: requestedAt)
            return
        case .UNRECOGNIZED:
            throw check.invalid("kind", "unknown request kind")
        }

        guard !message.sourceKey.isEmpty else { throw check.missing("source_key") }
        guard CropRequestLimits.isValidSourceKey(message.sourceKey) else {
            throw check.invalid(
                "source_key", "source_key must be a relative key without empty, '.' or '..' segments")
        }

        let output = message.hasOutput ? message.output : Avatar_Crop_V1_OutputSpec()
        let outputSize = output.size == 0 ? CropRequestLimits.defaultOutputSize : Int(output.size)
        try check.require(CropRequestLimits.outputSizes.contains(outputSize), "output.size", "output size out of range")
        var formats = try Self.formats(output.formats, field: "output.formats", check)
        if output.format != .unspecified {
            guard let format = AvatarFormat(wireValue: output.format) else {
                throw check.invalid("output.format", "unknown output format")
            }
            try check.require(
                (formats?.first ?? format) == format, "output.formats",
                "output.formats must start with output.format when both are set")
            formats = formats ?? [format]
        }
        let extraFormats = try Self.formats(message.extraFormats, field: "extra_formats", check)
        let quality = output.quality == 0 ? CropRequestLimits.defaultQuality : Int(output.quality)
        try check.require(CropRequestLimits.qualities.contains(quality), "output.quality", "quality must be 1-100")

        var extraSizes: [Int] = []
        for size in message.extraSizes.map(Int.init) {
            try check.require(CropRequestLimits.outputSizes.contains(size), "extra_sizes", "extra size out of range")
            if size != outputSize, !extraSizes.contains(size) { extraSizes.append(size) }
        }
        try check.require(
            extraSizes.count <= CropRequestLimits.maxExtraSizes, "extra_sizes", "too many extra sizes")
        extraSizes.sort()

        var background: RGBColor?
        if message.hasBackground {
            guard let colour = RGBColor(hex: message.background) else {
                throw check.invalid("background", "background must be #RRGGBB")
            }
            background = colour
        }

        let reference = try Self.reference(message, check)
        var settings = EditorSettings(outputSize: outputSize)
        let input: CropInput
        switch message.geometry {
        case nil:
            input = .centred
        case .pose(let pose)?:
            for (value, field) in [(pose.scale, "pose.scale"), (pose.tx, "pose.tx"), (pose.ty, "pose.ty")] {
                try check.require(value.isFinite, field, "pose values must be finite")
            }
            try check.require(pose.scale > 0, "pose.scale", "pose scale must be positive")
            if pose.maskDiameterPt != 0 {
                try check.require(
                    CropRequestLimits.maskDiameters.contains(pose.maskDiameterPt), "pose.mask_diameter_pt",
                    "mask diameter out of range")
                settings.maskDiameter = pose.maskDiameterPt
            }
            if pose.screenScale != 0 {
                try check.require(
                    CropRequestLimits.screenScales.contains(pose.screenScale), "pose.screen_scale",
                    "screen scale out of range")
                settings.screenScale = pose.screenScale
            }
            input = .pose(EditorPose(scale: pose.scale, tx: pose.tx, ty: pose.ty), reference: reference)
        case .rect(let rect)?:
            for (value, field) in [(rect.x, "rect.x"), (rect.y, "rect.y"), (rect.side, "rect.side")] {
                try check.require(value.isFinite, field, "rect values must be finite")
            }
            try check.require(rect.side > 0, "rect.side", "rect side must be positive")
            input = .rect(PixelRect(x: rect.x, y: rect.y, side: rect.side), reference: reference)
        }

        // A value this worker does not know (a newer producer's) is the fleet's default, not a failure.
        let defaultCrop: DefaultCrop?
        switch message.defaultCrop {
        case .face: defaultCrop = .face
        case .centre: defaultCrop = .centre
        case .unspecified, .UNRECOGNIZED: defaultCrop = nil
        }

        self.init(
            jobID: jobID, userID: userID, sourceKey: message.sourceKey, input: input, outputSize: outputSize,
            formats: formats, extraFormats: extraFormats, quality: quality, extraSizes: extraSizes,
            wantBlurHash: message.wantBlurhash,
            requestedAt: requestedAt, background: background, editorSettings: settings)
        self.defaultCrop = defaultCrop
    }

    /// The request as a message (for producers and tests). Screen scale and mask diameter are
    /// carried only for a pose.
    public var message: Avatar_Crop_V1_CropRequest {
        var message = Avatar_Crop_V1_CropRequest()
        message.jobID = jobID
        message.userID = userID.uuidString.lowercased()
        if kind == .forget {
            message.kind = kind.wireValue
            message.requestedAt = Google_Protobuf_Timestamp(date: requestedAt)
            return message
        }
        message.sourceKey = sourceKey
        switch input {
        case .centred:
            break
        case .pose(let pose, let reference):
            var wire = Avatar_Crop_V1_EditorPose()
            wire.scale = pose.scale
            wire.tx = pose.tx
            wire.ty = pose.ty
            wire.maskDiameterPt = editorSettings.maskDiameter
            wire.screenScale = editorSettings.screenScale
            message.pose = wire
            Self.setReference(reference, on: &message)
        case .rect(let rect, let reference):
            var wire = Avatar_Crop_V1_PixelRect()
            wire.x = rect.x
            wire.y = rect.y
            wire.side = rect.side
            message.rect = wire
            Self.setReference(reference, on: &message)
        }
        message.output.size = UInt32(clamping: outputSize)
        message.output.formats = formats?.map(\.wireValue) ?? []
        message.extraFormats = extraFormats?.map(\.wireValue) ?? []
        message.output.quality = UInt32(clamping: quality)
        message.extraSizes = extraSizes.map { UInt32(clamping: $0) }
        message.wantBlurhash = wantBlurHash
        message.requestedAt = Google_Protobuf_Timestamp(date: requestedAt)
        if let background { message.background = background.hex }
        switch defaultCrop {
        case nil: break
        case .face: message.defaultCrop = .face
        case .centre: message.defaultCrop = .centre
        }
        return message
    }

    /// The formats this request publishes: its own, the fleet's defaults (`image.formats`, `image.extra-formats`,
    /// nil when that is empty) where it names none; extra sizes without formats of their own anywhere take the
    /// avatar's.
    public func formats(fleet avatar: [AvatarFormat], extras: [AvatarFormat]?) -> RenditionFormats {
        let own = formats ?? avatar
        return RenditionFormats(avatar: own, extras: extraFormats ?? extras ?? own)
    }

    /// Refuses a `requested_at` more than `maxSkew` seconds after `now` (a wrong clock, or seconds sent as
    /// milliseconds): accepted, it would make every later real request of the user `SUPERSEDED`.
    public func checkClock(now: Date, maxSkew: TimeInterval) throws(ProtocolError) {
        guard requestedAt.timeIntervalSince(now) <= maxSkew else {
            throw ProtocolError(
                .invalidValue("requested_at"), reason: "requested_at is more than \(Int(maxSkew)) s in the future",
                jobID: jobID, userID: userID)
        }
    }

    /// 9999-12-31T23:59:59Z, the last second the protobuf JSON mapping can represent.
    static let maxTimestampSeconds: Int64 = 253_402_300_799

    /// A request's format list: nil when empty (the fleet's default), INVALID_REQUEST for an unnamed or unknown
    /// format, a format twice or too many.
    private static func formats(
        _ wire: [Avatar_Crop_V1_ImageFormat], field: String, _ check: FieldChecker
    ) throws(ProtocolError) -> [AvatarFormat]? {
        if wire.isEmpty { return nil }
        var formats: [AvatarFormat] = []
        for value in wire {
            guard let format = AvatarFormat(wireValue: value) else {
                throw check.invalid(
                    field,
                    value == .unspecified ? "\(field) names no format (UNSPECIFIED)" : "unknown format in \(field)")
            }
            formats.append(format)
        }
        if let problem = RenditionFormats.problem(formats) { throw check.invalid(field, "\(field): \(problem)") }
        return formats
    }

    private static func reference(
        _ message: Avatar_Crop_V1_CropRequest, _ check: FieldChecker
    ) throws(ProtocolError) -> PixelSize? {
        let width = Int(message.referenceWidth)
        let height = Int(message.referenceHeight)
        if width == 0 && height == 0 { return nil }
        try check.require(
            CropRequestLimits.referenceSides.contains(width), "reference_width", "reference width out of range")
        try check.require(
            CropRequestLimits.referenceSides.contains(height), "reference_height", "reference height out of range")
        return PixelSize(width: width, height: height)
    }

    private static func setReference(_ reference: PixelSize?, on message: inout Avatar_Crop_V1_CropRequest) {
        guard let reference else { return }
        message.referenceWidth = UInt32(clamping: reference.width)
        message.referenceHeight = UInt32(clamping: reference.height)
    }
}

/// Builds the errors of one validation, each carrying the already-validated ids.
private struct FieldChecker {
    let jobID: String
    let userID: UUID

    func missing(_ field: String) -> ProtocolError {
        ProtocolError(.missingField(field), reason: "\(field) is required", jobID: jobID, userID: userID)
    }

    func invalid(_ field: String, _ reason: String) -> ProtocolError {
        ProtocolError(.invalidValue(field), reason: reason, jobID: jobID, userID: userID)
    }

    func require(_ condition: Bool, _ field: String, _ reason: String) throws(ProtocolError) {
        if !condition { throw invalid(field, reason) }
    }
}
