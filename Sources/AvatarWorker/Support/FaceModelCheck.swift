import Imaging
import Logging

/// The worker's look at the face model before it starts its render helpers (which load it themselves, before
/// their lockdown): a model that is missing or is not the pinned file is said once at start, not found job by job
/// in the result events' empty faces. Never fatal: without it every default crop is the centred square. (The path
/// is the operator's `image.face-model`; logs carry no path.)
enum FaceModelCheck {
    static func run(path: String, logger: Logger) {
        do {
            _ = try FaceModel.load(path: path)
            logger.info("face model loaded")
        } catch {
            logger.warning(
                "face model unavailable: requests without a pose get the centred square",
                metadata: [LogKey.errorCode: "\(error.code.rawValue)"])
        }
    }
}
