import CropGeometry
import CropProtocol
import Foundation
import Testing

/// `OutputSpec.formats`, `CropRequest.extra_formats` and the result's renditions (docs/FORMATS.md).
@Suite("Formats in the request and the result")
struct FormatRequestTests {
    private func invalid(_ edit: (inout Avatar_Crop_V1_CropRequest) -> Void) -> ProtocolError? {
        var message = TestSupport.minimalRequest()
        edit(&message)
        do {
            _ = try ValidatedCropRequest(message)
            return nil
        } catch {
            return error
        }
    }

    @Test("no formats named: the fleet's, and the extra sizes take the avatar's unless the fleet names theirs")
    func fleetDefaults() throws {
        let request = try ValidatedCropRequest(TestSupport.minimalRequest())
        #expect(request.formats == nil && request.extraFormats == nil)
        #expect(request.formats(fleet: [.png], extras: nil) == RenditionFormats(avatar: [.png], extras: [.png]))
        #expect(
            request.formats(fleet: [.png, .avif], extras: [.webp])
                == RenditionFormats(avatar: [.png, .avif], extras: [.webp]))
    }

    @Test("the request's own formats win; extra sizes without their own take the request's avatar formats")
    func ownFormats() throws {
        var message = TestSupport.minimalRequest()
        message.output.formats = [.png, .webp, .avif]
        let request = try ValidatedCropRequest(message)
        #expect(request.formats == [.png, .webp, .avif])
        #expect(
            request.formats(fleet: [.jpeg], extras: nil)
                == RenditionFormats(avatar: [.png, .webp, .avif], extras: [.png, .webp, .avif]))
        message.extraFormats = [.webp]
        let withExtras = try ValidatedCropRequest(message)
        #expect(withExtras.formats(fleet: [.jpeg], extras: [.avif]).extras == [.webp])
        // The message round-trips.
        #expect(try ValidatedCropRequest(withExtras.message) == withExtras)
    }

    @Test("output.format alone is a one-format list; with formats it must come first")
    func singleFormat() throws {
        var message = TestSupport.minimalRequest()
        message.output.format = .webp
        #expect(try ValidatedCropRequest(message).formats == [.webp])
        message.output.formats = [.webp, .png]
        #expect(try ValidatedCropRequest(message).formats == [.webp, .png])
        message.output.formats = [.png, .webp]
        #expect(invalid { $0 = message }?.code == .invalidValue("output.formats"))
    }

    @Test("a malformed format list is INVALID_REQUEST naming the field")
    func malformed() {
        let cases: [(String, (inout Avatar_Crop_V1_CropRequest) -> Void)] = [
            ("output.formats", { $0.output.formats = [.png, .png] }),
            ("output.formats", { $0.output.formats = [.unspecified] }),
            ("output.formats", { $0.output.formats = [.png, .UNRECOGNIZED(9)] }),
            ("extra_formats", { $0.extraFormats = [.avif, .avif] }),
            ("extra_formats", { $0.extraFormats = [.UNRECOGNIZED(42)] }),
            ("output.format", { $0.output.format = .UNRECOGNIZED(7) }),
        ]
        for (field, edit) in cases {
            let error = invalid(edit)
            #expect(error?.code == .invalidValue(field), "\(field): \(String(describing: error))")
            #expect(error?.errorCode == .invalidRequest)
        }
    }

    @Test("the configuration's and the CLI's lists: names, spaces, and what is wrong with a bad one")
    func parsing() throws {
        #expect(try RenditionFormats.parse("png, webp,AVIF").get() == [.png, .webp, .avif])
        for bad in ["", "png,", "gif", "png,png", "jpg"] {
            #expect(throws: FormatListError.self, "\(bad)") { try RenditionFormats.parse(bad).get() }
        }
    }

    @Test("the result carries each rendition's format and bytes, by size, formats in the order given")
    func resultRenditions() {
        let request = ValidatedCropRequest(
            jobID: "j", userID: TestSupport.userID, sourceKey: "s/a.jpg", requestedAt: Date(timeIntervalSince1970: 1))
        var success = CropSuccess(
            avatarPath: "users/u/avatar_512.png", avatarVersion: 2, size: 512, format: .png,
            renditions: [
                CropRendition(size: 128, path: "users/u/avatar_128.webp", format: .webp, bytes: 3000),
                CropRendition(size: 512, path: "users/u/avatar_512.webp", format: .webp, bytes: 40000),
                CropRendition(size: 512, path: "users/u/avatar_512.avif", format: .avif, bytes: 25000),
            ])
        success.bytes = 400_000
        let wire = CropResultBuilder.success(for: request, finishedAt: Date(timeIntervalSince1970: 2), success).success
        #expect(wire.bytes == 400_000 && wire.format == .png)
        #expect(
            wire.renditions.map(\.path) == [
                "users/u/avatar_128.webp", "users/u/avatar_512.webp", "users/u/avatar_512.avif",
            ])
        #expect(wire.renditions.map(\.format) == [.webp, .webp, .avif])
        #expect(wire.renditions.map(\.bytes) == [3000, 40000, 25000])
    }

    @Test("the metrics: the avatar's primary format, JPEG's quality only with a JPEG, and each format's encodes")
    func metrics() {
        var sample = CropMetricsSample(outcome: .applied)
        sample.record(formats: [.png, .webp], extraFormats: [.webp], quality: 85)
        #expect(sample.outputFormat == .png && sample.quality == 0)
        sample.record(formats: [.avif], extraFormats: [.jpeg], quality: 85)
        #expect(sample.outputFormat == .avif && sample.quality == 85)
        sample.formatEncodes = [
            .init(format: .avif, renditions: 1, bytes: 27_000, encodeMs: 66.5),
            .init(format: .jpeg, renditions: 2, bytes: 80_000, encodeMs: 2.25),
        ]
        let encodes = sample.message.formatEncodes
        #expect(encodes.map(\.format) == [.avif, .jpeg] && encodes.map(\.renditions) == [1, 2])
        #expect(encodes.map(\.bytes) == [27_000, 80_000] && encodes.map(\.encodeMs) == [66.5, 2.25])
    }

    @Test("every format has a wire value, a key extension and a content type, distinct")
    func formatFacts() {
        let all = AvatarFormat.allCases
        #expect(Set(all.map(\.wireValue)).count == all.count)
        #expect(all.allSatisfy { AvatarFormat(wireValue: $0.wireValue) == $0 })
        #expect(AvatarFormat(wireValue: .unspecified) == nil)
        #expect(all.map(\.fileExtension) == ["png", "jpg", "webp", "avif"])
        #expect(all.map(\.contentType) == ["image/png", "image/jpeg", "image/webp", "image/avif"])
        #expect(all.allSatisfy { AvatarFormat(fileName: "avatar_512.\($0.fileExtension)") == $0 })
        #expect(AvatarFormat(fileName: "a.JPEG") == .jpeg && AvatarFormat(fileName: "a.gif") == nil)
        #expect(AvatarFormat(fileName: "noext") == nil && AvatarFormat(fileName: "dir.webp/x") == nil)
    }
}
