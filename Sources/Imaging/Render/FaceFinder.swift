import CropGeometry

/// Finds the faces of a probed image and applies the face rule (docs/ARCHITECTURE.md §2, "Faces"): the job's shared
/// frame (`FaceFrame`), which the detector fits onto its canvas and turns upright itself, or else the cheapest decode
/// the format offers through the format's own loader (`SmallDecode`), upright and fitted inside the canvas as 8-bit
/// sRGB; then YuNet, the boxes scaled back onto the oriented source. Any failure
/// is reported, never thrown: the render then uses the centred square.
enum FaceFinder {
    /// The thumbnail's aspect ratio may differ from the oriented source's by this much (rounding of small sides);
    /// more means it is not the upright image and its boxes would land in the wrong place.
    static let aspectTolerance = 0.05

    /// `frame`: the job's whole decode shared with the crop (`FaceFrame`), which the detector then reads.
    static func find(
        _ input: InputBytes, header: ImageHeader, rule: FaceRule, frame: FaceFrame? = nil
    ) -> (report: FaceReport, choice: FaceChoice?) {
        let clock = ContinuousClock()
        let start = clock.now
        do {
            let (faces, size, detectorTime) = try detect(input, header: header, minScore: rule.minScore, frame: frame)
            let choice = CropGeometry.faceChoice(faces: faces, source: header.orientedSize, rule: rule)
            let report = FaceReport(
                faces: faces, kept: choice?.kept ?? [], ruleUsed: choice != nil,
                largestOnly: choice?.largestOnly ?? false,
                detectionSize: size, time: clock.now - start, detectorTime: detectorTime, error: nil)
            return (report, choice)
        } catch {
            let report = FaceReport(
                faces: [], kept: [], ruleUsed: false, largestOnly: false, detectionSize: PixelSize(width: 0, height: 0),
                time: clock.now - start, error: error.code)
            return (report, nil)
        }
    }

    /// The faces scoring at least `minScore` on the upright image, in oriented source pixels, best first; the size
    /// of the image the detector ran on; and the detector's own time (without the small decode).
    static func detect(
        _ input: InputBytes, header: ImageHeader, minScore: Double, frame: FaceFrame? = nil
    ) throws(FaceDetectionError) -> ([FaceBox], PixelSize, Duration) {
        guard FaceDetectors.isInstalled else {
            throw FaceDetectors.installError ?? FaceDetectionError(.modelMissing, detail: "no face model installed")
        }
        let oriented = header.orientedSize
        // What the detector reads: the frame's pixels where they lie, stored as they are (it fits and turns them
        // itself, without a libvips pipeline), or else an upright small image.
        let source: VImage
        var orientation = Orientation.upright
        var inMemory = false
        do {
            if let frame, frame.detectorReadsPixels {
                (source, orientation, inMemory) = (frame.image, frame.orientation, true)
            } else if let frame {
                source = try frame.small(fitting: FaceDetector.canvas)
            } else {
                source = try SmallDecode.upright(input, header: header, fitting: FaceDetector.canvas)
            }
        } catch {
            throw FaceDetectionError(.decodeFailed, detail: "\(error.operation): \(error.message)")
        }
        let size = orientation.orientedSize(of: PixelSize(width: source.width, height: source.height))
        guard size.width > 0, size.height > 0, oriented.width > 0, oriented.height > 0 else {
            throw FaceDetectionError(.decodeFailed, detail: "empty thumbnail")
        }
        let thumbnailAspect = Double(size.width) / Double(size.height)
        let orientedAspect = Double(oriented.width) / Double(oriented.height)
        let rounding = 1 / Double(min(size.width, size.height))
        guard abs(thumbnailAspect / orientedAspect - 1) <= aspectTolerance + rounding else {
            throw FaceDetectionError(.decodeFailed, detail: "the thumbnail is not the upright image")
        }
        let clock = ContinuousClock()
        var detectorTime = Duration.zero
        func run(_ pixels: UnsafeRawBufferPointer) -> Result<[FaceBox], FaceDetectionError> {
            let start = clock.now
            defer { detectorTime = clock.now - start }
            return Result { () throws(FaceDetectionError) in
                try FaceDetectors.withDetector(shape: FaceDetector.Shape(fitting: size)) {
                    detector throws(FaceDetectionError) in
                    try detector.detect(
                        pixels: pixels, width: source.width, height: source.height,
                        stride: source.width * source.bands, bands: source.bands, orientation: orientation,
                        minScore: minScore)
                }
            }
        }
        let detected: Result<[FaceBox], FaceDetectionError>
        do {
            // A small image is decoded lazily: its pixels exist once `withPixels` calls the body, where the
            // detector starts. The frame is in memory already.
            detected = try inMemory ? source.withMemoryPixels(run) : source.withPixels(run)
        } catch {
            throw FaceDetectionError(.decodeFailed, detail: "\(error)")
        }
        let scaleX = Double(oriented.width) / Double(size.width)
        let scaleY = Double(oriented.height) / Double(size.height)
        let faces = try detected.get().map { face in
            FaceBox(
                x: face.x * scaleX, y: face.y * scaleY, width: face.width * scaleX, height: face.height * scaleY,
                score: face.score,
                rightEye: face.rightEye.map { FacePoint(x: $0.x * scaleX, y: $0.y * scaleY) },
                leftEye: face.leftEye.map { FacePoint(x: $0.x * scaleX, y: $0.y * scaleY) })
        }
        return (faces, size, detectorTime)
    }
}
