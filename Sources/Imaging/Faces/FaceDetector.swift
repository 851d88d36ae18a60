import CFaceDetect
import CropGeometry
import Synchronization

/// One YuNet network on its fixed canvas (`CFaceDetect`): the C handle's one owner. A network is never reshaped
/// and is used by one thread at a time: `FaceDetectors` lends each to one render and takes it back after, which is
/// why it may cross threads (`@unchecked Sendable`) although OpenCV's `Net` is not thread-safe.
final class FaceDetector: @unchecked Sendable {
    /// The long side of every canvas (a multiple of 32), which the image is fitted to: YuNet finds faces down to
    /// about 10 px on it, which covers a face a photo's crop could centre on.
    static let canvas = 320
    /// The short side of the canvas for an image at least `oblongAspect` times as long as it is wide (or as wide
    /// as long): 320 × 256 holds a 4:3, 3:2 or 16:9 photo fitted to 320 px with a fifth less padding than the
    /// square, and the network's cost is its canvas's area. One more network per orientation, not one per
    /// aspect ratio: each holds a few MB of buffers.
    static let oblongCanvasSide = 256
    static let oblongAspect = Double(canvas) / Double(oblongCanvasSide)

    /// The canvas an upright image of `size` is detected on (its aspect ratio decides; the detector fits it).
    struct Shape: Hashable, Sendable {
        var width: Int
        var height: Int

        static let square = Shape(width: FaceDetector.canvas, height: FaceDetector.canvas)
        static let landscape = Shape(width: FaceDetector.canvas, height: FaceDetector.oblongCanvasSide)
        static let portrait = Shape(width: FaceDetector.oblongCanvasSide, height: FaceDetector.canvas)
        static let all = [square, landscape, portrait]

        init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }

