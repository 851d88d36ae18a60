import AsyncHTTPClient
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// The parts of an HTTP response the S3 backend needs.
struct HTTPResponse: Sendable {
    var status: Int
    /// Header values by lower-cased name.
    var headers: [String: String]
    var body: [UInt8]
    /// More body arrived than the request's limit allowed: `body` holds only the bytes up to the limit, and the
    /// rest was never read (the connection was closed instead).
    var bodyOverLimit = false
}

/// A transport failure (no HTTP response), already classified.
struct TransportFailure: Error, Sendable {
    var isTransient: Bool
    var detail: String
}

/// HTTP for `S3Store` over one async-http-client `HTTPClient`: a pool of keep-alive connections per host (HTTP/2
/// where the server offers it over TLS), a deadline on every request, response bodies read as they stream in and
/// cut off at the caller's limit.
///
/// `send` blocks the calling thread until the request is done: the request itself runs on NIO's shared event
/// loops, never on the calling thread nor on Swift's cooperative pool, so this is safe on Dispatch worker threads
/// (the worker's render pool, `/readyz`'s queue). It must not be called on a NIO event loop (`wait()` refuses).
///
/// The client never follows redirects (a signed request must not be replayed elsewhere, and S3 3xx answers are
/// errors for us), never decompresses, and does not retry a failed connection attempt itself: retries are the
/// caller's choice (the worker's `RetryPolicy`), so a refused connection is reported at once.
///
/// It creates no spans and logs nothing (docs/ARCHITECTURE.md §3): async-http-client would otherwise start a client
/// span per request from the process's tracer (`InstrumentationSystem`, installed before the stores are built),
/// each a root span with the request's `url.path`/`url.full`, that is a storage key naming a user or an upload.
/// The job's own spans already time fetch, upload and publication.
final class S3HTTPClient: Sendable {
    /// The body of a non-2xx answer is read up to this many bytes: S3's XML error bodies are far smaller, and
    /// `S3ErrorBody` reads nothing longer.
    static let errorBodyLimit = S3ErrorBody.maxBytes

    private let client: HTTPClient
    private let timeout: Duration
    private let isShutDown = Mutex(false)

