import Cvips
import CvipsShim
import Synchronization

/// The process-wide libvips setup. Call `initialise` once at start-up (further calls are
/// no-ops); the renderer also initialises on first use with the defaults.
public enum Vips {
    private enum State {
        case uninitialised
        case ready(Library)
        case failed(ImagingError)
    }

    /// What starting libvips produced (the render's shared parts are `RenderResources`).
    struct Library: Sendable {
        /// libvips' built-in sRGB profile, embedded in every output.
        let srgbProfile: [UInt8]
    }

    private static let state = Mutex<State>(.uninitialised)

    /// Starts libvips: glibc malloc arenas capped (see `mallocArenas`), operation cache off (every job
    /// decodes its own bytes; caching would only hold memory), untrusted loaders blocked and only the
    /// JPEG, PNG, WebP, HEIF, GIF and TIFF loaders allowed. `concurrency` sets libvips' worker threads per
    /// pipeline (default: libvips' own choice); passing it again later changes it.
    public static func initialise(concurrency: Int? = nil) throws(ImagingError) {
        _ = try library(concurrency: concurrency)
    }

    /// From now on a failed GLib allocation (whose own answer is to abort) ends the process with `_exit(status)`:
    /// what a render helper does, so its worker can tell running out of memory from a crash.
    public static func exitOnFailedAllocation(status: Int32) {
        cvips_exit_on_failed_allocation(status)
    }

    #if AVATAR_TEST_SEAMS
        /// Allocates `bytes` the way libvips' own buffers are (GLib's g_malloc0, which aborts when refused, or ends
        /// the process as `exitOnFailedAllocation` says), touches them and frees them: the render helpers' memory
        /// tests fail an allocation as a library does (`RenderTestSeams`, debug builds only).
        public static func allocateAndRelease(bytes: Int) {
            guard let memory = vips_malloc(nil, bytes) else { return }
            let pages = memory.bindMemory(to: UInt8.self, capacity: bytes)
            for offset in stride(from: 0, to: bytes, by: 4096) { pages[offset] = 1 }
            g_free(memory)
        }
    #endif

    /// The libvips version actually loaded, e.g. "8.14.1".
    public static var version: String {
        "\(cvips_version(0)).\(cvips_version(1)).\(cvips_version(2))"
    }

    /// Threads libvips uses per pipeline.
    public static var concurrency: Int { Int(vips_concurrency_get()) }

    static func library(concurrency: Int? = nil) throws(ImagingError) -> Library {
        let result: Result<Library, ImagingError> = state.withLock { state in
            switch state {
            case .ready(let library):
                return .success(library)
            case .failed(let error):
                return .failure(error)
            case .uninitialised:
                let result = start()
                switch result {
                case .success(let library): state = .ready(library)
                case .failure(let error): state = .failed(error)
                }
                return result
            }
        }
        let library = try result.get()
        if let concurrency, concurrency > 0 {
            vips_concurrency_set(Int32(clamping: concurrency))
        }
        return library
    }

    /// Starts libvips (`library`) unless it has: every way to a new pipeline (a loader, an image over pixels) passes
    /// here first; an operation on an existing image needs no check. libvips' own lazy
    /// start (`vips_check_init`) would skip this module's set-up (loaders blocked, cache off), and a thread that calls
    /// it while `start` runs on another returns at once and uses types not yet registered (`vips_class_build_hash_cb:
    /// assertion failed`, or a loader not found).
    static func requireStarted(_ operation: @autoclosure () -> String) throws(VipsFailure) {
        do {
            _ = try library()
        } catch {
            throw VipsFailure(operation: operation(), message: error.detail)
        }
    }

    /// Cap on glibc malloc arenas, set at start-up unless `MALLOC_ARENA_MAX` is in the environment.
    /// glibc gives allocating threads arenas of their own, up to 8 per core, and keeps freed memory
    /// in each: with libvips' worker threads a long-running process's RSS grows by about one
    /// render's working set per arena (CHANGELOG.md, "What the render bench changed", item 3).
    /// Applies to arenas created afterwards, so `initialise` belongs at the top of `main`.
    static let mallocArenas: Int32 = 2

    private static func start() -> Result<Library, ImagingError> {
        // Before vips_init starts any thread: arenas already created are kept.
        _ = cvips_limit_malloc_arenas(mallocArenas)
        guard cvips_init("avatar-cropper") == 0 else {
            let message = VipsFailure.take(operation: "vips_init").message
            return .failure(ImagingError(.processingFailed, detail: "libvips failed to start: \(message)"))
        }
        guard cvips_load_heif_module() == 0 else {
            return .failure(ImagingError(.processingFailed, detail: "libvips' HEIF module could not be loaded"))
        }
        vips_cache_set_max(0)
        vips_leak_set(0)
        cvips_silence_warnings()
        cvips_block_all_loaders_except_allowed()

        var length = 0
        guard let profile = cvips_profile_load("srgb", &length), length > 0 else {
            let message = VipsFailure.take(operation: "profile_load").message
            return .failure(ImagingError(.processingFailed, detail: "no built-in sRGB profile: \(message)"))
        }
        defer { cvips_free(profile) }
        return .success(Library(srgbProfile: [UInt8](UnsafeRawBufferPointer(start: profile, count: length))))
    }
}