        init(fitting size: PixelSize) {
            let long = Double(max(size.width, size.height)), short = Double(max(1, min(size.width, size.height)))
            guard long / short >= FaceDetector.oblongAspect else {
                self = .square
                return
            }
            self = size.width >= size.height ? .landscape : .portrait
        }
    }

    /// At most this many faces are returned (best first): a crowd cannot make the rule's arithmetic costly.
    static let maxFaces = 100
    /// Boxes overlapping a better one by more than this intersection over union are the same face.
    static let overlap: Float = 0.3

    private let handle: OpaquePointer

    init(model: FaceModel, shape: Shape) throws(FaceDetectionError) {
        var status: Int32 = 0
        var message = [CChar](repeating: 0, count: 256)
        let made = model.bytes.withUnsafeBufferPointer { bytes in
            cface_detector_new(
                bytes.baseAddress, bytes.count, Int32(shape.width), Int32(shape.height), &status, &message,
                message.count)
        }
        guard let made else {
            throw FaceDetectionError(
                status == Int32(CFACE_NO_MEMORY) ? .detectFailed : .modelInvalid, detail: Self.text(message))
        }
        handle = made
    }

    deinit {
        cface_detector_free(handle)
    }

    /// Faces on `width × height` pixels of `bands` bytes (1: grey, 3: RGB), rows `stride` apart, stored as
    /// `orientation` says, scoring at least `minScore`, best first, on the upright pixels (the detector fits and
    /// turns them itself).
    func detect(
        pixels: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int, bands: Int, orientation: Orientation,
        minScore: Double
    ) throws(FaceDetectionError) -> [FaceBox] {
        guard width > 0, height > 0, bands == 1 || bands == 3, stride >= width * bands,
            pixels.count >= stride * (height - 1) + width * bands, let base = pixels.baseAddress
        else {
            throw FaceDetectionError(.detectFailed, detail: "bad pixel buffer")
        }
        var faces = [cface_face](repeating: cface_face(), count: Self.maxFaces)
        var count: Int32 = 0
        var message = [CChar](repeating: 0, count: 256)
        let status = faces.withUnsafeMutableBufferPointer { out in
            cface_detect(
                handle, base.assumingMemoryBound(to: UInt8.self), Int32(width), Int32(height), stride, Int32(bands),
                Int32(orientation.rawValue), Float(minScore), Self.overlap, out.baseAddress, Int32(out.count), &count,
                &message, message.count)
        }
        guard status == Int32(CFACE_OK) else {
            throw FaceDetectionError(.detectFailed, detail: "status \(status): \(Self.text(message))")
        }
        return faces.prefix(Int(count)).map { face in
            let marks = face.landmarks
            return FaceBox(
                x: Double(face.x), y: Double(face.y), width: Double(face.width), height: Double(face.height),
                score: Double(face.score), rightEye: FacePoint(x: Double(marks.0), y: Double(marks.1)),
                leftEye: FacePoint(x: Double(marks.2), y: Double(marks.3)))
        }
    }

    private static func text(_ message: [CChar]) -> String {
        String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The process's face detection: the model, loaded once (`install`), and its networks, one per render thread
/// and canvas shape at a time — made on demand from the model's bytes, kept for the next render when it is done.
public enum FaceDetectors {
    private struct State {
        var model: FaceModel?
        var installError: FaceDetectionError?
        var idle: [FaceDetector.Shape: [FaceDetector]] = [:]
        /// At most this many networks kept between renders (nil: one per render thread and canvas).
        var kept: Int?
    }

    private static let state = Mutex(State())

    /// Loads and checks the model at `path` and builds the square canvas's network (so OpenCV's importer has run and
    /// the model is known to build, e.g. before a render helper locks itself down; the others are built by the first
    /// render that needs them). A failure is remembered: renders then find no face and use the centred square, and
    /// `installError` says why.
    ///
    /// `keptNetworks`: at most this many networks kept between renders, the last render's first (nil: every one
    /// made, one per render thread and canvas). A render helper, one render at a time, keeps one: a network that
    /// has run holds its canvas's buffers (about 5 MB), and a helper's next no-pose job on another canvas builds its
    /// own (a few ms) rather than every busy helper holding all three (docs/ARCHITECTURE.md §2, "Faces").
    @discardableResult
    public static func install(modelPath: String, keptNetworks: Int? = nil) -> FaceDetectionError? {
        let installed: State
        do throws(FaceDetectionError) {
            let model = try FaceModel.load(path: modelPath)
            let square = try FaceDetector(model: model, shape: .square)
            installed = State(model: model, installError: nil, idle: [.square: [square]], kept: keptNetworks)
        } catch {
            installed = State(model: nil, installError: error, idle: [:], kept: keptNetworks)
        }
        return state.withLock { state in
            state = installed
            return installed.installError
        }
    }

    /// Drops the networks no render holds (the model stays): each keeps its canvas's buffers, about 5 MB once it has
    /// run, and the next render that needs one builds it again (a few ms). A render helper calls it when it idles
    /// (docs/ARCHITECTURE.md §3, "Idle helpers give memory back"), so a helper holds no network between its no-pose jobs.
    public static func releaseNetworks() {
        var released: [FaceDetector.Shape: [FaceDetector]] = [:]
        state.withLock { swap(&released, &$0.idle) }
        released.removeAll()  // freed outside the lock
    }

    /// Why the model is not loaded (`nil` when it is, or when `install` was never called).
    public static var installError: FaceDetectionError? { state.withLock { $0.installError } }

    /// Whether a model is loaded.
    public static var isInstalled: Bool { state.withLock { $0.model != nil } }

    /// Runs `body` with a network on `shape`'s canvas that no other thread uses meanwhile.
    static func withDetector<Value>(
        shape: FaceDetector.Shape, _ body: (FaceDetector) throws(FaceDetectionError) -> Value
    ) throws(FaceDetectionError) -> Value {
        let lent: Result<(FaceDetector?, FaceModel), FaceDetectionError> = state.withLock { state in
            guard let model = state.model else {
                return .failure(
                    state.installError ?? FaceDetectionError(.modelMissing, detail: "no face model installed"))
            }
            return .success((state.idle[shape]?.popLast(), model))
        }
        let detector: FaceDetector
        switch lent {
        case .failure(let error): throw error
        case .success((let idle?, _)): detector = idle
        case .success((nil, let model)): detector = try FaceDetector(model: model, shape: shape)
        }
        defer {
            var dropped: [FaceDetector] = []
            state.withLock { state in
                state.idle[shape, default: []].append(detector)
                if let kept = state.kept { dropped = overflow(of: &state.idle, keeping: kept, lastUsed: shape) }
            }
            dropped.removeAll()  // freed outside the lock
        }
        return try body(detector)
    }

    /// Takes out of `idle` what is over `keeping` networks: other canvases' before `lastUsed`'s, each canvas's oldest
    /// first.
    static func overflow<Network>(
        of idle: inout [FaceDetector.Shape: [Network]], keeping: Int, lastUsed: FaceDetector.Shape
    ) -> [Network] {
        var over = idle.values.reduce(0) { $0 + $1.count } - max(0, keeping)
        var taken: [Network] = []
        for shape in FaceDetector.Shape.all.filter({ $0 != lastUsed }) + [lastUsed] where over > 0 {
            guard var networks = idle[shape], !networks.isEmpty else { continue }
            let count = min(over, networks.count)
            taken += networks.prefix(count)
            networks.removeFirst(count)
            idle[shape] = networks
            over -= count
        }
        return taken
    }
}
