import CropGeometry
import FoundationEssentials
import Glibc
import Imaging
import Logging

// `avatar-bench faces` (bench/README.md, "Face rule"): the same photos rendered
// without a pose with the face rule and with the centred default, in one process, the two interleaved (their
// order alternating per round) so the machine's drift falls on both; on one libvips thread (one core, as a
// render slot). Prints JSON lines: the model's load (time, resident memory it added), with `--canvas-image` the
// memory every canvas's network holds and a backfill's mix of canvases with one network kept and with all, then
// per photo the two renders' totals and the detection's own time, every run.

struct FaceLoadRecord: Encodable {
    var type = "face-load"
    /// Reading and hash-checking the model and building its networks (one per canvas shape), in ms.
    var load_ms: Double
    /// Then the first whole no-pose render of the first photo with the face rule (OpenCV's first forward pass), ms.
    var first_render_ms: Double
    /// Resident memory added by the load and the first detection, in MiB (after libvips' warm-up).
    var rss_added_mb: Double
}

/// Resident memory the detector holds once a small photo of each canvas shape (`--canvas-image`: square, landscape,
/// portrait) has been rendered with the face rule, against the same photos rendered centred before the model was
/// loaded; both read after `malloc_trim` (the free heap the renders left given back).
struct FaceMemoryRecord: Encodable {
    var type = "face-memory"
    var canvases: Int
    var rss_all_canvases_added_mb: Double
}

/// A backfill's mix: no-pose renders of the canvas photos in turn (each a different canvas from the last), with the
/// detector keeping one network between renders, as a render helper does (`FaceDetectors.install(keptNetworks: 1)`:
/// each render builds its canvas's network again and runs it for the first time), and keeping every network (one
/// per canvas), the two interleaved round by round. Every render, ms.
struct FaceMixedRecord: Encodable {
    var type = "face-mixed"
    var canvases: Int
    var kept_one_ms: [Double]
    var kept_all_ms: [Double]
}

struct FaceImageRecord: Encodable {
    var type = "face-image"
    var image: String
    var source_width: Int
    var source_height: Int
    /// Whole no-pose render (probe + render) with the centred default and with the face rule, every run, ms.
    var centred_ms: [Double]
    var face_ms: [Double]
    /// The face rule's small decode and detection alone, every run, ms.
    var detect_ms: [Double]
    /// The detector alone (without the small decode), every run, ms.
    var detector_ms: [Double]
    var faces: Int
    var rule_used: Bool
    var detection_width: Int
    var detection_height: Int
}

func faceCost(images: [String], canvasImages: [String], model: String, rounds: Int, runs: Int, logger: Logger) throws {
    let renderer = AvatarRenderer(logger: logger)
    // libvips and the render path warm first: the load's figures are the face detector's own.
    try renderer.warmUp()
    let canvasPhotos = try canvasImages.map(readBytes)
    for bytes in canvasPhotos {
        _ = try renderer.render(renderer.probe(bytes), input: .centred, options: RenderOptions(defaultCrop: .centre))
    }
    let before = ProcessMemory.residentKiB()
    trimHeap()
    let trimmedBefore = ProcessMemory.residentKiB()
    let clock = ContinuousClock()
    let start = clock.now
    if let error = FaceDetectors.install(modelPath: model) { throw BenchError("face model: \(error.debugDescription)") }
    let loadMs = (clock.now - start).ms
    let warm = try readBytes(images[0])
    let firstStart = clock.now
    _ = try renderer.render(renderer.probe(warm), input: .centred, options: RenderOptions(defaultCrop: .face))
    emit(
        FaceLoadRecord(
            load_ms: loadMs, first_render_ms: (clock.now - firstStart).ms,
            rss_added_mb: Double(ProcessMemory.residentKiB() - before) / 1024))
    if !canvasPhotos.isEmpty {
        for bytes in canvasPhotos {
            _ = try renderer.render(renderer.probe(bytes), input: .centred, options: RenderOptions(defaultCrop: .face))
        }
        trimHeap()
        emit(
            FaceMemoryRecord(
                canvases: canvasPhotos.count,
                rss_all_canvases_added_mb: Double(ProcessMemory.residentKiB() - trimmedBefore) / 1024))
    }

    if canvasPhotos.count > 1 {
        /// Each canvas photo rendered without a pose in turn, with the detector keeping `kept` networks (nil: one
        /// per canvas); every render's time, ms.
        func mix(keeping kept: Int?) throws -> [Double] {
            FaceDetectors.install(modelPath: model, keptNetworks: kept)
            func render(_ bytes: [UInt8]) throws -> Double {
                let begin = clock.now
                _ = try renderer.render(
                    renderer.probe(bytes), input: .centred, options: RenderOptions(defaultCrop: .face))
                return (clock.now - begin).ms
            }
            for bytes in canvasPhotos { _ = try render(bytes) }  // every canvas's network built and run once
            return try (0..<runs).flatMap { _ in try canvasPhotos.map(render) }
        }
        var keptOne: [Double] = []
        var keptAll: [Double] = []
        for round in 0..<rounds {
            let (one, all) = try inTurn(pair: round, { try mix(keeping: 1) }, { try mix(keeping: nil) })
            keptOne += one
            keptAll += all
        }
        FaceDetectors.install(modelPath: model)
        emit(FaceMixedRecord(canvases: canvasPhotos.count, kept_one_ms: keptOne, kept_all_ms: keptAll))
    }

    for path in images {
        let bytes = try readBytes(path)
        var centred: [Double] = []
        var face: [Double] = []
        var detect: [Double] = []
        var detector: [Double] = []
        var last: RenderResult?
        func once(_ choice: DefaultCrop) throws {
            let begin = clock.now
            let result = try renderer.render(
                renderer.probe(bytes), input: .centred, options: RenderOptions(defaultCrop: choice))
            let ms = (clock.now - begin).ms
            if choice == .face {
                face.append(ms)
                detect.append(result.faces?.milliseconds ?? .nan)
                detector.append(result.faces?.detectorMilliseconds ?? .nan)
                last = result
            } else {
                centred.append(ms)
            }
        }
        // One untimed render of each first (the photo's pages in memory, the lcms2 transform cached).
        _ = try renderer.render(renderer.probe(bytes), input: .centred, options: RenderOptions(defaultCrop: .face))
        _ = try renderer.render(renderer.probe(bytes), input: .centred, options: RenderOptions(defaultCrop: .centre))
        for round in 0..<rounds {
            let order: [DefaultCrop] = round % 2 == 0 ? [.centre, .face] : [.face, .centre]
            for choice in order {
                for _ in 0..<runs { try once(choice) }
            }
        }
        let report = last?.faces
        emit(
            FaceImageRecord(
                image: path, source_width: last?.header.orientedSize.width ?? 0,
                source_height: last?.header.orientedSize.height ?? 0, centred_ms: centred, face_ms: face,
                detect_ms: detect, detector_ms: detector, faces: report?.faces.count ?? 0,
                rule_used: report?.ruleUsed ?? false,
                detection_width: report?.detectionSize.width ?? 0,
                detection_height: report?.detectionSize.height ?? 0))
    }
}

/// glibc's `malloc_trim(0)`: the free heap given back to the kernel (Swift's Glibc module does not export it).
private func trimHeap() {
    typealias Trim = @convention(c) (Int) -> Int32
    // RTLD_DEFAULT: the symbol as the process resolves it.
    guard let symbol = dlsym(nil, "malloc_trim") else { return }
    _ = unsafeBitCast(symbol, to: Trim.self)(0)
}
