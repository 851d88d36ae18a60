import Foundation
import Testing

@Suite("Every deploy file parses")
struct ParseTests {
    static let structured = Repo.files(under: "deploy").filter {
        $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") || $0.hasSuffix(".json")
    }

    @Test("every YAML and JSON file under deploy/ parses, and none is empty")
    func deployFiles() throws {
        #expect(Self.structured.count >= 14)
        for file in Self.structured {
            try Self.parse(file)
        }
    }

    @Test(
        "the dashboard and alert rules the stack mounts parse (once dashboards/ has landed)",
        .enabled(if: Repo.isDirectory("dashboards")))
    func mountedDashboards() throws {
        for file in ["dashboards/avatar-cropper.grafana.json", "dashboards/alerts.rules.yml"] {
            try Self.parse(file)
        }
    }

    @Test("a broken file is reported")
    func brokenFilesFail() {
        #expect(throws: (any Error).self) { try YAMLFile.documents(text: "a: [1, 2\nb: 3\n") }
        #expect(throws: (any Error).self) { try YAMLFile.documents(text: "a: 1\n---\nb: [1\n") }
        #expect(throws: (any Error).self) {
            try JSONSerialization.jsonObject(with: Data("{\"a\": }".utf8))
        }
    }

    static func parse(_ file: String) throws {
        if file.hasSuffix(".json") {
            let object = try JSONSerialization.jsonObject(with: try Data(contentsOf: Repo.url(file)))
            #expect((object as? [String: Any])?.isEmpty == false, "\(file)")
        } else {
            let documents = try YAMLFile.documents(file)
            #expect(!documents.isEmpty, "\(file) has no document")
            for document in documents {
                #expect((document as? [String: Any])?.isEmpty == false, "\(file): a document is not a mapping")
            }
        }
    }
}
