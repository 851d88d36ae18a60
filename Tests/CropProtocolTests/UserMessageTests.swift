import CropProtocol
import Foundation
import TestEnvironment
import Testing

/// The sentences a user sees are one table, `CropErrorCode.userMessage` (docs/ARCHITECTURE.md §3): every
/// code has one, and no other source file (Imaging's errors in particular) words a message of its own.
@Suite("User messages")
struct UserMessageTests {
    @Test("every code has one sentence; too small is the product contract's, word for word")
    func everyCodeHasOne() {
        for code in CropErrorCode.allCases {
            let message = code.userMessage
            #expect(!message.isEmpty, "\(code)")
            #expect(message.first?.isUppercase == true, "\(code): \(message)")
            // Never technical: no wire code, no snake_case code name in the sentence.
            #expect(!message.contains(code.rawValue), "\(code): \(message)")
            #expect(!message.contains("_"), "\(code): \(message)")
        }
        #expect(CropErrorCode.tooSmall.userMessage == "This photo is too small for a profile picture")
        // Codes that need different actions from the user read differently.
        let distinct: [CropErrorCode] = [
            .decodeFailed, .unsupportedFormat, .tooLarge, .tooManyPixels, .tooSmall, .processingFailed,
            .aspectMismatch, .invalidRequest, .sourceNotFound, .outOfMemory, .timeout, .internal,
        ]
        #expect(Set(distinct.map(\.userMessage)).count == distinct.count)
    }

    @Test("a failure result and a protocol error carry the code's sentence")
    func carriedFromTheTable() {
        let result = CropResultBuilder.failure(
            jobID: "job-1", userID: nil, requestedAt: nil, finishedAt: Date(timeIntervalSince1970: 0),
            code: .decodeFailed, attempts: 1)
        #expect(result.failure.userMessage == CropErrorCode.decodeFailed.userMessage)
        let error = ProtocolError(.invalidUserID, reason: "user_id is not a UUID")
        #expect(error.userMessage == CropErrorCode.invalidID.userMessage)
    }

    @Test("each sentence is written once in Sources (generated code aside), in CropErrorCode.swift; Imaging has none")
    func writtenOnce() throws {
        let root = TestFiles.url("Sources")
        var sources: [(path: String, text: String)] = []
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        while let url = files?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            let path = "Sources/" + url.path.dropFirst(root.path.count + 1)
            // Generated from proto/, whose comment quotes the contract's example sentence.
            if path.hasPrefix("Sources/CropProtocol/Generated/") { continue }
            sources.append((path, try String(contentsOf: url, encoding: .utf8)))
        }
        #expect(sources.contains { $0.path == "Sources/CropProtocol/CropErrorCode.swift" })
        for message in Set(CropErrorCode.allCases.map(\.userMessage)) {
            let quoting = sources.filter { $0.text.contains("\"\(message)\"") }.map(\.path)
            #expect(quoting == ["Sources/CropProtocol/CropErrorCode.swift"], "\(message)")
        }
        for file in sources where file.path.hasPrefix("Sources/Imaging/") {
            // Code, not comments (which may point to the table).
            let code = file.text.split(separator: "\n").filter {
                !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//")
            }
            #expect(!code.contains { $0.contains("userMessage") }, "\(file.path) words a user message")
        }
    }
}
