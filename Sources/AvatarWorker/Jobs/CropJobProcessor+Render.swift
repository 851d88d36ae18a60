import CropProtocol
import Foundation
import Imaging
import RenderHelpers

/// The render step of a job: a render slot, the crash count, the probe, the memory admission and the render in a
/// render helper (docs/ARCHITECTURE.md §3, "Render helpers").
extension CropJobProcessor {
    /// Runs `body` (probe and render: the job's CPU) holding one of the worker's render slots, so that only
    /// `worker.render-slots` jobs render at once while the others fetch, upload and commit. The wait is a step of
    /// `queueWait`. A job timed out while it waits ends as TIMEOUT without a slot.
    func withRenderSlot<T>(
        deadline: JobDeadline?, trace: inout JobTrace, clock: ContinuousClock,
        _ body: (inout JobTrace) throws -> T
    ) throws -> T {
        let waitStart = clock.now
        guard
            let slot = dependencies.renderSlots.acquire(abandoned: { deadline?.cancellation.isCancelled == true })
        else { throw JobFailure.timedOut }
        let acquired = clock.now
        trace.record(.queueWait, from: waitStart, to: acquired)
        defer { slot.release() }
        if deadline?.cancellation.isCancelled == true { throw JobFailure.timedOut }
        return try body(&trace)
    }

    /// The ledger's record that this job's render starts: the attempt's number, or nil when another attempt
    /// owns the job. Throws `PROCESSING_FAILED` for a job whose renders keep dying with their worker.
    func markStarted(_ request: ValidatedCropRequest) throws -> Int? {
        switch try databaseCall({
            try ledger.markStarted(
                jobID: request.jobID, userID: request.userID, requestedAt: request.requestedAt,
                maxCrashAttempts: dependencies.maxCrashAttempts)
        }) {
        case .crashLooped(let attempts):
            throw JobFailure(
                .processingFailed, errorClass: .permanent, attempts: attempts,
                detail: "\(attempts) renders of this job died with their worker; not rendered again")
        case .notOwned:
            return nil
        case .render(let attempt):
            return attempt
        }
    }

    /// Probe, memory reservation and render, in a render helper (docs/ARCHITECTURE.md §3, "Render helpers"):
    /// what a render slot is held for. A helper that dies fails this job as `DECODE_FAILED`, once; one past the
    /// deadline is killed (`TIMEOUT`).
    func render(
        _ request: ValidatedCropRequest, source: [UInt8], cancellation: RenderCancellation?,
        trace: inout JobTrace, clock: ContinuousClock
    ) throws -> RenderResult {
        let options = renderOptions(for: request)
        do {
            let session = try dependencies.renders.session(
                renderer: AvatarRenderer(limits: dependencies.limits, logger: dependencies.logger),
                seams: dependencies.testSeams?.renderSeams)
            defer { session.end() }
            let probed = try measure(.probe, &trace, clock) {
                try session.probe(source, input: request.input, options: options, cancellation: cancellation)
            }
            trace.header = probed.header

            guard let reservation = dependencies.budget.reserve(probed.estimate, forceFallback: options.forceFallback)
            else {
                throw JobFailure(.outOfMemory, detail: "no memory reservation")
            }
            defer { dependencies.budget.release(reservation) }
            trace.reservedBytes = reservation.bytes

            // The renderer itself retries on the thumbnail-resolution decode when libvips runs out of memory at
            // full resolution; the full reservation (the helper's address-space cap) covers that retry.
            // The call is the render stage but for the helper's encode, timed where it ran and laid at the call's
            // end (`JobStage.encode`): the two never overlap and add up to the call, which a failed render is too.
            let start = clock.now
            var encoding = Duration.zero
            defer {
                let end = clock.now
                let encodeStart = end - min(encoding, end - start)
                trace.record(.render, from: start, to: encodeStart)
                trace.record(.encode, from: encodeStart, to: end)
            }
            let rendered = try session.render(
                fallback: reservation.mode == .fallback, reservedBytes: reservation.bytes, cancellation: cancellation)
            encoding = rendered.timings.encode
            return rendered
        } catch let error as ImagingError {
            throw JobFailure(error)
        } catch let crash as RenderHelperCrash {
            dependencies.logger.warning(
                "the render helper died; the job fails, a new helper takes its place",
                metadata: [LogKey.error: "\(crash)"])
            throw JobFailure(.decodeFailed, errorClass: .permanent, detail: crash.description)
        } catch let refused as RefusedReply {
            // The helper was taken over by its photo, or broke: either way the photo is what made it so.
            dependencies.logger.warning(
                "a render helper's reply was refused; the job fails, a new helper takes its place",
                metadata: [LogKey.error: "\(refused)"])
            throw JobFailure(.decodeFailed, errorClass: .permanent, detail: refused.description)
        } catch let error as HelperSystemError {
            throw JobFailure(.internal, errorClass: .transient, detail: "render helper channel: \(error)")
        } catch let error as RenderHelperUnavailable {
            throw JobFailure(.internal, errorClass: .transient, detail: error.description)
        }
    }

    func renderOptions(for request: ValidatedCropRequest) -> RenderOptions {
        var options = RenderOptions(settings: request.editorSettings)
        options.formats = request.formats(fleet: dependencies.formats, extras: dependencies.extraFormats)
        options.encoder = dependencies.encoder
        options.jpegQuality = request.quality
        if let background = request.background { options.background = background }
        options.extraSizes = request.extraSizes
        options.blurHash = request.wantBlurHash
        options.defaultCrop = request.defaultCrop ?? dependencies.defaultCrop
        return options
    }
}
