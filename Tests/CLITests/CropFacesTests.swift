import Foundation
import TestEnvironment
import Testing

/// `crop` without a pose, through a render helper of the built binary (which loads the face model installed
/// beside it: scripts/fetch-face-model.sh, run by `make build` and `make test`).
@Suite(
    "avatar-cropper crop: the face default",
    .enabled(if: FacePhotos.pascal != nil, Comment(rawValue: FacePhotos.missingPascal)))
struct CropFacesTests {
    /// dlib's photo of two dozen people (1986×1545): too wide a group for one square.
    static let group = FacePhotos.pascal?.appendingPathComponent("bald_guys.jpg").path ?? ""

    @Test("--default face: the faces and the pose in --json, the square on the face; --default centre: none")
    func faceDefault() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("avatar.png").path
        let run = try CLI.run(["crop", Self.group, "-o", output, "--json", "--default", "face"])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(object["face_error"] == nil, "\(object["face_error"] ?? "")")
        #expect(object["face_rule_used"] as? Bool == true)
        let faces = try #require(object["faces"] as? [[String: Any]])
        #expect(faces.count >= 20)
        // The group does not fit in one square: the largest face alone, a square of twice its height.
        #expect(object["face_largest_only"] as? Bool == true)
        #expect(faces.filter { $0["kept"] as? Bool == true }.count == 1)
        let pose = try #require(object["pose"] as? [String: Double])
        #expect((pose["scale"] ?? 0) > (object["s_min"] as? Double ?? .infinity))
        #expect((object["crop_side"] as? Int ?? 1545) < 1000)

        let centred = try CLI.run(["crop", Self.group, "-o", output, "--json", "--default", "centre"])
        #expect(centred.status == 0, "stderr: \(centred.stderr)")
        let plain = try #require(try JSONSerialization.jsonObject(with: Data(centred.stdout.utf8)) as? [String: Any])
        #expect(plain["faces"] == nil && plain["crop_side"] as? Int == 1545)
    }
}
