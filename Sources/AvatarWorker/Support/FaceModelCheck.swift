import Imaging
import Logging
import Metrics

/// The worker's look at the face model before it starts its render helpers (which load it themselves, before
/// their lockdown): a model that is missing or is not the pinned file is said once at start, not found job by job
/// in the result events' empty faces. Never fatal: without it every default crop is the centred square. (The path
/// is the operator's `image.face-model`; logs carry no path.) The gauge `MetricName.faceModelLoaded` and `/readyz`'s
/// `face-model` detail say it for as long as the worker runs.
enum FaceModelCheck {
    /// Logs and records what the model at `path` is; returns why it cannot be used, or nil.
    @discardableResult
    static func run(path: String, logger: Logger) -> FaceDetectionError? {
        let problem = FaceModel.problem(path: path)
        Gauge(label: MetricName.faceModelLoaded).record(problem == nil ? 1 : 0)
        if let problem {
            logger.warning(
                "face model unavailable: requests without a pose get the centred square",
                metadata: [LogKey.errorCode: "\(problem.code.rawValue)"])
        } else {
            logger.info("face model loaded")
        }
        return problem
    }

    /// `/readyz`'s `face-model` check: passes either way (the worker renders without it), its detail saying which.
    static func readiness(_ problem: FaceDetectionError?) -> ReadinessCheck {
        ReadinessCheck(name: "face-model") {
            guard let problem else { return .ok("loaded") }
            return .ok("\(problem.code.rawValue): requests without a pose get the centred square")
        }
    }
}
