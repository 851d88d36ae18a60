import Foundation
import Logging
import Testing

@testable import AvatarWorker

@Suite("JSON log lines")
struct JSONLogHandlerTests {
    /// Logs through a handler writing to a temporary file; returns what it wrote.
    private func written(_ body: (Logger) -> Void) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("log-\(UUID().uuidString)")
        try #require(FileManager.default.createFile(atPath: url.path, contents: nil))
        defer { try? FileManager.default.removeItem(at: url) }
        let handle = try FileHandle(forWritingTo: url)
        let output = LogLineOutput(descriptor: handle.fileDescriptor)
        var logger = Logger(label: "test.json") { JSONLogHandler(label: $0, output: output) }
        logger.logLevel = .debug
        body(logger)
        try handle.close()
        return try String(contentsOf: url, encoding: .utf8)
    }

    private func objects(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    @Test("one object per line: fixed fields first, metadata as fields, values escaped")
    func fields() throws {
        let text = try written { logger in
            var logger = logger
            logger[metadataKey: LogKey.jobID] = "job-1"
            logger.info(
                "quote \" backslash \\ newline \n tab \t bell \u{7} é",
                metadata: [
                    "partition": "3", "list": ["a", "b"], "nested": ["k": "v"], "message": "collides",
                ])
            logger.debug("second")
        }
        #expect(text.hasSuffix("\n") && text.split(separator: "\n").count == 2, "\(text)")
        #expect(text.hasPrefix(#"{"time":""#), "time comes first")
        let lines = try objects(text)
        let first = lines[0]
        #expect(first["level"] as? String == "info")
        #expect(first["label"] as? String == "test.json")
        #expect(first["source"] as? String == "AvatarWorkerTests")
        #expect(first["message"] as? String == "quote \" backslash \\ newline \n tab \t bell \u{7} é")
        #expect(first[LogKey.jobID] as? String == "job-1")
        #expect(first["partition"] as? String == "3")
        #expect(first["list"] as? [String] == ["a", "b"])
        #expect(first["nested"] as? [String: String] == ["k": "v"])
        #expect(first["_message"] as? String == "collides", "a metadata key naming a fixed field is kept, renamed")
        #expect(lines[1]["message"] as? String == "second" && lines[1]["level"] as? String == "debug")
        #expect(lines[1][LogKey.jobID] as? String == "job-1")
    }

    @Test("time is RFC 3339 in UTC with microseconds")
    func timestamp() {
        #expect(JSONLogHandler.timestamp(seconds: 0, microseconds: 7) == "1970-01-01T00:00:00.000007Z")
        #expect(
            JSONLogHandler.timestamp(seconds: 1_767_225_600, microseconds: 999_999) == "2026-01-01T00:00:00.999999Z")
        let now = JSONLogHandler.timestamp()
        #expect(now.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z/) != nil, "\(now)")
    }

    @Test("a metadata provider's fields are written, explicit metadata wins")
    func provider() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("log-\(UUID().uuidString)")
        try #require(FileManager.default.createFile(atPath: url.path, contents: nil))
        defer { try? FileManager.default.removeItem(at: url) }
        let handle = try FileHandle(forWritingTo: url)
        let output = LogLineOutput(descriptor: handle.fileDescriptor)
        let provider = Logger.MetadataProvider { ["trace_id": "t1", "span_id": "s1"] }
        let logger = Logger(label: "p") { JSONLogHandler(label: $0, metadataProvider: provider, output: output) }
        logger.info("x", metadata: ["span_id": "explicit"])
        try handle.close()
        let line = try #require(try objects(String(contentsOf: url, encoding: .utf8)).first)
        #expect(line["trace_id"] as? String == "t1")
        #expect(line["span_id"] as? String == "explicit")
    }

    @Test("log.format: json or text; json by default when stderr is not a terminal; anything else is refused")
    func format() throws {
        let unset = try ConfigurationValues()
        #expect(try LogFormat.configured(unset, standardErrorIsTerminal: false) == .json)
        #expect(try LogFormat.configured(unset, standardErrorIsTerminal: true) == .text)
        let text = try ConfigurationValues(flags: ["log.format=text"])
        #expect(try LogFormat.configured(text, standardErrorIsTerminal: false) == .text)
        let json = try ConfigurationValues(environment: ["AVATAR_LOG_FORMAT": "json"])
        #expect(try LogFormat.configured(json, standardErrorIsTerminal: true) == .json)
        #expect(throws: ConfigurationValues.Error.self) {
            try LogFormat.configured(ConfigurationValues(flags: ["log.format=xml"]))
        }
    }
}
