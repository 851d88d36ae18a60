/// What a render helper (and the template it is forked from) is started with after its subcommand
/// (`render-helper [--vips-concurrency N] [--face-model PATH] [--decode-cores N]`): written by the pool's `Launch`
/// and read back by `RenderHelperServer.run(arguments:)`, here in one place, so any binary that links the helpers
/// serves them (`avatar-cropper`, and `avatar-bench` measuring them as the worker runs them: one binary).
public struct RenderHelperOptions: Sendable, Equatable {
    /// libvips threads per render (the worker's `vips.concurrency`); nil: libvips' default.
    public var vipsConcurrency: Int?
    /// The face detector's model file, loaded before the helper locks itself down; nil: no faces are found.
    public var faceModel: String?
    /// How many decode cores the worker shares on `HelperProcess.coresDescriptor`; nil: each render decodes alone.
    public var decodeCores: Int?

    public init(vipsConcurrency: Int? = nil, faceModel: String? = nil, decodeCores: Int? = nil) {
        self.vipsConcurrency = vipsConcurrency
        self.faceModel = faceModel
        self.decodeCores = decodeCores
    }

    private enum Name: String {
        case vipsConcurrency = "--vips-concurrency"
        case faceModel = "--face-model"
        case decodeCores = "--decode-cores"
    }

    /// The command-line words after the subcommand.
    public var arguments: [String] {
        (vipsConcurrency.map { [Name.vipsConcurrency.rawValue, "\($0)"] } ?? [])
            + (faceModel.map { [Name.faceModel.rawValue, $0] } ?? [])
            + (decodeCores.map { [Name.decodeCores.rawValue, "\($0)"] } ?? [])
    }

    /// Reads `arguments` back; nil for a word it does not know, a name without its value, or a count that is not a
    /// positive number.
    public init?(arguments: [String]) {
        self.init()
        var words = arguments[...]
        while let word = words.popFirst() {
            guard let name = Name(rawValue: word), let value = words.popFirst() else { return nil }
            switch name {
            case .faceModel: faceModel = value
            case .vipsConcurrency, .decodeCores:
                guard let count = Int(value), count > 0 else { return nil }
                if name == .vipsConcurrency { vipsConcurrency = count } else { decodeCores = count }
            }
        }
    }
}
