import Synchronization

/// Stops a render from another thread, e.g. at a job's deadline: pass one to
/// `AvatarRenderer.render`/`probe` and call `cancel()` from anywhere. The render then throws
/// `ImagingError` with code `.cancelled`.
///
/// Between stages the renderer checks `isCancelled`; during the pixel pipeline's evaluation,
/// `cancel()` sets libvips' kill flag on the pipeline's images, which libvips checks at every
/// region request, so the evaluation stops within a strip of rows. The JPEG region decoder polls
/// a flag of its own every few rows, the HEIF region decoder the same flag between tiles. A single C
/// call that does not come back to either (libheif decoding one tile or a whole non-grid frame,
/// libjpeg buffering a progressive scan for libvips) still runs to its end: cancellation is prompt,
/// not instantaneous.
public final class RenderCancellation: Sendable {
    /// An image being evaluated, kept alive while `cancel()` may set its kill flag.
    private struct Watched: @unchecked Sendable {
        // Only its pointer is used, to set the kill flag (a plain field write libvips polls).
        let image: VImage
    }

    private struct State {
        var cancelled = false
        var watched: [Int: Watched] = [:]
        var nextToken = 0
    }

    private let state = Mutex(State())
    /// What the region decoders poll; set once, by `cancel()`.
    private let decodeFlag = DecodeCancelFlag()
    /// Tests only: called on the rendering thread each time an evaluation starts being watched
    /// (libvips' evaluation, or a JPEG region decode).
    private let onWatch: (@Sendable (RenderCancellation) -> Void)?

    public init() {
        onWatch = nil
    }

    init(onWatch: @escaping @Sendable (RenderCancellation) -> Void) {
        self.onWatch = onWatch
    }

    /// Cancels every render this object was passed to, now and later. Safe from any thread; idempotent.
    public func cancel() {
        state.withLock { state in
            guard !state.cancelled else { return }
            state.cancelled = true
            decodeFlag.set()
            for watched in state.watched.values {
                watched.image.kill()
            }
        }
    }

    public var isCancelled: Bool {
        state.withLock { $0.cancelled }
    }

    // MARK: - Renderer side

    /// Throws `.cancelled` if `cancel()` was called (checked between stages).
    func check(before stage: String) throws(ImagingError) {
        if isCancelled {
            throw ImagingError(.cancelled, detail: "cancelled before \(stage)")
        }
    }

    /// Runs `body`, a libvips evaluation reading from `images`, so that `cancel()` stops it. A
    /// failure after a cancellation is `.cancelled`; any other goes through `otherwise`.
    func evaluating<Result>(
        _ images: [VImage], stage: String, otherwise: (VipsFailure) -> ImagingError,
        _ body: () throws(VipsFailure) -> Result
    ) throws(ImagingError) -> Result {
        try check(before: stage)
        let tokens = images.map(watch)
        onWatch?(self)
        defer { unwatch(tokens) }
        do {
            return try body()
        } catch {
            if isCancelled {
                throw ImagingError(.cancelled, detail: "\(stage) stopped: \(error.operation): \(error.message)")
            }
            throw otherwise(error)
        }
    }

    /// Before a region decode (JPEG or HEIF), which polls the returned flag (`cancel()` sets it): throws
    /// `.cancelled` if `cancel()` was called already.
    func regionDecodeFlag(before stage: String) throws(ImagingError) -> DecodeCancelFlag {
        try check(before: stage)
        onWatch?(self)
        return decodeFlag
    }

    private func watch(_ image: VImage) -> Int {
        state.withLock { state in
            let token = state.nextToken
            state.nextToken += 1
            state.watched[token] = Watched(image: image)
            // Cancelled already: the evaluation must not start (the kill flag stays set until
            // libvips' first region request reads it).
            if state.cancelled { image.kill() }
            return token
        }
    }

    private func unwatch(_ tokens: [Int]) {
        let removed = state.withLock { state in tokens.compactMap { state.watched.removeValue(forKey: $0) } }
        // Released outside the lock: the last reference may unref the libvips image.
        _ = removed
    }
}
