import CHEIFRegion
import Glibc
import Synchronization

/// The cores a worker's renders share across its processes (docs/ARCHITECTURE.md §3, "Decode cores"): every
/// render holds one for its whole run, and a HEIF grid's tiles are decoded on the idle ones too, by extra
/// threads that take a core for each tile and stop taking when none is free or a render waits. So one job at
/// low load uses every idle core, and a full worker runs one decoding thread per core, as before.
///
/// The cores are byte-range locks on a memory file the worker makes and its helpers inherit
/// (`cheif_cores_*`): the kernel arbitrates between the processes and frees a killed helper's cores.
public final class DecodeCores: @unchecked Sendable {
    // @unchecked Sendable: the C handle is thread-safe and never changes.

    /// The memory file's descriptor (a helper gets it as its own descriptor `RenderHelperPool.Launch`'s
    /// `coresDescriptor`).
    public let descriptor: Int32
    /// Cores shared: at most this many renders and tile threads decode at once.
    public let count: Int
    private let handle: OpaquePointer
    private let ownsDescriptor: Bool

    /// Most extra threads one decode starts (each holds a stack and, on HEVC, libde265's own thread: the address
    /// space a helper's cap leaves for them, `AddressSpaceCap.headroom`, bounds it).
    public static let maxExtraThreads = 7
    /// Longest a render waits for a core before it runs without one: extra threads give theirs back within
    /// one tile's decode once a render waits, so only renders holding every core (more render slots than
    /// cores) make it wait this long.
    static let takeWaitMilliseconds: Int32 = 50

    /// Extra tile threads one decode may start: every other core, up to `maxExtraThreads`.
    var extraThreads: Int { min(count - 1, Self.maxExtraThreads) }

    /// The most grid tiles one decode holds at once (`cheif_tiles_held`), with the process's cores or without.
    static var tilesHeldPerDecode: Int { Int(cheif_tiles_held(Int32(installed?.extraThreads ?? 0))) }

    /// New cores: a memory file of this process's, which the helpers it starts inherit.
    public init(count: Int) throws(ImagingError) {
        precondition(count >= 1, "at least one core")
        let descriptor = cheif_cores_create()
        guard descriptor >= 0 else {
            throw ImagingError(.processingFailed, detail: "memfd_create for the decode cores: errno \(-descriptor)")
        }
        guard let handle = cheif_cores_open(descriptor, Int32(count)) else {
            _ = Glibc.close(descriptor)
            throw ImagingError(.outOfMemory, detail: "the decode cores' table")
        }
        (self.descriptor, self.count, self.handle, self.ownsDescriptor) = (descriptor, count, handle, true)
    }

    /// A helper's view of its worker's cores: the memory file it inherited on `descriptor`.
    public init?(inherited descriptor: Int32, count: Int) {
        guard count >= 1, let handle = cheif_cores_open(descriptor, Int32(count)) else { return nil }
        (self.descriptor, self.count, self.handle, self.ownsDescriptor) = (descriptor, count, handle, false)
    }

    deinit {
        cheif_cores_close(handle)
        if ownsDescriptor { _ = Glibc.close(descriptor) }
    }

    /// The C handle and the extra threads for a grid decode's request.
    func request() -> (cores: OpaquePointer, extraThreads: Int32) { (handle, Int32(extraThreads)) }

    /// Runs `body` holding a core: the first free one, else one that frees within `takeWaitMilliseconds`,
    /// else none (the render runs anyway: its render slot is its licence to run).
    func holdingCore<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        let core = cheif_cores_take(handle, Self.takeWaitMilliseconds)
        defer { cheif_cores_give(handle, core) }
        return try body()
    }

    /// Runs `body` holding a core of the process's cores (`holdingCore`), or just runs it when none are installed.
    static func holdingCore<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        guard let cores = installed else { return try body() }
        return try cores.holdingCore(body)
    }

    /// An extra thread's core for one tile, as the C decoder takes them (nil: none free, or a render waits).
    func takeExtra() -> Int32? {
        let core = cheif_cores_take_extra(handle)
        return core >= 0 ? core : nil
    }

    func give(_ core: Int32) { cheif_cores_give(handle, core) }

    // MARK: - The process's cores

    private static let current = Mutex<DecodeCores?>(nil)

    /// Makes `cores` the process's: every render from now on holds one of them, and HEIF grids decode on
    /// their idle ones. Nil: renders take no core and decode on their own thread.
    public static func install(_ cores: DecodeCores?) {
        current.withLock { $0 = cores }
    }

    /// The process's cores, nil when none are installed.
    public static var installed: DecodeCores? { current.withLock { $0 } }
}
