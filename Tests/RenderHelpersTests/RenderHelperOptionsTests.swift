import Testing

@testable import RenderHelpers

/// The options a helper is started with (`RenderHelperOptions`): what the pool writes, the helper reads back.
@Suite("Render helpers: options")
struct RenderHelperOptionsTests {
    @Test("every combination reads back as written")
    func roundTrip() {
        for concurrency in [nil, 1, 4] {
            for model in [nil, "/opt/avatar-cropper/face model.onnx"] {
                for cores in [nil, 2] {
                    let options = RenderHelperOptions(
                        vipsConcurrency: concurrency, faceModel: model, decodeCores: cores)
                    #expect(RenderHelperOptions(arguments: options.arguments) == options)
                }
            }
        }
        #expect(RenderHelperOptions(arguments: []) == RenderHelperOptions())
    }

    @Test("an unknown word, a missing value or a count that is not positive is refused")
    func refused() {
        for arguments in [
            ["--verbose"], ["--face-model"], ["--decode-cores", "0"], ["--vips-concurrency", "two"],
            ["--decode-cores", "-1"], ["extra"],
        ] {
            #expect(RenderHelperOptions(arguments: arguments) == nil, "\(arguments)")
        }
    }

    @Test("the pool's launch writes them after the subcommand")
    func launch() {
        let launch = RenderHelperPool.Launch(executable: "/bin/true", vipsConcurrency: 2, faceModel: "/m.onnx")
        #expect(
            launch.arguments == [RenderHelperPool.Launch.subcommand] + [
                "--vips-concurrency", "2", "--face-model", "/m.onnx",
            ])
    }
}
