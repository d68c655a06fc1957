import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Keep-alive connections to one plain-HTTP webhook, on NIO's own HTTP/1 encoder and decoder.
///
/// AsyncHTTPClient (which still sends every `https://` webhook) spent about 250 µs of CPU per
/// request here: its request state machines, tracing span and per-request body stream cost more
/// than the request itself, and capped delivery below 5,000 webhooks/s on two cores. This sends
/// head and body in one write and keeps only the response head; the body is read and dropped, and
/// past 1 MiB of it the connection is closed (the status stands). Concurrency is bounded by the dispatcher (the receiver's
/// `connections:`); idle connections are kept up to that number.
///
/// A request on a reused connection that the server had closed meanwhile (an idle keep-alive
/// timeout) fails before any response byte; it is sent once more on a new connection. The
/// `Idempotency-Key` makes that safe, as every resend is.
final class WebhookConnections: Sendable {
    let host: String
    let port: Int
    let maxIdle: Int
    private let idle = Mutex<[any Channel]>([])
    private static let group = MultiThreadedEventLoopGroup.singleton

    init(host: String, port: Int, maxIdle: Int) {
        self.host = host
        self.port = port
        self.maxIdle = max(1, maxIdle)
    }

    deinit {
        for channel in idle.withLock({ $0 }) { channel.close(promise: nil) }
    }

    /// Why an exchange failed, for the notifier to classify.
    enum Failure: Error, Equatable {
        case timedOut
        case closedBeforeResponse
        case bodyTooLarge
    }

    /// Sends one request and returns the response head. `deadline` covers connecting too.
    func exchange(_ head: HTTPRequestHead, body: ByteBuffer, deadline: NIODeadline) async throws -> HTTPResponseHead {
        try await exchange(head, body: body, deadline: deadline, keep: 0).head
    }

    /// Sends one request and returns the response head and the first `keep` bytes of its body (a
    /// living message's id; the rest is read and dropped).
    func exchange(_ head: HTTPRequestHead, body: ByteBuffer, deadline: NIODeadline, keep: Int) async throws
        -> WebhookResponse
    {
        if let channel = takeIdle() {
            do {
                return try await exchange(on: channel, head, body, deadline: deadline, keep: keep)
            } catch Failure.closedBeforeResponse {
                // The server closed it while it sat idle: once more, on a new connection.
            }
        }
        let channel = try await connect(deadline: deadline)
        return try await exchange(on: channel, head, body, deadline: deadline, keep: keep)
    }

    private func takeIdle() -> (any Channel)? {
        idle.withLock { list in
            while let c = list.popLast() {
                if c.isActive { return c }
            }
            return nil
        }
    }

    private func release(_ channel: any Channel, keepAlive: Bool) {
        let kept =
            keepAlive && channel.isActive
            && idle.withLock { list in
                guard list.count < maxIdle else { return false }
                list.append(channel)
                return true
            }
        if !kept { channel.close(promise: nil) }
    }