    /// `maxConnectionsPerHost` bounds the HTTP/1.1 keep-alive connections to one endpoint; requests beyond it
    /// wait for a free connection (within their deadline).
    init(timeout: Duration, maxConnectionsPerHost: Int) {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: TimeAmount(timeout), read: TimeAmount(timeout)),
            decompression: .disabled)
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(1, maxConnectionsPerHost)
        configuration.connectionPool.retryConnectionEstablishment = false
        // Below the keep-alive timeouts S3 servers use, so a pooled connection is rarely closed under a request.
        configuration.connectionPool.idleTimeout = .seconds(15)
        // No automatic client spans (see above): the tracer is chosen when the configuration is made, nil is off.
        configuration.tracing.tracer = nil
        client = HTTPClient(
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration,
            backgroundActivityLogger: Logger(
                label: "avatar-cropper.storage", factory: { _ in SwiftLogNoOpLogHandler() }))
        self.timeout = timeout
    }

    /// Whether async-http-client would start a span per request (never: see above; the tests check it).
    var startsSpans: Bool { client.tracer != nil }

    deinit {
        // The owner normally shuts the client down (`S3Store.shutdown()`); a store that is simply dropped (a CLI
        // command, a test) closes its connections here without waiting. The shutdown keeps the client alive
        // until it is done.
        if !isShutDown.withLock({ $0 }) { client.shutdown { _ in } }
    }

    /// Closes the pooled connections once the requests under way are done; later `send`s fail (permanently).
    /// Idempotent.
    func shutdown() async {
        let first = isShutDown.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        try? await client.shutdown()
    }

    /// Sends `request` and waits for its answer, for at most the request timeout from now (waiting for a pooled
    /// connection, connecting, sending and reading the whole body included). A 2xx body is read up to
    /// `maxBodyBytes`, any other up to `errorBodyLimit`; past that, reading stops and the response comes back
    /// with `bodyOverLimit` set.
    func send(_ request: SignedRequest, maxBodyBytes: Int = .max) -> Result<HTTPResponse, TransportFailure> {
        let prepared: HTTPClient.Request
        do {
            var headers = HTTPHeaders()
            for (name, value) in request.headers { headers.add(name: name, value: value) }
            prepared = try HTTPClient.Request(
                url: request.url, method: HTTPMethod(rawValue: request.method), headers: headers,
                body: request.body.map { .bytes($0) })
        } catch {
            return .failure(Self.classify(error))
        }
        let collector = CappedResponseCollector(successLimit: maxBodyBytes, errorLimit: Self.errorBodyLimit)
        let task = client.execute(
            request: prepared, delegate: collector, deadline: .now() + TimeAmount(timeout))
        do {
            return .success(try task.futureResult.wait())
        } catch let stopped as CappedResponseCollector.StoppedAtLimit {
            return .success(stopped.response)
        } catch {
            return .failure(Self.classify(error))
        }
    }

    static func classify(_ error: any Error) -> TransportFailure {
        if let error = error as? HTTPClientError {
            let detail = "\(error)"
            // Configuration problems: retrying the same request cannot help.
            let permanent: [HTTPClientError] = [.invalidURL, .emptyHost, .emptyScheme, .alreadyShutdown]
            if permanent.contains(error) || detail.contains("unsupportedScheme") {
                return TransportFailure(isTransient: false, detail: detail)
            }
            // deadlineExceeded, connectTimeout, readTimeout, remoteConnectionClosed, cancelled, ...
            return TransportFailure(isTransient: true, detail: detail)
        }
        if let error = error as? NIOSSLError, case .handshakeFailed = error {
            // An untrusted, expired or mismatched certificate: a configuration problem, as above.
            return TransportFailure(isTransient: false, detail: "TLS handshake failed: \(error)")
        }
        // Refused or reset connections, DNS failures, other TLS errors (an unclean shutdown), ...
        return TransportFailure(isTransient: true, detail: "transport error \(type(of: error)): \(error)")
    }
}

/// Collects a response as it streams in, up to a limit that depends on the status.
///
/// `@unchecked Sendable`: async-http-client calls every method of one request's delegate on that request's event
/// loop, one call after another, and the delegate is used for exactly one request; the mutable fields are never
/// touched anywhere else (the caller sees the result only through the task's future).
private final class CappedResponseCollector: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = HTTPResponse

    /// Thrown (as a failed future) to stop reading a body that went past its limit; carries what was kept.
    struct StoppedAtLimit: Error {
        var response: HTTPResponse
    }

    private let successLimit: Int
    private let errorLimit: Int
    private var response = HTTPResponse(status: 0, headers: [:], body: [])
    private var limit = 0

    init(successLimit: Int, errorLimit: Int) {
        self.successLimit = successLimit
        self.errorLimit = errorLimit
    }

    func didReceiveHead(task: HTTPClient.Task<HTTPResponse>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        response.status = Int(head.status.code)
        for (name, value) in head.headers {
            let name = name.lowercased()
            // Repeated headers joined as HTTP allows, as URLSession did.
            response.headers[name] = response.headers[name].map { $0 + "," + value } ?? value
        }
        limit = (200..<300).contains(response.status) ? successLimit : errorLimit
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<HTTPResponse>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let room = limit - response.body.count
        if buffer.readableBytes > room {
            response.body += buffer.readableBytesView.prefix(room)
            response.bodyOverLimit = true
            // A failed future stops the request: async-http-client closes the connection, nothing more is read.
            return task.eventLoop.makeFailedFuture(StoppedAtLimit(response: response))
        }
        response.body += buffer.readableBytesView
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<HTTPResponse>) throws -> HTTPResponse {
        response
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let parts = duration.components
        self = .nanoseconds(parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000)
    }
}
