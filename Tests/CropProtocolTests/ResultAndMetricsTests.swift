import CropGeometry
import CropProtocol
import Foundation
import SwiftProtobuf
import Testing

@Suite("Results, metrics and keys")
struct ResultAndMetricsTests {
    private let finished = Date(timeIntervalSince1970: 1_700_000_100)

    private func request() throws -> ValidatedCropRequest {
        try ValidatedCropRequest(TestSupport.minimalRequest())
    }

    @Test func successCarriesTheAvatarAndEchoesTheRequest() throws {
        let request = try request()
        // The key and URL are the caller's (Storage's AvatarKeys); the builder carries them as given.
        let key = "users/\(request.userID.uuidString.lowercased())/avatar_512.png"
        let url = "https://cdn.example.com/avatars/\(key)?v=7"
        let result = CropResultBuilder.success(
            for: request, finishedAt: finished,
            CropSuccess(
                avatarPath: key, avatarVersion: 7, url: url, size: 512, format: .png, blurHash: "LEHV6nWB2yk8",
                qualityLimited: true, fallbackUsed: true, cropAdjusted: true,
                renditions: [
                    CropRendition(size: 160, path: "users/u/avatar_160.png"),
                    CropRendition(size: 80, path: "users/u/avatar_80.png", url: "https://cdn/a?v=7"),
                ]))
        #expect(result.jobID == "job-1")
        #expect(result.userID == "8f14e45f-ceea-467a-9575-6b2c3f1a9e11")
        #expect(result.finishedAt == Google_Protobuf_Timestamp(seconds: 1_700_000_100, nanos: 0))
        #expect(result.requestedAt == Google_Protobuf_Timestamp(seconds: 1_700_000_000, nanos: 250_000_000))
        guard case .success(let success)? = result.outcome else {
            Issue.record("expected a success")
            return
        }
        #expect(success.avatarPath == "users/8f14e45f-ceea-467a-9575-6b2c3f1a9e11/avatar_512.png")
        #expect(success.avatarVersion == 7)
        #expect(
            success.url
                == "https://cdn.example.com/avatars/users/8f14e45f-ceea-467a-9575-6b2c3f1a9e11/avatar_512.png?v=7")
        #expect(success.blurhash == "LEHV6nWB2yk8")
        #expect(success.qualityLimited)
        #expect(success.fallbackUsed)
        #expect(success.notice == "Using an optimized preview to finish the crop")
        #expect(success.cropAdjusted)
        #expect(success.disposition == .applied)
        #expect(success.size == 512)
        #expect(success.format == .png)
        #expect(success.renditions.map(\.size) == [80, 160])
        #expect(success.renditions[0].url == "https://cdn/a?v=7")
    }

    @Test(arguments: CropDisposition.allCases)
    func successSaysWhetherItWasAppliedDuplicateOrSuperseded(_ disposition: CropDisposition) throws {
        let result = CropResultBuilder.success(
            for: try request(), finishedAt: finished,
            CropSuccess(avatarPath: "p", avatarVersion: 2, size: 512, format: .jpeg, disposition: disposition))
        let expected: Avatar_Crop_V1_CropResult.Disposition =
            switch disposition {
            case .applied: .applied
            case .duplicate: .duplicate
            case .superseded: .superseded
            case .forgotten: .forgotten
            }
        #expect(result.success.disposition == expected)
        #expect(result.success.notice == "")
        #expect(result.success.blurhash == "")
    }

    @Test func failureDefaultsClassAndMessageFromTheCode() throws {
        let result = CropResultBuilder.failure(
            for: try request(), finishedAt: finished, code: .tooSmall, attempts: 1)
        guard case .failure(let failure)? = result.outcome else {
            Issue.record("expected a failure")
            return
        }
        #expect(failure.errorCode == "TOO_SMALL")
        #expect(failure.errorClass == .permanent)
        #expect(failure.userMessage == "This photo is too small for a profile picture")
        #expect(failure.attempts == 1)

        let transient = CropResultBuilder.failure(
            jobID: "job-2", userID: nil, requestedAt: nil, finishedAt: finished, code: .storageUnavailable,
            attempts: 3)
        #expect(transient.failure.errorCode == "STORAGE_UNAVAILABLE")
        #expect(transient.failure.errorClass == .transient)
        #expect(transient.failure.userMessage == CropErrorCode.storageUnavailable.userMessage)
        #expect(transient.failure.attempts == 3)
        #expect(transient.userID == "")
        #expect(!transient.hasRequestedAt)
    }

    @Test func failureForAProtocolErrorNamesTheJobWhenItCan() {
        var message = TestSupport.minimalRequest()
        message.output.quality = 500
        let error: ProtocolError
        do {
            _ = try ValidatedCropRequest(message)
            Issue.record("expected a validation error")
            return
        } catch let caught {
            error = caught
        }
        let result = CropResultBuilder.failure(for: error, finishedAt: finished)
        #expect(result.jobID == "job-1")
        #expect(result.userID == "8f14e45f-ceea-467a-9575-6b2c3f1a9e11")
        #expect(result.failure.errorCode == "INVALID_REQUEST")
        #expect(result.failure.errorClass == .permanent)
        #expect(result.failure.attempts == 1)
    }

    @Test func errorCodesMapOneToOneOntoTheWireEnum() {
        let wireValues = Set(CropErrorCode.allCases.map(\.wireValue))
        #expect(wireValues.count == CropErrorCode.allCases.count)
        let known = Avatar_Crop_V1_ErrorCode.allCases.filter { $0 != .unspecified }
        #expect(Set(known) == wireValues)
        for code in CropErrorCode.allCases {
            #expect(CropErrorCode(wireValue: code.wireValue) == code)
            #expect(!code.userMessage.isEmpty)
        }
        #expect(CropErrorCode(wireValue: .unspecified) == nil)
        #expect(CropErrorCode(wireValue: .UNRECOGNIZED(99)) == nil)
        for errorClass in CropErrorClass.allCases {
            #expect(CropErrorClass(wireValue: errorClass.wireValue) == errorClass)
        }
    }

    @Test func metricsSampleBecomesTheMessage() throws {
        let request = try request()
        let plan = try CropGeometry.plan(
            source: PixelSize(width: 4032, height: 3024),
            input: .pose(EditorPose(scale: 50, tx: 500, ty: 0), reference: nil), settings: request.editorSettings)
        var sample = CropMetricsSample(outcome: .failed, errorCode: .storageUnavailable)
        sample.attempts = 3
        sample.record(plan: plan)
        sample.record(request: request)
        sample.sourceBytes = 2_500_000
        sample.sourceFormat = .heif
        sample.orientation = 6
        sample.decodeWidth = 2016
        sample.decodeHeight = 1512
        sample.shrinkFactor = 2
        sample.memoryReservedBytes = 40_000_000
        sample.outputBytes = 300_000
        sample.extraRenditions = 1
        sample.blurHashComputed = true
        sample.fallbackUsed = true
        sample.latency = StageLatencies(
            fetchMs: 1, probeMs: 2, renderMs: 3, encodeMs: 4, uploadMs: 5, dbMs: 6, totalMs: 21)
        sample.queueWaitMs = 7
        sample.endToEndMs = 900
        sample.finishedAt = finished

        let message = Avatar_Crop_V1_CropMetrics(sample)
        #expect(message.outcome == .failed)
        #expect(message.errorCode == .storageUnavailable)
        #expect(message.errorClass == .transient)
        #expect(message.attempts == 3)
        #expect(message.sourceWidth == 4032)
        #expect(message.sourceHeight == 3024)
        #expect(message.sourceBytes == 2_500_000)
        #expect(message.sourceFormat == .heif)
        #expect(message.orientation == 6)
        #expect(message.decodeWidth == 2016)
        #expect(message.shrinkFactor == 2)
        #expect(message.geometry == .centred)
        #expect(message.sMin == plan.sMin)
        #expect(message.sMax == plan.sMax)
        #expect(message.sQuality == plan.sQuality)
        #expect(message.qualityClamped == plan.qualityClamped)
        #expect(message.scaleRequested == 50)
        #expect(message.scaleApplied == plan.scaleApplied)
        #expect(message.zoomClamped)
        #expect(message.panClamped == plan.panClamped)
        #expect(message.qualityLimited == plan.qualityLimited)
        #expect(message.density == plan.density)
        #expect(message.lowDensity == plan.lowDensity)
        #expect(message.fallbackUsed)
        #expect(message.memoryReservedBytes == 40_000_000)
        // The request named no formats (the fleet's): a job that rendered states them (`record(formats:...)`).
        #expect(message.outputFormat == .unspecified)
        #expect(message.outputSize == 512)
        #expect(message.quality == 0)
        #expect(message.outputBytes == 300_000)
        #expect(message.extraRenditions == 1)
        #expect(message.blurhashComputed)
        #expect(message.latency.fetchMs == 1)
        #expect(message.latency.dbMs == 6)
        #expect(message.latency.totalMs == 21)
        #expect(message.queueWaitMs == 7)
        #expect(message.endToEndMs == 900)
        #expect(message.finishedAt.seconds == 1_700_000_100)
        #expect(sample.message == message)
    }

    @Test func successfulOutcomesFollowTheDisposition() {
        #expect(CropOutcome(.applied) == .applied)
        #expect(CropOutcome(.duplicate) == .duplicate)
        #expect(CropOutcome(.superseded) == .superseded)
        let sample = CropMetricsSample(outcome: .applied)
        #expect(sample.message.errorCode == .unspecified)
        #expect(sample.message.errorClass == .unspecified)
        #expect(sample.message.outputFormat == .unspecified)
    }

    @Test func avatarFormatsHaveTheirContentTypes() {
        #expect(AvatarFormat.png.contentType == "image/png")
        #expect(AvatarFormat.jpeg.contentType == "image/jpeg")
    }

    @Test func colourHexRoundTrips() {
        for colour in [RGBColor.white, RGBColor(r: 0, g: 0x80, b: 0xFE)] {
            #expect(RGBColor(hex: colour.hex) == colour)
        }
        #expect(RGBColor(r: 0xAB, g: 0x01, b: 0x10).hex == "#AB0110")
    }

    @Test("window 5: a metrics record's finished_at is rounded down to the minute, never its result's exact time")
    func finishedAtIsCoarse() {
        var sample = CropMetricsSample(outcome: .applied)
        sample.finishedAt = Date(timeIntervalSince1970: 1_700_000_159.75)
        #expect(sample.finishedAt == Date(timeIntervalSince1970: 1_700_000_100))
        #expect(
            Avatar_Crop_V1_CropMetrics(sample).finishedAt == Google_Protobuf_Timestamp(seconds: 1_700_000_100, nanos: 0)
        )
    }
}
