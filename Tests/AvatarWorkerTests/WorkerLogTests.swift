import CropGeometry
import CropProtocol
import Foundation
import TestEnvironment
import Testing

@testable import AvatarWorker

/// The real `avatar-cropper worker`, on the real services, with its standard error in a file (not a terminal, so
/// JSON lines by default): every line is one JSON object with the fixed fields, the job's lines carry its id,
/// librdkafka's messages arrive as lines of the same form, and nothing private is written, on the local-directory
/// store and on SeaweedFS (the S3 client at debug level).
@Suite("Worker logs (integration)", .requires(.database, .kafka, .s3), .serialized)
struct WorkerLogTests {
    @Test(
        "one job's JSON log lines: parseable, job and trace ids present, no user id, key, path or secret",
        arguments: WorkerStore.allCases)
    func jsonLines(store: WorkerStore) async throws {
        try await withHarness(partitions: 1, store: store) { harness in
            let user = UUID()
            let source = try harness.upload("size/craft-beer_640x640.jpg")
            let applied = WorkerHarness.request(user: user, source: source)
            let tooSmall = WorkerHarness.request(user: user, source: try harness.upload("size/craft-beer_319x479.jpg"))
            try await harness.enqueue(applied)
            let traceParent = TraceParent.random()
            try await harness.enqueue(tooSmall, traceParent: traceParent)

            let logFile = harness.storeRoot.deletingLastPathComponent()
                .appendingPathComponent(WorkerTestSupport.uniqueName("worker-log") + ".jsonl")
            try #require(FileManager.default.createFile(atPath: logFile.path, contents: nil))
            defer { try? FileManager.default.removeItem(at: logFile) }
            let process = Process()
            process.executableURL = WorkerTestSupport.executable
            process.arguments = ["worker"]
            var environment = try harness.processEnvironment()
            environment["AVATAR_LOG_LEVEL"] = "debug"
            environment["AVATAR_LOG_FORMAT"] = nil  // the default: json, as stderr is a file
            // librdkafka's own debug messages, to see them arrive through the same handler.
            environment["AVATAR_KAFKA_PROPERTY_DEBUG"] = "cgrp"
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: logFile)
            try process.run()

            let results = try await harness.events.results(
                harness.topics.results, jobs: [applied.jobID, tooSmall.jobID], timeout: .seconds(120))
            #expect(results.count == 2)
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "a drained worker exits cleanly")

            let text = try String(contentsOf: logFile, encoding: .utf8)
            let lines = text.split(separator: "\n")
            #expect(lines.count >= 5, "too few log lines: \(text.prefix(2000))")
            var objects: [[String: Any]] = []
            for line in lines {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    Issue.record("not one JSON object: \(line.prefix(300))")
                    continue
                }
                objects.append(object)
                for field in ["time", "level", "label", "source", "message"] {
                    #expect(object[field] is String, "\(field) missing in \(line.prefix(300))")
                }
                let time = object["time"] as? String ?? ""
                #expect(
                    time.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z/) != nil, "not RFC 3339 UTC: \(time)")
            }

            // The start line: the version, the libraries and the configuration, without the database URL.
            let start = try #require(objects.first { ($0["message"] as? String)?.hasSuffix(" starting") == true })
            #expect(start["version"] as? String == BuildInfo.projectVersion)
            #expect((start["libraries"] as? [String: String])?["libvips"]?.isEmpty == false)
            let configuration = start["configuration"] as? [String: String] ?? [:]
            #expect(configuration[ConfigurationKey.topicRequests.name] == harness.topics.requests)
            #expect(configuration[ConfigurationKey.databaseURL.name] == "<redacted>")

            // Each job's lines carry its id; the failure says its code.
            let jobIDs = Set(objects.compactMap { $0[LogKey.jobID] as? String })
            #expect(jobIDs.isSuperset(of: [applied.jobID, tooSmall.jobID]), "job ids in the log: \(jobIDs)")
            #expect(
                objects.contains {
                    $0[LogKey.jobID] as? String == tooSmall.jobID && $0[LogKey.errorCode] as? String == "TOO_SMALL"
                })
            // A traced request's lines carry its trace id, and its result line the span its events continue (with
            // tracing off, the request's); an untraced request's carry none.
            let failedLine = objects.first {
                $0[LogKey.jobID] as? String == tooSmall.jobID && $0[LogKey.errorCode] is String
            }
            #expect(failedLine?[LogKey.traceID] as? String == traceParent.traceIDHex)
            #expect(failedLine?[LogKey.spanID] as? String == traceParent.parentIDHex)
            #expect(!objects.contains { $0[LogKey.jobID] as? String == applied.jobID && $0[LogKey.traceID] != nil })
            // librdkafka's messages, through the same handler.
            #expect(objects.contains { $0["kafka.facility"] is String }, "no librdkafka message in the log")

            // Nothing private: no user id (either case), storage key or path inside the store (the start line
            // names the store itself, storage.url, which is the operator's setting), nor the database URL.
            let databaseURL = try TestService.database.require()
            let forbidden =
                [
                    user.uuidString.lowercased(), user.uuidString.uppercased(), source, harness.storeRoot.path + "/",
                    "users/", databaseURL,
                ] + (harness.bucket.map { [$0.settings.secretKey] } ?? [])
            for needle in forbidden {
                #expect(!text.contains(needle), "the log holds something private: \(needle)")
            }
        }
    }
}
