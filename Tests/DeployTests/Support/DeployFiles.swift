import Foundation
import TestEnvironment
import Yams

/// The repository's files (`TestFiles.repositoryRoot`).
enum Repo {
    static let root: URL = TestFiles.repositoryRoot

    static func url(_ path: String) -> URL { root.appendingPathComponent(path) }

    static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: url(path).path) }

    static func isDirectory(_ path: String) -> Bool {
        var directory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url(path).path, isDirectory: &directory) && directory.boolValue
    }

    static func text(_ path: String) throws -> String {
        try String(contentsOf: url(path), encoding: .utf8)
    }

    /// Every regular file under `folder`, as repository-relative paths, sorted.
    static func files(under folder: String) -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: url(folder).path) else { return [] }
        var paths: [String] = []
        while let relative = enumerator.nextObject() as? String {
            let path = folder + "/" + relative
            if !isDirectory(path) { paths.append(path) }
        }
        return paths.sorted()
    }

    /// `a/b/../c` → `a/c`, for paths that compose files and Dockerfiles give relative to themselves.
    static func normalise(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/") {
            if part == "." || part.isEmpty { continue }
            if part == "..", let last = parts.last, last != ".." { parts.removeLast() } else { parts.append(part) }
        }
        return parts.joined(separator: "/")
    }
}

struct DeployFileError: Error, CustomStringConvertible {
    var description: String
}

/// YAML through Yams, with the loosely typed results turned into plain dictionaries, arrays and strings.
enum YAMLFile {
    /// Every non-empty document of a file.
    static func documents(_ path: String) throws -> [Any] {
        try documents(text: try Repo.text(path))
    }

    /// Parses document by document with Yams' `Parser`, so a syntax error anywhere throws
    /// (`load_all`'s lazy sequence would end quietly at the first error instead).
    static func documents(text: String) throws -> [Any] {
        let parser = try Parser(yaml: text)
        var documents: [Any] = []
        while let node = try parser.nextRoot() {
            documents.append(plain(node.any))
        }
        return documents
    }

    /// The file's only document, which must be a mapping.
    static func mapping(_ path: String) throws -> [String: Any] {
        let documents = try documents(path)
        guard documents.count == 1, let mapping = documents[0] as? [String: Any] else {
            throw DeployFileError(description: "\(path): expected one YAML mapping")
        }
        return mapping
    }

    /// `[AnyHashable: Any]` → `[String: Any]`, recursively (YAML keys here are all strings or numbers).
    static func plain(_ value: Any) -> Any {
        if let mapping = value as? [AnyHashable: Any] {
            var result: [String: Any] = [:]
            for (key, element) in mapping { result[String(describing: key.base)] = plain(element) }
            return result
        }
        if let list = value as? [Any] { return list.map(plain) }
        return value
    }
}

/// Small accessors for loosely typed YAML/JSON values.
extension Dictionary where Key == String, Value == Any {
    func map(_ key: String) -> [String: Any]? { self[key] as? [String: Any] }
    func list(_ key: String) -> [Any]? { self[key] as? [Any] }
    func string(_ key: String) -> String? { self[key].flatMap(scalarText) }
    func int(_ key: String) -> Int? { string(key).flatMap { Int($0) } }

    /// A dotted path of mapping keys: `spec.template.spec`.
    func map(path: String) -> [String: Any]? {
        var current: [String: Any]? = self
        for key in path.split(separator: ".") { current = current?.map(String(key)) }
        return current
    }
}

/// The text of a YAML scalar as written (numbers and booleans included), nil for collections.
func scalarText(_ value: Any) -> String? {
    switch value {
    case let text as String: return text
    case let number as Int: return String(number)
    case let number as Double: return String(number)
    case let flag as Bool: return flag ? "true" : "false"
    default: return nil
    }
}

/// Kubernetes quantities: `1536Mi`, `1Gi`, `2`, `500m` (CPU); compose sizes: `1024m`, `1g`.
enum Quantity {
    /// Bytes of a Kubernetes memory quantity.
    static func kubernetesBytes(_ text: String) -> Double? {
        let units: [(String, Double)] = [
            ("Ki", 0x1p10), ("Mi", 0x1p20), ("Gi", 0x1p30), ("Ti", 0x1p40),
            ("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12),
        ]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            return Double(text.dropLast(suffix.count)).map { $0 * factor }
        }
        return Double(text)
    }

    /// Cores of a Kubernetes CPU quantity.
    static func cores(_ text: String) -> Double? {
        text.hasSuffix("m") ? Double(text.dropLast()).map { $0 / 1000 } : Double(text)
    }

    /// Bytes of a compose `mem_limit` (`b`, `k`, `m`, `g` suffixes are binary multiples).
    static func composeBytes(_ text: String) -> Double? {
        let lowered = text.lowercased()
        let units: [(String, Double)] = [
            ("kb", 0x1p10), ("mb", 0x1p20), ("gb", 0x1p30),
            ("k", 0x1p10), ("m", 0x1p20), ("g", 0x1p30), ("b", 1),
        ]
        for (suffix, factor) in units where lowered.hasSuffix(suffix) {
            return Double(lowered.dropLast(suffix.count)).map { $0 * factor }
        }
        return Double(lowered)
    }

    /// Seconds of a compose duration: `40s`, `1m30s`, `500ms`.
    static func composeSeconds(_ text: String) -> Double? {
        var total = 0.0
        var number = ""
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if character.isNumber || character == "." {
                number.append(character)
                index = text.index(after: index)
                continue
            }
            var unit = String(character)
            index = text.index(after: index)
            if unit == "m", index < text.endIndex, text[index] == "s" {
                unit = "ms"
                index = text.index(after: index)
            }
            guard let value = Double(number) else { return nil }
            switch unit {
            case "h": total += value * 3600
            case "m": total += value * 60
            case "s": total += value
            case "ms": total += value / 1000
            default: return nil
            }
            number = ""
        }
        return number.isEmpty ? total : nil
    }
}
