import CropGeometry
import CropProtocol
import Foundation
import Storage
import TestEnvironment
import Testing

@testable import AvatarWorker

/// Formats per rendition through the real worker, broker, database and store (docs/FORMATS.md): the keys say the
/// format, the result names every object, and a later version, a prune and a forget leave no key of any format
/// behind.
@Suite("Worker: formats per rendition (integration)", .requires(.database, .kafka))
struct WorkerFormatsTests {
    private static let source = "size/craft-beer_640x640.jpg"

    private func success(_ harness: WorkerHarness, _ jobID: String) async throws
        -> Avatar_Crop_V1_CropResult.Success
    {
        let result = try #require(try await harness.events.results(harness.topics.results, jobs: [jobID]).first)
        guard case .success(let success) = result.outcome else {
            throw FormatsTestFailure("expected a success, got \(result)")
        }
        return success
    }

    /// The user's public keys (not the versioned copies).
    private func publicKeys(_ harness: WorkerHarness, _ user: UUID) throws -> Set<String> {
        Set(try harness.store.keys(withPrefix: AvatarKeys.userPrefix(user)).filter { !$0.contains("/versions/") })
    }

    private func key(_ user: UUID, _ size: Int, _ format: AvatarFormat) -> String {
        AvatarKeys.avatarKey(userID: user, size: size, format: format)
    }

    @Test("the fleet's formats: every key, content type and size; the result lists each with its format and bytes")
    func fleetFormats() async throws {
        try await withHarness { harness in
            try harness.startWorker(["image.formats=png,webp,avif", "image.extra-formats=webp"])
            let user = UUID()
            var request = WorkerHarness.request(user: user, source: try harness.upload(Self.source))
            request.extraSizes = [128]
            try await harness.enqueue(request)
            let published = try await success(harness, request.jobID)
            #expect(published.avatarPath == key(user, 512, .png) && published.format == .png)
            #expect(
                published.renditions.map(\.path) == [
                    key(user, 128, .webp), key(user, 512, .webp), key(user, 512, .avif),
                ])
            #expect(published.renditions.map(\.format) == [.webp, .webp, .avif])
            #expect(published.renditions.map(\.size) == [128, 512, 512])
            #expect(published.renditions.allSatisfy { $0.url.hasSuffix("?v=1") && $0.url.contains($0.path) })
            let expected: [(String, Int, String, UInt64)] =
                [(published.avatarPath, 512, "image/png", published.bytes)]
                + published.renditions.map {
                    ($0.path, Int($0.size), AvatarFormat(wireValue: $0.format)!.contentType, $0.bytes)
                }
            #expect(try publicKeys(harness, user) == Set(expected.map(\.0)))
            for (path, size, contentType, bytes) in expected {
                let object = try harness.store.get(path)
                #expect(object.contentType == contentType, "\(path)")
                #expect(UInt64(object.data.count) == bytes && bytes > 0, "\(path)")
                let image = try ImageProbe.dimensions(object.data)
                #expect(image == (size, size), "\(path)")
            }
        }
    }

    @Test("a later version with other formats, a prune, then a forget: no key of any format is left behind")
    func nothingLeftBehind() async throws {
        try await withHarness { harness in
            try harness.startWorker(["image.formats=png,webp,avif", "image.extra-formats=avif"])
            let user = UUID()
            var first = WorkerHarness.request(user: user, source: try harness.upload(Self.source))
            first.extraSizes = [96]
            try await harness.enqueue(first)
            _ = try await success(harness, first.jobID)
            #expect(
                try publicKeys(harness, user)
                    == [key(user, 512, .png), key(user, 512, .webp), key(user, 512, .avif), key(user, 96, .avif)])

            // The request's own formats: version 2 is a JPEG and a WebP; v1's PNG, AVIFs and 96 px are deleted.
            var second = WorkerHarness.request(
                user: user, source: try harness.upload(Self.source), requestedAt: first.requestedAt + 1)
            second.formats = [.jpeg, .webp]
            try await harness.enqueue(second)
            #expect(try await success(harness, second.jobID).avatarPath == key(user, 512, .jpeg))
            #expect(try publicKeys(harness, user) == [key(user, 512, .jpeg), key(user, 512, .webp)])
            #expect(
                try harness.store.keys(withPrefix: AvatarKeys.userPrefix(user)).allSatisfy {
                    !$0.contains("/versions/") || $0.contains("/versions/2/")
                })

            // Pruning every row it may keeps the current version's keys known: a third version still sweeps v2's.
            _ = try LedgerRetention(client: harness.database, retention: .zero, batchSize: 100).prune()
            var third = WorkerHarness.request(
                user: user, source: try harness.upload(Self.source), requestedAt: first.requestedAt + 2)
            third.formats = [.avif]
            try await harness.enqueue(third)
            _ = try await success(harness, third.jobID)
            #expect(try publicKeys(harness, user) == [key(user, 512, .avif)])

            let forget = ValidatedCropRequest.forget(jobID: "forget-\(user)", userID: user, requestedAt: Date())
            try await harness.enqueue(forget)
            _ = try await success(harness, forget.jobID)
            #expect(try harness.store.keys(withPrefix: AvatarKeys.userPrefix(user)) == [])
        }
    }
}

/// A published object's pixel size, read from its header by libvips' `vipsheader` ("file: 512x512 uchar, ...").
enum ImageProbe {
    static func dimensions(_ data: [UInt8]) throws -> (Int, Int) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("probe-\(UUID().uuidString)")
        try Data(data).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/vipsheader")
        process.arguments = [file.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        process.waitUntilExit()
        let line = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let size = line.split(separator: " ").dropFirst().first?.split(separator: "x").compactMap { Int($0) } ?? []
        guard size.count == 2 else { throw FormatsTestFailure("vipsheader could not read the object: \(line)") }
        return (size[0], size[1])
    }
}

private struct FormatsTestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
