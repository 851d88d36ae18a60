import Foundation
import TestEnvironment
import Testing

/// C stays behind one folder per wrapper (docs/ARCHITECTURE.md §5): a Swift file outside the wrapper folders that
/// imports a C module (one of `Sources/C/*`) fails this test, which names it.
@Suite("C boundary")
struct CBoundaryTests {
    /// The folders whose files may import a C module.
    static let wrapperFolders = [
        "Sources/Imaging/Vips/", "Sources/Imaging/JPEG/", "Sources/Imaging/HEIF/", "Sources/Imaging/PNG/",
        "Sources/Imaging/LCMS/", "Sources/Imaging/Faces/", "Sources/Imaging/WebP/",
        "Sources/Messaging/RDKafka/", "Sources/Database/LibPQ/", "Sources/RenderHelpers/Posix/",
        "Sources/Sandbox/Kernel/",
    ]

    static func cModules() throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: TestFiles.url("Sources/C").path))
    }

    /// Every `(file, module)` where a Swift file under `Sources` imports a C module.
    static func cImports() throws -> [(file: String, module: String)] {
        let modules = try cModules()
        let root = TestFiles.url("Sources")
        var found: [(String, String)] = []
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        while let url = files?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            let relative = "Sources/" + url.path.dropFirst(root.path.count + 1)
            for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") {
                // `import X`, `@_implementationOnly import X`, `internal import X`, `import struct X.Y`.
                let words = line.split(separator: " ").map(String.init)
                guard let index = words.firstIndex(of: "import"), index + 1 < words.count else { continue }
                let target = words[(index + 1)...].first { !["struct", "class", "enum", "func", "var"].contains($0) }
                if let module = target?.split(separator: ".").first.map(String.init), modules.contains(module) {
                    found.append((relative, module))
                }
            }
        }
        return found
    }

    @Test("the C modules are the folders of Sources/C")
    func modulesAreKnown() throws {
        #expect(try Self.cModules().isSuperset(of: ["Cvips", "CvipsShim", "Crdkafka", "Clibpq"]))
    }

    @Test("only the wrapper folders import a C module")
    func onlyWrappersImportC() throws {
        let imports = try Self.cImports()
        #expect(!imports.isEmpty, "the wrappers themselves import C: the scan must find them")
        for (file, module) in imports where !Self.wrapperFolders.contains(where: { file.hasPrefix($0) }) {
            Issue.record("\(file) imports the C module \(module) outside the wrapper folders")
        }
    }
}
