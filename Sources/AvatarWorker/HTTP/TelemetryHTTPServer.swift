import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization

/// A small HTTP/1.1 server (swift-nio) for `TelemetryRoutes`, run as a `Service`. It accepts until
/// a graceful shutdown: in a `ServiceGroup` list it before the worker, so it is shut down after the
/// worker has drained and `/metrics` stays scrapeable while jobs finish. Requests are answered
/// off the event loop (`Readiness` runs blocking checks on its own queue).
///
/// A scraper or a probe must not be able to hold the worker's resources, nor slow clients starve
/// the probes (docs/ARCHITECTURE.md §7): at most
/// `maxConnections` connections are open at once; one that sends nothing for `idleTimeout` is
/// closed, and so is one whose request is not received and answered within `requestTimeout` or
/// exceeds `maxRequestBytes` (`RequestGuard`). At the cap, a new connection takes the place of
/// the oldest one that is not being answered, so a probe is never refused because slow clients
/// hold every place; only when every place is answering a request is a new one closed at once.
public final class TelemetryHTTPServer: Service, Sendable {
    public let host: String
    /// The configured port; 0 picks a free one (see `listeningPort()`).
    public let port: Int
    private let routes: TelemetryRoutes
    private let logger: Logger
    private let eventLoopGroup: MultiThreadedEventLoopGroup
    public let maxConnections: Int
    public let idleTimeout: TimeAmount
    public let requestTimeout: TimeAmount
    public let maxRequestBytes: Int
    private typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>
    private typealias Listener = NIOAsyncChannel<(Connection, ConnectionPlace), Never>

    /// The admitted connections; the accepted ones the listener has not handed over yet (it may never,
    /// see `run`); and whether a shutdown began. A connection handed over that is no longer in `waiting`
    /// was closed by the shutdown: whoever takes it out of `waiting` serves or closes it, exactly once.
    private struct Places {
        var open: [ObjectIdentifier: ConnectionPlace] = [:]
        var waiting: [ObjectIdentifier: (Connection, ConnectionPlace)] = [:]
        var stopping = false
    }

    private let places = Mutex(Places())

    /// How many connections are being served now (tests wait on it instead of sleeping).
    var openConnectionCount: Int { places.withLock { $0.open.count } }
    /// How many of them are answering a request now.
    var answeringConnectionCount: Int { places.withLock { $0.open.values.filter(\.isAnswering).count } }

    private enum Binding {
        case waiting([CheckedContinuation<Int, any Error>])
        case bound(Int)
        case failed(any Error)
    }

    private let binding = Mutex(Binding.waiting([]))

    public init(
        host: String, port: Int, routes: TelemetryRoutes, logger: Logger,
        eventLoopGroup: MultiThreadedEventLoopGroup = .singleton, maxConnections: Int = 32,
        idleTimeout: TimeAmount = .seconds(30), requestTimeout: TimeAmount = .seconds(10),
        maxRequestBytes: Int = 16 * 1024
    ) {
        self.maxConnections = maxConnections
        self.idleTimeout = idleTimeout
        self.requestTimeout = requestTimeout
        self.maxRequestBytes = maxRequestBytes
        self.host = host
        self.port = port
        self.routes = routes
        self.logger = logger
        self.eventLoopGroup = eventLoopGroup
    }

