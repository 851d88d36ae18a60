import CropGeometry
import Foundation
import SwiftProtobuf

/// How a job ended, for metrics.
public enum CropOutcome: String, Sendable, Hashable, CaseIterable {
    case applied
    case duplicate
    case superseded
    case failed
    case forgotten
}

/// Container format of a source, from the header probe.
public enum SourceImageFormat: String, Sendable, Hashable, CaseIterable {
    case jpeg, png, webp, heif, avif, gif, tiff, other
}

/// Milliseconds per stage of the last attempt and its total; 0 for a stage not reached. Where each stage starts and
/// ends is `crop_metrics.proto`'s `StageLatency` (the worker's `JobStage`).
public struct StageLatencies: Sendable, Hashable {
    public var fetchMs: Double
    public var probeMs: Double
    public var renderMs: Double
    public var encodeMs: Double
    public var uploadMs: Double
    public var dbMs: Double
    public var totalMs: Double

    public init(
        fetchMs: Double = 0, probeMs: Double = 0, renderMs: Double = 0, encodeMs: Double = 0, uploadMs: Double = 0,
        dbMs: Double = 0, totalMs: Double = 0
    ) {
        self.fetchMs = fetchMs
        self.probeMs = probeMs
        self.renderMs = renderMs
        self.encodeMs = encodeMs
        self.uploadMs = uploadMs
        self.dbMs = dbMs
        self.totalMs = totalMs
    }
}

/// The numbers one job reports (`CropMetrics`), as plain Swift values: numbers, flags and
/// enums only, like the message. Fill what the job reached; leave the rest at zero / `nil`.
public struct CropMetricsSample: Sendable, Hashable {
    public var outcome: CropOutcome
    public var errorCode: CropErrorCode?
    public var errorClass: CropErrorClass?
    public var attempts: Int = 1

    public var sourceWidth: Int = 0
    public var sourceHeight: Int = 0
    public var sourceBytes: Int = 0
    public var sourceFormat: SourceImageFormat?
    /// EXIF orientation 1–8, 0 for none.
    public var orientation: Int = 0
    public var decodeWidth: Int = 0
    public var decodeHeight: Int = 0
    /// 1 = full-resolution decode.
    public var shrinkFactor: Int = 0

    /// Which kind of geometry the request carried; `nil` when the request was unreadable.
    public var geometry: CropInputKind?
    public var sMin: Double = 0
    public var sMax: Double = 0
    public var sQuality: Double = 0
    /// 0 for a centred crop.
    public var scaleRequested: Double = 0
    public var scaleApplied: Double = 0
    public var zoomClamped = false
    public var qualityClamped = false
    public var qualityLimited = false
    public var panClamped = false
    public var density: Double = 0
    public var lowDensity = false

    public var fallbackUsed = false
    public var memoryReservedBytes: Int = 0
    /// The avatar's primary format (`format_encodes` lists every format written).
    public var outputFormat: AvatarFormat?
    public var outputSize: Int = 0
    /// JPEG quality; 0 without a JPEG rendition.
    public var quality: Int = 0
    /// Per output format: renditions, bytes and encode time (a rendered job; empty otherwise).
    public var formatEncodes: [FormatEncode] = []
    public var outputBytes: Int = 0
    public var extraRenditions: Int = 0
    public var blurHashComputed = false
    /// The face rule: faces found, the best score, the small decode and detection's time, whether the square is
    /// the rule's (all zero when no face was looked for).
    public var faceCount: Int = 0
    public var faceBestScore: Double = 0
    public var faceDetectMs: Double = 0
    public var faceRuleUsed = false

    public var latency = StageLatencies()
    public var queueWaitMs: Double = 0
    /// From `requested_at` to when the job finished.
    public var endToEndMs: Double = 0
    /// When the job finished, rounded down to `finishedAtGranularity` whatever it is set to: the result event says
    /// the exact time, and an exact one here would join this record to its result (docs/DATA.md, window 5).
    public var finishedAt: Date? {
        didSet { finishedAt = finishedAt.map(Self.coarse) }
    }
    /// The granularity of `finishedAt`, and of the metrics record's Kafka timestamp: a minute.
    public static let finishedAtGranularity: TimeInterval = 60

    /// `date` rounded down to `finishedAtGranularity`.
    public static func coarse(_ date: Date) -> Date {
        let granularity = finishedAtGranularity
        return Date(timeIntervalSince1970: (date.timeIntervalSince1970 / granularity).rounded(.down) * granularity)
    }

    public init(outcome: CropOutcome, errorCode: CropErrorCode? = nil, errorClass: CropErrorClass? = nil) {
        self.outcome = outcome
        self.errorCode = errorCode
        self.errorClass = errorClass ?? errorCode?.defaultClass
    }

    /// Copies the crop math's decisions (sizes, zoom bounds, clamps, density).
    public mutating func record(plan: CropPlan) {
        sourceWidth = plan.source.width
        sourceHeight = plan.source.height
        sMin = plan.sMin
        sMax = plan.sMax
        sQuality = plan.sQuality
        scaleRequested = plan.scaleRequested ?? 0
        scaleApplied = plan.scaleApplied
        zoomClamped = plan.zoomClamped
        qualityClamped = plan.qualityClamped
        qualityLimited = plan.qualityLimited
        panClamped = plan.panClamped
        density = plan.density
        lowDensity = plan.lowDensity
    }

    /// Copies what the request asked for (geometry kind, output size, its own formats, quality).
    public mutating func record(request: ValidatedCropRequest) {
        geometry = CropInputKind(request.input)
        outputSize = request.outputSize
        record(formats: request.formats ?? [], extraFormats: request.extraFormats ?? [], quality: request.quality)
    }

