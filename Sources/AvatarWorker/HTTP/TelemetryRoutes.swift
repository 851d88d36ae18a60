import Foundation

/// An HTTP answer, independent of the server that writes it.
public struct HTTPReply: Sendable, Equatable {
    public var status: Int
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    static func text(_ status: Int, _ text: String) -> HTTPReply {
        HTTPReply(status: status, headers: ["content-type": "text/plain; charset=utf-8"], body: Array(text.utf8))
    }
}

/// The worker's operational endpoints (docs/ARCHITECTURE.md §3):
/// - `GET /metrics`: every metric in the Prometheus text format;
/// - `GET /healthz`: 200 while the process serves requests at all (liveness);
/// - `GET /readyz`: 200 when broker, database and storage are reachable and partitions are assigned,
///   else 503; the JSON body lists each check.
///
/// `HEAD` is answered like `GET` without a body; other methods get 405, other paths 404.
public struct TelemetryRoutes: Sendable {
    private let metrics: @Sendable () -> [UInt8]
    private let readiness: Readiness

    public init(metrics: @escaping @Sendable () -> [UInt8], readiness: Readiness) {
        self.metrics = metrics
        self.readiness = readiness
    }

    public func respond(method: String, uri: String) async -> HTTPReply {
        let path = uri.firstIndex(of: "?").map { String(uri[..<$0]) } ?? uri
        let known = ["/metrics", "/healthz", "/readyz"]
        guard known.contains(path) else { return .text(404, "not found\n") }
        guard method == "GET" || method == "HEAD" else {
            var reply = HTTPReply.text(405, "method not allowed\n")
            reply.headers["allow"] = "GET, HEAD"
            return reply
        }
        switch path {
        case "/metrics":
            return HTTPReply(status: 200, headers: ["content-type": PrometheusExporter.contentType], body: metrics())
        case "/healthz":
            return json(200, #"{"status":"alive"}"#)
        default:
            let report = await readiness.report()
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let body = (try? encoder.encode(report)).map { Array($0) } ?? Array(#"{"status":"not ready"}"#.utf8)
            var reply = HTTPReply(
                status: report.ready ? 200 : 503, headers: ["content-type": "application/json"],
                body: body)
            reply.headers["cache-control"] = "no-store"
            return reply
        }
    }

    private func json(_ status: Int, _ text: String) -> HTTPReply {
        HTTPReply(status: status, headers: ["content-type": "application/json"], body: Array(text.utf8))
    }
}