    private func connect(deadline: NIODeadline) async throws -> any Channel {
        let remaining = deadline - .now()
        guard remaining > .zero else { throw Failure.timedOut }
        let bootstrap = ClientBootstrap(group: Self.group)
            .connectTimeout(remaining)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers(leftOverBytesStrategy: .fireError)
                    try channel.pipeline.syncOperations.addHandler(WebhookExchangeHandler())
                }
            }
        do {
            let connecting = bootstrap.connect(host: host, port: port)
            let channel = try await withTaskCancellationHandler {
                try await connecting.get()
            } onCancel: {
                connecting.whenSuccess { $0.close(promise: nil) }
            }
            try Task.checkCancellation()
            return channel
        } catch let error as ChannelError {
            if case .connectTimeout = error { throw Failure.timedOut }
            throw error
        }
    }

    private func exchange(
        on channel: any Channel, _ head: HTTPRequestHead, _ body: ByteBuffer, deadline: NIODeadline, keep: Int
    ) async throws -> WebhookResponse {
        let promise = channel.eventLoop.makePromise(of: WebhookResponse.self)
        let timedOut = Mutex(false)
        // At the deadline the connection is closed; the handler then fails the exchange.
        let timer = channel.eventLoop.scheduleTask(deadline: deadline) {
            timedOut.withLock { $0 = true }
            channel.close(promise: nil)
        }
        channel.writeAndFlush(WebhookExchange(head: head, body: body, keep: keep, response: promise), promise: nil)
        do {
            // Cancelled (the dispatcher stopping): the connection is closed, which ends the exchange
            // at once, as AsyncHTTPClient does; nothing is left open behind a stopped daemon.
            let response = try await withTaskCancellationHandler {
                try await promise.futureResult.get()
            } onCancel: {
                channel.close(promise: nil)
            }
            timer.cancel()
            release(channel, keepAlive: response.head.isKeepAlive)
            return response
        } catch {
            timer.cancel()
            channel.close(promise: nil)
            if timedOut.withLock({ $0 }) { throw Failure.timedOut }
            throw error
        }
    }
}

/// One request and where its response goes.
struct WebhookExchange {
    var head: HTTPRequestHead
    var body: ByteBuffer
    /// How many bytes of the response body to keep (0: none).
    var keep: Int = 0
    var response: EventLoopPromise<WebhookResponse>
}

/// A response's head, and as much of its body as the exchange kept.
struct WebhookResponse {
    var head: HTTPResponseHead
    var body: [UInt8] = []
}

/// Writes an exchange's request (head, body and end in one flush) and completes its promise with
/// the response head once the response has ended. One exchange at a time per connection.
final class WebhookExchangeHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = WebhookExchange
    typealias OutboundOut = HTTPClientRequestPart

    /// The most response body read and dropped before the connection is given up.
    static let bodyLimit = 1 << 20

    private var pending: EventLoopPromise<WebhookResponse>?
    private var head: HTTPResponseHead?
    private var bodyBytes = 0
    private var keep = 0
    private var kept: [UInt8] = []

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let exchange = unwrapOutboundIn(data)
        guard pending == nil else {
            exchange.response.fail(ChannelError.inappropriateOperationForState)
            promise?.fail(ChannelError.inappropriateOperationForState)
            return
        }
        pending = exchange.response
        head = nil
        bodyBytes = 0
        keep = exchange.keep
        kept = []
        context.write(wrapOutboundOut(.head(exchange.head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(exchange.body))), promise: nil)
        context.write(wrapOutboundOut(.end(nil)), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
        case .body(let part):
            if kept.count < keep,
                let bytes = part.getBytes(at: part.readerIndex, length: min(part.readableBytes, keep - kept.count))
            {
                kept += bytes
            }
            bodyBytes += part.readableBytes
            guard bodyBytes > Self.bodyLimit, let promise = pending else { return }
            // The status is in: it stands. The rest of the body is not read; the connection goes.
            pending = nil
            if var head {
                head.headers.replaceOrAdd(name: "connection", value: "close")
                promise.succeed(WebhookResponse(head: head, body: kept))
            } else {
                promise.fail(WebhookConnections.Failure.bodyTooLarge)
            }
            context.close(promise: nil)
        case .end:
            guard let promise = pending else { return }
            pending = nil
            if let head {
                promise.succeed(WebhookResponse(head: head, body: kept))
            } else {
                promise.fail(WebhookConnections.Failure.closedBeforeResponse)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let promise = pending {
            pending = nil
            // No head yet: nothing of the response arrived (a stale keep-alive connection, say).
            promise.fail(
                head == nil ? WebhookConnections.Failure.closedBeforeResponse : ChannelError.eof)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error, context: context)
    }

    private func fail(_ error: any Error, context: ChannelHandlerContext) {
        if let promise = pending {
            pending = nil
            promise.fail(error)
        }
        context.close(promise: nil)
    }
}
