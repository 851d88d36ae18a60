/// A source photo whose header was read and passed the limits (`AvatarRenderer.probe`), ready for
/// `AvatarRenderer.render`: what the header says, and the private copy of the bytes libvips decodes
/// from. One job copies its bytes once and reads its header once.
///
/// It keeps the bytes, not an open libvips image: between the probe and the render a job may wait
/// for its memory reservation, and the render opens the loader with its own shrink-on-load factor.
public struct ProbedImage {
    /// What the header says (format, stored size, orientation, bands, profile…).
    public let header: ImageHeader
    /// How long the probe took (the render reports it as `RenderTimings.probe`).
    public let probeTime: Duration
    /// The bytes libvips reads from; every image derived from them keeps them alive.
    let input: InputBytes
}