    /// The formats a job wrote (the avatar's first) and the request's JPEG quality.
    public mutating func record(formats: [AvatarFormat], extraFormats: [AvatarFormat], quality jpegQuality: Int) {
        outputFormat = formats.first
        quality = (formats + extraFormats).contains(.jpeg) ? jpegQuality : 0
    }

    /// One output format's encodes in one job (`CropMetrics.FormatEncode`).
    public struct FormatEncode: Sendable, Hashable {
        public var format: AvatarFormat
        public var renditions: Int
        public var bytes: Int
        public var encodeMs: Double

        public init(format: AvatarFormat, renditions: Int, bytes: Int, encodeMs: Double) {
            self.format = format
            self.renditions = renditions
            self.bytes = bytes
            self.encodeMs = encodeMs
        }
    }

    /// The message for the metrics topic.
    public var message: Avatar_Crop_V1_CropMetrics { Avatar_Crop_V1_CropMetrics(self) }
}

/// Which kind of geometry a request carried.
public enum CropInputKind: String, Sendable, Hashable, CaseIterable {
    case centred, pose, rect

    public init(_ input: CropInput) {
        switch input {
        case .centred: self = .centred
        case .pose: self = .pose
        case .rect: self = .rect
        }
    }
}

extension Avatar_Crop_V1_CropMetrics {
    /// The message for a sample. Counts are clamped into the field types.
    public init(_ sample: CropMetricsSample) {
        self.init()
        outcome = sample.outcome.wireValue
        errorCode = sample.errorCode?.wireValue ?? .unspecified
        errorClass = sample.errorClass?.wireValue ?? .unspecified
        attempts = UInt32(clamping: sample.attempts)
        sourceWidth = UInt32(clamping: sample.sourceWidth)
        sourceHeight = UInt32(clamping: sample.sourceHeight)
        sourceBytes = UInt64(clamping: sample.sourceBytes)
        sourceFormat = sample.sourceFormat?.wireValue ?? .unspecified
        orientation = UInt32(clamping: sample.orientation)
        decodeWidth = UInt32(clamping: sample.decodeWidth)
        decodeHeight = UInt32(clamping: sample.decodeHeight)
        shrinkFactor = UInt32(clamping: sample.shrinkFactor)
        geometry = sample.geometry?.wireValue ?? .unspecified
        sMin = sample.sMin
        sMax = sample.sMax
        sQuality = sample.sQuality
        scaleRequested = sample.scaleRequested
        scaleApplied = sample.scaleApplied
        zoomClamped = sample.zoomClamped
        qualityClamped = sample.qualityClamped
        qualityLimited = sample.qualityLimited
        panClamped = sample.panClamped
        density = sample.density
        lowDensity = sample.lowDensity
        fallbackUsed = sample.fallbackUsed
        memoryReservedBytes = UInt64(clamping: sample.memoryReservedBytes)
        outputFormat = sample.outputFormat?.wireValue ?? .unspecified
        outputSize = UInt32(clamping: sample.outputSize)
        quality = UInt32(clamping: sample.quality)
        outputBytes = UInt64(clamping: sample.outputBytes)
        extraRenditions = UInt32(clamping: sample.extraRenditions)
        blurhashComputed = sample.blurHashComputed
        faceCount = UInt32(clamping: sample.faceCount)
        faceBestScore = sample.faceBestScore
        faceDetectMs = sample.faceDetectMs
        faceRuleUsed = sample.faceRuleUsed
        formatEncodes = sample.formatEncodes.map { encode in
            var wire = Avatar_Crop_V1_CropMetrics.FormatEncode()
            wire.format = encode.format.wireValue
            wire.renditions = UInt32(clamping: encode.renditions)
            wire.bytes = UInt64(clamping: encode.bytes)
            wire.encodeMs = encode.encodeMs
            return wire
        }
        var stages = Avatar_Crop_V1_CropMetrics.StageLatency()
        stages.fetchMs = sample.latency.fetchMs
        stages.probeMs = sample.latency.probeMs
        stages.renderMs = sample.latency.renderMs
        stages.encodeMs = sample.latency.encodeMs
        stages.uploadMs = sample.latency.uploadMs
        stages.dbMs = sample.latency.dbMs
        stages.totalMs = sample.latency.totalMs
        latency = stages
        queueWaitMs = sample.queueWaitMs
        endToEndMs = sample.endToEndMs
        if let finishedAt = sample.finishedAt { self.finishedAt = Google_Protobuf_Timestamp(date: finishedAt) }
    }
}

extension CropOutcome {
    public var wireValue: Avatar_Crop_V1_CropMetrics.Outcome {
        switch self {
        case .applied: .applied
        case .duplicate: .duplicate
        case .superseded: .superseded
        case .failed: .failed
        case .forgotten: .forgotten
        }
    }

    /// The outcome of a successful job with this disposition.
    public init(_ disposition: CropDisposition) {
        switch disposition {
        case .applied: self = .applied
        case .duplicate: self = .duplicate
        case .superseded: self = .superseded
        case .forgotten: self = .forgotten
        }
    }
}

extension SourceImageFormat {
    public var wireValue: Avatar_Crop_V1_CropMetrics.SourceFormat {
        switch self {
        case .jpeg: .jpeg
        case .png: .png
        case .webp: .webp
        case .heif: .heif
        case .avif: .avif
        case .gif: .gif
        case .tiff: .tiff
        case .other: .other
        }
    }
}

extension CropInputKind {
    public var wireValue: Avatar_Crop_V1_CropMetrics.Geometry {
        switch self {
        case .centred: .centred
        case .pose: .pose
        case .rect: .rect
        }
    }
}
