import CropProtocol
import Foundation
import Messaging
import RenderHelpers
import Testing

@testable import AvatarWorker

/// The scheduler's key comes from the body's user id, never from the Kafka key (issue 8).
@Suite("Job ordering key and test seams (unit)")
struct CropJobOrderingTests {
    private func job(_ request: ValidatedCropRequest?, key: String?, offset: Int64 = 0) throws -> CropJob {
        let value = try request.map { try CropCodec.encode($0.message) } ?? Array("garbage".utf8)
        return CropJob(
            message: KafkaMessage(
                topic: "t", partition: 0, offset: offset, key: key.map { Array($0.utf8) }, value: value,
                headers: [], timestamp: nil),
            receivedAt: .now)
    }

    @Test("one user's jobs share a key whatever the message key: upper case, another user's, or none")
    func canonicalUserID() throws {
        let user = UUID()
        let request = ValidatedCropRequest(jobID: "j", userID: user, sourceKey: "s/a.jpg", requestedAt: Date())
        let keys = try [user.uuidString, user.uuidString.lowercased(), UUID().uuidString, nil].map {
            try job(request, key: $0).orderingKey
        }
        #expect(Set(keys) == ["user:" + user.uuidString.lowercased()])
        #expect(try job(request, key: nil).decoded.get() == request, "decoded once, on the consumer thread")
    }

    @Test("an unreadable message gets a key of its own")
    func unreadable() throws {
        let a = try job(nil, key: "same", offset: 1).orderingKey
        let b = try job(nil, key: "same", offset: 2).orderingKey
        #expect(a != b)
    }

    @Test("seams exist only when the test-only setting names them; the source markers act in the render")
    func seams() throws {
        #expect(try JobTestSeamsSetting.seams(named: SourceMarkerSeams.name)?.renderSeams == .sourceMarkers)
        #expect(TestSeams().renderSeams == nil)
        #expect(try JobTestSeamsSetting.seams(named: nil) == nil)
        #expect(try JobTestSeamsSetting.seams(named: "") == nil)
        #expect(try JobTestSeamsSetting.seams(named: SourceMarkerSeams.name) is SourceMarkerSeams)
        #expect(throws: ConfigurationValues.Error.self) { try JobTestSeamsSetting.seams(named: "source-marker") }
    }

    @Test("a report is built from its job: the request, or what could be read of an unreadable message")
    func reportFromJob() throws {
        let request = ValidatedCropRequest(jobID: "j", userID: UUID(), sourceKey: "s/a.jpg", requestedAt: Date())
        let readable = JobReport(try job(request, key: nil), failure: JobFailure.timedOut)
        #expect(readable.request == request && readable.jobID == "j" && readable.userID == request.userID)
        let unreadable = JobReport(try job(nil, key: nil), failure: JobFailure.timedOut)
        #expect(unreadable.request == nil && unreadable.jobID == nil && unreadable.userID == nil)
        #expect(unreadable.failure?.code == .timeout)
    }
}
