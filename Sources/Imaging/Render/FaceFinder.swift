import CropGeometry

/// Finds the faces of a probed image and applies the face rule (docs/ARCHITECTURE.md §2, "Faces"): the cheapest
/// decode the format offers through the format's own loader (`SmallDecode`), upright and fitted inside the
/// detector's canvas as 8-bit sRGB, then YuNet on it, the boxes scaled back onto the oriented source. Any failure
/// is reported, never thrown: the render then uses the centred square.
enum FaceFinder {
    /// The thumbnail's aspect ratio may differ from the oriented source's by this much (rounding of small sides);
    /// more means it is not the upright image and its boxes would land in the wrong place.
    static let aspectTolerance = 0.05

    /// `frame`: the job's whole decode shared with the crop (`FaceFrame`), the detector's image then resized from it.
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
        let small: VImage
        do {
            if let frame {
                small = try frame.small(fitting: FaceDetector.canvas)
            } else {
                small = try SmallDecode.upright(input, header: header, fitting: FaceDetector.canvas)
            }
        } catch {
            throw FaceDetectionError(.decodeFailed, detail: "\(error.operation): \(error.message)")
        }
        let size = PixelSize(width: small.width, height: small.height)
        guard size.width > 0, size.height > 0, oriented.width > 0, oriented.height > 0 else {
            throw FaceDetectionError(.decodeFailed, detail: "empty thumbnail")
        }
        let thumbnailAspect = Double(size.width) / Double(size.height)
        let orientedAspect = Double(oriented.width) / Double(oriented.height)
        let rounding = 1 / Double(min(size.width, size.height))
        guard abs(thumbnailAspect / orientedAspect - 1) <= aspectTolerance + rounding else {
            throw FaceDetectionError(.decodeFailed, detail: "the thumbnail is not the upright image")
        }
        let detected: Result<[FaceBox], FaceDetectionError>
        let clock = ContinuousClock()
        var detectorTime = Duration.zero
        do {
            // libvips decodes lazily: the pixels exist once `withPixels` calls the body, where the detector starts.
            detected = try small.withPixels { pixels in
                let start = clock.now
                defer { detectorTime = clock.now - start }
                return Result { () throws(FaceDetectionError) in
                    try FaceDetectors.withDetector(shape: FaceDetector.Shape(fitting: size)) {
                        detector throws(FaceDetectionError) in
                        try detector.detect(
                            rgb: pixels, width: size.width, height: size.height, stride: size.width * 3,
                            minScore: minScore)
                    }
                }
            }
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
