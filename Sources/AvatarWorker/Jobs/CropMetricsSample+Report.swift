import CropGeometry
import CropProtocol
import Foundation
import Imaging

/// A finished job's record on the metrics topic (`crop_metrics.proto`), built from its report.
extension CropMetricsSample {
    /// The numeric-only metrics of a job (its record on the metrics topic); its stages are `JobStage`'s.
    init(_ report: JobReport) {
        var sample: CropMetricsSample
        switch report.outcome {
        case .success(let disposition): sample = CropMetricsSample(outcome: .init(disposition.wire))
        case .failure(let failure):
            sample = CropMetricsSample(outcome: .failed, errorCode: failure.code, errorClass: failure.errorClass)
            sample.attempts = failure.attempts
        }
        if let request = report.request { sample.record(request: request) }
        if let header = report.trace.header {
            sample.sourceWidth = header.orientedSize.width
            sample.sourceHeight = header.orientedSize.height
            sample.sourceBytes = header.byteCount
            sample.orientation = header.orientation
            sample.sourceFormat = SourceImageFormat(header.format)
        }
        if let render = report.trace.render {
            sample.record(plan: render.plan)
            sample.decodeWidth = render.decodeSize.width
            sample.decodeHeight = render.decodeSize.height
            sample.shrinkFactor = render.shrinkFactor
            sample.fallbackUsed = render.fallbackUsed
            sample.outputBytes = render.avatar.data.count
            sample.extraRenditions = render.extras.count
            let renditions = [render.avatar] + render.extras
            sample.record(
                formats: renditions.filter { $0.size == render.avatar.size }.map(\.format),
                extraFormats: renditions.filter { $0.size != render.avatar.size }.map(\.format),
                quality: report.request?.quality ?? 0)
            sample.formatEncodes = render.formats.map { format in
                let written = renditions.filter { $0.format == format }
                return CropMetricsSample.FormatEncode(
                    format: format, renditions: written.count, bytes: written.reduce(0) { $0 + $1.data.count },
                    encodeMs: render.timings.encodeByFormat[format]?.milliseconds ?? 0)
            }
            sample.blurHashComputed = render.blurHash != nil
            sample.record(faces: render.faces)
        }
        if report.failure == nil, report.trace.storageWrites.attempts > 0 {
            sample.attempts = report.trace.storageWrites.attempts
        }
        sample.memoryReservedBytes = report.trace.reservedBytes
        func ms(_ stage: JobStage) -> Double { report.trace.duration(of: stage).milliseconds }
        sample.latency = StageLatencies(
            fetchMs: ms(.fetch), probeMs: ms(.probe), renderMs: ms(.render), encodeMs: ms(.encode),
            uploadMs: ms(.upload), dbMs: ms(.database), totalMs: report.trace.total.milliseconds)
        sample.queueWaitMs = ms(.queueWait)
        if let requestedAt = report.request?.requestedAt {
            sample.endToEndMs = max(0, report.trace.finishedAt.timeIntervalSince(requestedAt) * 1000)
        }
        sample.finishedAt = report.trace.finishedAt
        self = sample
    }
}

extension SourceImageFormat {
    /// The metrics' name for a format the renderer accepts. A switch, not a raw-value lookup: a format added
    /// to `ImageFormat` does not compile until it is given its name here.
    init(_ format: ImageFormat) {
        switch format {
        case .jpeg: self = .jpeg
        case .png: self = .png
        case .webp: self = .webp
        case .heif: self = .heif
        case .gif: self = .gif
        case .tiff: self = .tiff
        }
    }
}
