import Imaging
import Sandbox

extension HelperCoding {
    /// Every message of the channel encoded and decoded once, as a job's will be, around `rendered` (the warm-up's
    /// render). A helper does it before its lockdown, and the template does it once for every helper it forks: the
    /// Swift runtime's per-process caches (type metadata, protocol conformances) then already hold what a job's
    /// messages need, which a helper forked from a template that had never coded them looked up during its job
    /// (about 1.5 ms of a 640 px job's probe exchange: CHANGELOG.md, 2026-11-29). Its outcome is not used.
    static func rehearse(with rendered: RenderResult) {
        let nonce: UInt64 = 1
        let options = AvatarRenderer.rehearsalOptions
        let probe = ProbeJob(
            nonce: nonce, sourceLength: 1, input: .centred, options: options, limits: ImageLimits(), seams: nil)
        let probed = ProbeResult(
            header: rendered.header, estimate: MemoryAdmission.estimate(header: rendered.header, options: options))
        let requests: [HelperRequest] = [.probe(probe), .render(nonce: nonce, fallback: false)]
        let replies: [HelperReply] = [
            .ready(ProcessLockdown.Layers()), .probed(nonce: nonce, probed),
            .rendered(nonce: nonce, RenderedImage(rendered)),
            .failed(nonce: nonce, HelperFailure(ImagingError(.processingFailed))),
        ]
        for request in requests { _ = try? decode(HelperRequest.self, from: encode(request)) }
        for reply in replies { _ = try? decode(HelperReply.self, from: encode(reply)) }
    }
}
