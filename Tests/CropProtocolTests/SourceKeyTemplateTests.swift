import CropGeometry
import CropProtocol
import Foundation
import Testing

/// docs/ARCHITECTURE.md §7: `source_key` is not tied to `user_id` unless the worker is given a template.
@Suite("Source-key template")
struct SourceKeyTemplateTests {
    static let alice = UUID(uuidString: "8F14E45F-CEEA-467A-9575-6B2C3F1A9E11")!
    static let bob = UUID(uuidString: "0B7C2D4E-1111-4222-8333-944455556666")!

    static func request(user: UUID, source: String) -> ValidatedCropRequest {
        ValidatedCropRequest(jobID: "job-1", userID: user, sourceKey: source, input: .centred, requestedAt: Date())
    }

    @Test("a key under the user's own prefix passes; another user's upload is INVALID_REQUEST")
    func enforced() throws {
        let template = try SourceKeyTemplate("uploads/{user_id}/")
        let alicesUpload = "uploads/8f14e45f-ceea-467a-9575-6b2c3f1a9e11/photo.jpg"
        try Self.request(user: Self.alice, source: alicesUpload).checkSourceKey(template)
        for key in [
            alicesUpload, "uploads/8f14e45f-ceea-467a-9575-6b2c3f1a9e11x/photo.jpg", "avatars/anything.jpg",
            "uploads/8f14e45f-ceea-467a-9575-6b2c3f1a9e11",
        ] {
            do {
                try Self.request(user: Self.bob, source: key).checkSourceKey(template)
                Issue.record("bob's request may read \(key)")
            } catch {
                #expect(error.code == .invalidValue("source_key"))
                #expect(error.errorCode == .invalidRequest)
                // The reason names the template, never the key or the user.
                #expect(!error.reason.contains("8f14e45f") && !error.reason.contains("0b7c2d4e"))
            }
        }
        // Without a template producers are trusted: any valid key passes.
        try Self.request(user: Self.bob, source: alicesUpload).checkSourceKey(nil)
    }

    @Test("the user id is the canonical lower-case form, placed anywhere in the template")
    func placement() throws {
        let template = try SourceKeyTemplate("tenants/a/{user_id}-uploads/")
        #expect(template.prefix(for: Self.alice) == "tenants/a/8f14e45f-ceea-467a-9575-6b2c3f1a9e11-uploads/")
        #expect(template.description == "tenants/a/{user_id}-uploads/")
        #expect(!template.permits("tenants/a/8F14E45F-CEEA-467A-9575-6B2C3F1A9E11-uploads/p.jpg", userID: Self.alice))
    }

    @Test(
        "templates that cannot bind a key to its user are refused",
        arguments: [
            "uploads/", "uploads/{user_id}", "{user_id}/{user_id}/", "/uploads/{user_id}/", "a/../{user_id}/",
            "a//{user_id}/", "a\\{user_id}/", "a\u{0600}/../{user_id}/",
        ])
    func invalidTemplates(_ text: String) {
        #expect(throws: SourceKeyTemplate.Invalid.self) { try SourceKeyTemplate(text) }
    }
}
