import NIOCore
import NIOHTTP1
import Synchronization

/// One admitted connection of `TelemetryHTTPServer`: when it opened, and whether a request of it
/// is being answered (a connection that is not may be closed to make way for a new one).
final class ConnectionPlace: Sendable {
    let channel: any Channel
    let opened: NIODeadline
    private let answering = Atomic<Bool>(false)

    init(channel: any Channel) {
        self.channel = channel
        self.opened = .now()
    }

    var isAnswering: Bool { answering.load(ordering: .relaxed) }
    func setAnswering(_ value: Bool) { answering.store(value, ordering: .relaxed) }
}

/// docs/ARCHITECTURE.md §7: a client may not hold a
/// connection by trickling. Each request, and its answer, must be done within `timeout` of the
/// connection's opening or of the previous answer, and a request's head and body together may
/// not exceed `maxBytes` (no endpoint takes a body); otherwise the connection is closed. The idle
/// timer only catches a client that sends nothing; this bounds one that sends slowly.
final class RequestGuard: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let timeout: TimeAmount
    private let maxBytes: Int
    private let place: ConnectionPlace
    private var deadline: Scheduled<Void>?
    private var received = 0

    init(timeout: TimeAmount, maxBytes: Int, place: ConnectionPlace) {
        self.timeout = timeout
        self.maxBytes = maxBytes
        self.place = place
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        if deadline == nil { arm(context) }
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            received += head.uri.utf8.count
            for (name, value) in head.headers { received += name.utf8.count + value.utf8.count + 4 }
        case .body(let buffer):
            received += buffer.readableBytes
        case .end:
            place.setAnswering(true)
        }
        guard received <= maxBytes else {
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            // Answered: the next request's time starts now.
            received = 0
            place.setAnswering(false)
            arm(context)
        }
        context.write(data, promise: promise)
    }

    private func arm(_ context: ChannelHandlerContext) {
        deadline?.cancel()
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }
}