    /// The port the server listens on, once it does; throws if binding failed.
    public func listeningPort() async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            let state = binding.withLock { binding -> Binding in
                if case .waiting(var waiters) = binding {
                    waiters.append(continuation)
                    binding = .waiting(waiters)
                }
                return binding
            }
            switch state {
            case .bound(let port): continuation.resume(returning: port)
            case .failed(let error): continuation.resume(throwing: error)
            case .waiting: break
            }
        }
    }

    private func settle(_ result: Result<Int, any Error>) {
        let waiters = binding.withLock { binding -> [CheckedContinuation<Int, any Error>] in
            guard case .waiting(let waiters) = binding else { return [] }
            switch result {
            case .success(let port): binding = .bound(port)
            case .failure(let error): binding = .failed(error)
            }
            return waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    public func run() async throws {
        let server: Listener
        do {
            server = try await ServerBootstrap(group: eventLoopGroup)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .serverChannelOption(.backlog, value: 64)
                .bind(host: host, port: port) { [idleTimeout, requestTimeout, maxRequestBytes] channel in
                    channel.eventLoop.makeCompletedFuture {
                        let place = ConnectionPlace(channel: channel)
                        try channel.pipeline.syncOperations.addHandlers(
                            IdleStateHandler(readTimeout: idleTimeout), CloseWhenIdle())
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        try channel.pipeline.syncOperations.addHandler(
                            RequestGuard(timeout: requestTimeout, maxBytes: maxRequestBytes, place: place))
                        let connection = try Connection(wrappingChannelSynchronously: channel)
                        self.accepted(connection, place)
                        return (connection, place)
                    }
                }
        } catch {
            settle(.failure(error))
            logger.error("HTTP endpoints could not listen", metadata: ["port": "\(port)", "error": "\(error)"])
            throw error
        }
        let boundPort = server.channel.localAddress?.port ?? port
        settle(.success(boundPort))
        logger.info("HTTP endpoints listening", metadata: ["host": "\(host)", "port": "\(boundPort)"])

        // Stopping used to crash the worker when a connection arrived at that moment (seen in a test run).
        // SwiftNIO traps when a NIOAsyncChannel is released without `executeThenClose`
        // (swift-nio#2637), and a listener that stops can release connections it accepted but never
        // handed over, whether the loop reading it is cancelled or the listener is closed. So each
        // accepted connection is also kept in `places.waiting` until the loop takes it, and `stop`
        // closes whatever is still there. A graceful shutdown, or cancellation, closes the listener and every
        // open connection rather than cancel the loop, which then drains what the listener still hands
        // over. It runs in a task of its own, which cancellation of this one does not reach.
        let accepting = Task { await self.accept(from: server) }
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await accepting.value
            } onCancel: {
                self.stop(server)
            }
        } onGracefulShutdown: {
            self.stop(server)
        }
        logger.info("HTTP endpoints stopped")
    }

    /// Serves every connection `server` hands over until its stream ends (the listener closed), but the
    /// ones a shutdown closed already.
    private func accept(from server: Listener) async {
        await withDiscardingTaskGroup { group in
            do {
                try await server.executeThenClose { connections in
                    for try await (connection, place) in connections {
                        switch self.admit(place) {
                        case .closedByStop:
                            continue
                        case .full:
                            group.addTask { try? await connection.executeThenClose { _, _ in } }
                        case .admitted:
                            group.addTask {
                                await self.serve(connection)
                                self.places.withLock { places in
                                    let id = ObjectIdentifier(place.channel)
                                    if places.open[id] === place { places.open[id] = nil }
                                }
                            }
                        }
                    }
                }
            } catch {
                logger.debug("HTTP listening channel ended with an error", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Keeps an accepted connection until the listener hands it over (`admit` takes it out); after a
    /// shutdown began, closes it at once.
    private func accepted(_ connection: Connection, _ place: ConnectionPlace) {
        let stopping = places.withLock { places in
            if !places.stopping { places.waiting[ObjectIdentifier(place.channel)] = (connection, place) }
            return places.stopping
        }
        if stopping { Self.close(connection) }
    }

    /// Stops accepting: closes the listener, which ends its stream of connections, every connection
    /// open now, and every one accepted but not handed over (so `admit` finds none of them in `waiting`
    /// when the listener hands one over after this).
    private func stop(_ server: Listener) {
        let (open, waiting) = places.withLock { places in
            places.stopping = true
            defer { places.waiting = [:] }
            return (Array(places.open.values), Array(places.waiting.values))
        }
        server.channel.close(promise: nil)
        for place in open { place.channel.close(promise: nil) }
        for (connection, _) in waiting { Self.close(connection) }
    }

    /// Closes a connection nobody will serve (`executeThenClose` is what lets SwiftNIO release it).
    private static func close(_ connection: Connection) {
        Task { try? await connection.executeThenClose { _, _ in } }
    }

    private enum Admission { case admitted, full, closedByStop }

    /// Takes `place` out of `waiting` and admits it. At the cap, the oldest connection that is not being
    /// answered is closed to make way; `.full` when every place is answering a request (the caller closes
    /// it); `.closedByStop` when a shutdown took it out of `waiting` first and closed it.
    private func admit(_ place: ConnectionPlace) -> Admission {
        let id = ObjectIdentifier(place.channel)
        let (admission, evicted) = places.withLock { places -> (Admission, ConnectionPlace?) in
            guard places.waiting.removeValue(forKey: id) != nil else { return (.closedByStop, nil) }
            var evicted: ConnectionPlace?
            if places.open.count >= maxConnections {
                guard let oldest = places.open.values.filter({ !$0.isAnswering }).min(by: { $0.opened < $1.opened })
                else { return (.full, nil) }
                places.open[ObjectIdentifier(oldest.channel)] = nil
                evicted = oldest
            }
            places.open[id] = place
            return (.admitted, evicted)
        }
        if let evicted {
            logger.notice("HTTP connection closed to make way for a new one", metadata: ["max": "\(maxConnections)"])
            evicted.channel.close(promise: nil)
        }
        if admission == .full {
            logger.warning(
                "HTTP connection refused: every place is answering a request", metadata: ["max": "\(maxConnections)"])
        }
        return admission
    }

    /// Answers the requests of one connection in order, until the client closes it, asks to close
    /// it, or the server shuts down.
    private func serve(_ connection: Connection) async {
        do {
            try await connection.executeThenClose { inbound, outbound in
                var request: HTTPRequestHead?
                for try await part in inbound {
                    switch part {
                    case .head(let head):
                        request = head
                    case .body:
                        continue  // No endpoint takes a body.
                    case .end:
                        guard let head = request else { continue }
                        request = nil
                        let reply = await routes.respond(method: head.method.rawValue, uri: head.uri)
                        var headers = HTTPHeaders()
                        for (name, value) in reply.headers.sorted(by: { $0.key < $1.key }) {
                            headers.add(name: name, value: value)
                        }
                        headers.add(name: "content-length", value: "\(reply.body.count)")
                        let keepAlive = head.isKeepAlive
                        if !keepAlive { headers.add(name: "connection", value: "close") }
                        try await outbound.write(
                            .head(
                                HTTPResponseHead(
                                    version: head.version, status: HTTPResponseStatus(statusCode: reply.status),
                                    headers: headers)))
                        if head.method != .HEAD && !reply.body.isEmpty {
                            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: reply.body))))
                        }
                        try await outbound.write(.end(nil))
                        if !keepAlive { return }
                    }
                }
            }
        } catch {
            logger.debug("HTTP connection ended with an error", metadata: ["error": "\(error)"])
        }
    }
}

/// Closes a connection that sent nothing for the idle timeout (`IdleStateHandler` raises the event).
private final class CloseWhenIdle: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
