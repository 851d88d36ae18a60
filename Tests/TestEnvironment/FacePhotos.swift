import Foundation

/// The face detector's test photos and model (docs/ARCHITECTURE.md §2, "Faces"), used from the Debian packages
/// that ship them (nothing of theirs is committed): dlib's PASCAL VOC examples with hand-annotated face boxes
/// (`libdlib19.1`, its `examples/faces/`), scikit-image's `astronaut.png` (one face, public domain) and
/// `coffee.png`, `chelsea.png` (no human face) from `python3-skimage`; the model from
/// `scripts/fetch-face-model.sh`. `make test` installs and fetches them; without them the tests that need them
/// are skipped with the reason (`missing`).
public enum FacePhotos {
    /// dlib's `examples/faces` folder (testing.xml, training.xml and their photos), when installed.
    public static let pascal: URL? = firstDirectory([
        "/usr/share/doc/libdlib19.1/examples/faces", "/usr/share/doc/libdlib-dev/examples/faces",
    ])
    /// scikit-image's data folder, when installed.
    public static let skimage: URL? = firstDirectory(["/usr/lib/python3/dist-packages/skimage/data"])
    /// The fetched model (`.deps/models/`), when present.
    public static let model: URL? = {
        let url = TestFiles.url(".deps/models/face_detection_yunet_2023mar.onnx")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }()

    public static let missingPascal = "libdlib19.1 is not installed (apt-get install libdlib19.1): no PASCAL faces"
    public static let missingSkimage = "python3-skimage is not installed (apt-get install python3-skimage)"
    public static let missingModel = "the face model is not fetched (scripts/fetch-face-model.sh)"

    /// One annotated photo: its file name and hand-drawn face boxes (x, y, width, height).
    public struct Annotated: Sendable, CustomStringConvertible {
        public var file: String
        public var boxes: [(x: Double, y: Double, width: Double, height: Double)]
        public var description: String { file }
    }

    /// The annotated photos of testing.xml and training.xml (boxes marked `ignore` left out).
    public static func annotated() throws -> [Annotated] {
        guard let pascal else { return [] }
        var byFile: [String: Annotated] = [:]
        var order: [String] = []
        for list in ["testing.xml", "training.xml"] {
            let text = try String(contentsOf: pascal.appendingPathComponent(list), encoding: .isoLatin1)
            var current: String?
            for line in text.split(separator: "\n") {
                if let file = attribute("file", in: line), line.contains("<image") {
                    current = file
                    if byFile[file] == nil {
                        byFile[file] = Annotated(file: file, boxes: [])
                        order.append(file)
                    }
                } else if line.contains("<box"), let file = current, attribute("ignore", in: line) != "1",
                    let top = attribute("top", in: line).flatMap(Double.init),
                    let left = attribute("left", in: line).flatMap(Double.init),
                    let width = attribute("width", in: line).flatMap(Double.init),
                    let height = attribute("height", in: line).flatMap(Double.init)
                {
                    byFile[file]?.boxes.append((left, top, width, height))
                }
            }
        }
        return order.compactMap { byFile[$0] }
    }

    private static func attribute(_ name: String, in line: Substring) -> String? {
        guard let start = line.range(of: " \(name)='") else { return nil }
        let rest = line[start.upperBound...]
        guard let end = rest.firstIndex(of: "'") else { return nil }
        return String(rest[..<end])
    }

    private static func firstDirectory(_ paths: [String]) -> URL? {
        paths.map { URL(fileURLWithPath: $0, isDirectory: true) }
            .first { FileManager.default.fileExists(atPath: $0.path) }
    }
}
