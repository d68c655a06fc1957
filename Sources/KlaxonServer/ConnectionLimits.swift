import Dispatch
import Foundation
import HummingbirdCore
import KlaxonCore
import Logging
import NIOCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Bounds on the HTTP server's connections: how many may be open at once, and how long one may take
/// to send a request or sit idle. Every open connection holds a file descriptor; with none left, the
/// process cannot open its database, reach its receivers, or even let libdispatch start a thread
/// (which traps). Idle and slow connections are what an outsider holds cheaply, so they go first.
public struct ConnectionLimits: Sendable {
    /// The most connections open at once (the configured ceiling); the server also keeps `reserve`
    /// descriptors of the open-files limit free for everything else (see `effectiveMaximum`).
    public var maxConnections: Int
    /// Descriptors kept free for the database, receivers, sources, event loops and threads.
    public var reserve: Int
    /// From a connection's start (or the first byte of its next request) to a complete request head.
    public var headTimeout: Duration
    /// From a request head to the end of its body (a body trickled a byte at a time).
    public var bodyTimeout: Duration
    /// A keep-alive connection with no request in progress is closed after this.
    public var idleTimeout: Duration
    /// The most bytes of request bodies buffered at once across every connection (see `BodyBudget`).
    public var maxBufferedBodyBytes: Int

    public init(
        maxConnections: Int = defaultMaxConnections, reserve: Int = defaultReserve,
        headTimeout: Duration = .seconds(10), bodyTimeout: Duration = .seconds(60),
        idleTimeout: Duration = .seconds(60),
        maxBufferedBodyBytes: Int = defaultMaxBufferedBodyBytes
    ) {
        self.maxConnections = max(1, maxConnections)
        self.reserve = max(0, reserve)
        self.headTimeout = headTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.maxBufferedBodyBytes = max(0, maxBufferedBodyBytes)
    }

    public static let defaultMaxConnections = 2048
    /// 64 MiB: sixteen of the largest pushes (4 MiB) at once, or sixty-four Slack presses of 1 MiB.
    public static let defaultMaxBufferedBodyBytes = 64 << 20
    public static let defaultReserve = 128
    /// Never fewer connections than this, however low the limit (the daemon would not be reachable).
    public static let minimumConnections = 16

    /// The cap in force: the configured ceiling, or what the open-files soft limit leaves after the
    /// reserve, whichever is lower.
    public func effectiveMaximum(softLimit: Int) -> Int {
        max(Self.minimumConnections, min(maxConnections, softLimit - reserve))
    }

    /// The process's soft limit on open files (RLIMIT_NOFILE); 1,024 if it cannot be read.
    public static func openFilesSoftLimit() -> Int {
        #if os(Linux)
            var limit = rlimit()
            guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
            return limit.rlim_cur == rlim_t.max ? Int.max : Int(clamping: limit.rlim_cur)
        #else
            var limit = rlimit()
            guard getrlimit(RLIMIT_NOFILE, &limit) == 0 else { return 1024 }
            return limit.rlim_cur == rlim_t.max ? Int.max : Int(clamping: limit.rlim_cur)
        #endif
    }
}

/// The server's open connections. Past the cap, a new connection takes the place of the one that
/// has waited longest without a request in progress (a connection that never sent a full head, or
/// an idle keep-alive one): an outsider holding every slot with silent connections cannot keep
/// `/healthz` or anyone else out. With every connection busy with a request, the newcomer is closed.
public final class ConnectionGate: Sendable {
    struct Entry {
        let channel: any Channel
        /// Since when it has had no request in progress; nil while one is.
        var waitingSince: ContinuousClock.Instant?
    }

    struct State {
        var open: [ObjectIdentifier: Entry] = [:]
        var highWater = 0
        var evicted = 0
        var refused = 0
        var lastWarning: ContinuousClock.Instant?
    }

    /// The cap in force.
    public let limit: Int
    let logger: Logger
    private let state = Mutex(State())

    public init(limit: Int, logger: Logger) {
        self.limit = max(1, limit)
        self.logger = logger
    }

    /// The gate for a server with `limits`, under the process's open-files soft limit now.
    public convenience init(_ limits: ConnectionLimits, logger: Logger) {
        let soft = ConnectionLimits.openFilesSoftLimit()
        self.init(limit: limits.effectiveMaximum(softLimit: soft), logger: logger)
        logger.debug(
            "HTTP connections capped",
            metadata: [
                "max_connections": .stringConvertible(limit), "open_files_soft_limit": .stringConvertible(soft),
                "reserve": .stringConvertible(limits.reserve),
                "head_timeout": "\(limits.headTimeout)", "idle_timeout": "\(limits.idleTimeout)",
            ])
    }

    /// A backstop past the cap, for the server's accept loop: accepting pauses (connections wait in
    /// the kernel's backlog) while shed connections finish closing.
    public var backstop: any AvailableConnectionsDelegate {
        MaximumAvailableConnections(limit + 64, logger: logger)
    }

    /// Connections open now.
    public var count: Int { state.withLock { $0.open.count } }
    /// Connections closed to make room for a newer one, and newcomers closed because every slot was busy.
    public var shed: (evicted: Int, refused: Int) { state.withLock { ($0.evicted, $0.refused) } }

    /// Takes `channel` in; false if it must be closed at once. When full, the connection that has
    /// waited longest for a request is closed to make room.
    func admit(_ channel: any Channel) -> Bool {
        let now = ContinuousClock.now
        let (victim, admitted, warn) = state.withLock { s -> ((any Channel)?, Bool, Bool) in
            var victim: (any Channel)? = nil
            if s.open.count >= limit {
                // One pass, no copies: this runs for every connection past the cap.
                var oldest: (id: ObjectIdentifier, since: ContinuousClock.Instant)? = nil
                for (id, entry) in s.open {
                    guard let since = entry.waitingSince else { continue }
                    if oldest == nil || since < oldest!.since { oldest = (id, since) }
                }
                guard let oldest, let entry = s.open[oldest.id] else {
                    s.refused += 1
                    return (nil, false, warnNow(&s, now))
                }
                // No longer a candidate; it leaves the count when its close completes.
                s.open[oldest.id]?.waitingSince = nil
                s.evicted += 1
                victim = entry.channel
            }
            s.open[ObjectIdentifier(channel)] = Entry(channel: channel, waitingSince: now)
            s.highWater = max(s.highWater, s.open.count)
            return (victim, true, victim != nil && warnNow(&s, now))
        }
        if warn {
            logger.warning(
                "HTTP connection limit reached; closing connections that wait without a request",
                metadata: ["limit": .stringConvertible(limit)])
        }
        victim?.close(promise: nil)
        return admitted
    }

    /// One warning a minute at most: an attack must not flood the log.
    private func warnNow(_ s: inout State, _ now: ContinuousClock.Instant) -> Bool {
        if let last = s.lastWarning, now - last < .seconds(60) { return false }
        s.lastWarning = now
        return true
    }

    /// Whether `channel` waits for a request (a candidate to make room) or has one in progress.
    func waiting(_ channel: any Channel, _ waiting: Bool) {
        state.withLock { s in
            let id = ObjectIdentifier(channel)
            guard s.open[id] != nil else { return }
            if !waiting {
                s.open[id]?.waitingSince = nil
            } else if s.open[id]?.waitingSince == nil {
                s.open[id]?.waitingSince = .now
            }
        }
    }

    /// `channel` closed. After a crowd has gone (a quarter of its peak left, of at least 256), the
    /// memory its connections held goes back to the system: glibc would keep it.
    func closed(_ channel: any Channel) {
        let trim = state.withLock { s -> Bool in
            s.open[ObjectIdentifier(channel)] = nil
            guard s.highWater >= 256, s.open.count <= s.highWater / 4 else { return false }
            s.highWater = s.open.count
            return true
        }
        if trim { releaseFreeMemoryLater() }
    }
}

/// A server child channel whose connections count against a `ConnectionGate` and are closed when
/// they take too long to send a request or sit idle (see `ConnectionWatch`).
public struct LimitedChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    public typealias Value = Base.Value

    let base: Base
    let gate: ConnectionGate
    let limits: ConnectionLimits

    public init(base: Base, gate: ConnectionGate, limits: ConnectionLimits) {
        self.base = base
        self.gate = gate
        self.limits = limits
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let admitted = gate.admit(channel)
        if admitted {
            let gate = self.gate
            channel.closeFuture.whenComplete { _ in gate.closed(channel) }
        }
        // The channel is not registered yet; a refused one is closed once it is active, and its
        // handler then finds it closed (closing it here, unregistered, is not NIO's path).
        let watch = ConnectionWatch(limits: limits, gate: admitted ? gate : nil, refuse: !admitted, logger: logger)
        do {
            try channel.pipeline.syncOperations.addHandler(watch, position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return base.setup(channel: channel, logger: logger)
    }

    public func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

/// Watches one connection's raw bytes and (through `RequestPhases`) its requests, and closes it when
/// a deadline passes:
/// - a request head must be complete within `headTimeout` of the connection's start, or of the first
///   byte of a later request (a trickle of header bytes holds no slot for long);
/// - a body within `bodyTimeout` of its head;
/// - with no request in progress, a keep-alive connection closes after `idleTimeout`;
/// - once the server has closed its side, the client has `idleTimeout` to close its own.
/// While the server works on a request (read, response not finished) nothing is timed: that is ours.
final class ConnectionWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    enum Phase: Equatable {
        case awaitingHead, readingBody, responding, idle, closing
    }

    let limits: ConnectionLimits
    let gate: ConnectionGate?
    let refuse: Bool
    let logger: Logger
    private(set) var phase = Phase.awaitingHead
    /// Requests whose head came and whose response has not ended.
    private var pending = 0
    private var reading = false
    private var started = false
    private var timer: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    init(limits: ConnectionLimits, gate: ConnectionGate?, refuse: Bool, logger: Logger) {
        self.limits = limits
        self.gate = gate
        self.refuse = refuse
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimer()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelTimer()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // The first byte of a request after an idle spell: its head now has `headTimeout`.
        if phase == .idle { enter(.awaitingHead) }
        context.fireChannelRead(data)
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        if refuse {
            context.close(promise: nil)
            return
        }
        schedule(limits.headTimeout, reason: "no complete request head")
    }

    // MARK: from `RequestPhases`, after the HTTP decoder

    func headArrived() {
        pending += 1
        reading = true
        enter(.readingBody)
    }

    func requestEnded() {
        reading = false
        enter(pending > 0 ? .responding : .idle)
    }

    func responseEnded() {
        pending = max(0, pending - 1)
        if pending == 0, !reading { enter(.idle) }
    }

    /// The server closed its side (after `Connection: close`, or a request it could not parse) and
    /// waits for the client to close its own: a client that never does is closed after `idleTimeout`
    /// (time enough to read a large answer slowly).
    func outputClosed() {
        enter(.closing)
    }

    private func enter(_ next: Phase) {
        // Once the server has closed its side, only the close is left.
        guard next != phase, phase != .closing else { return }
        phase = next
        let waiting = next == .awaitingHead || next == .idle || next == .closing
        gate.map { gate in context.map { gate.waiting($0.channel, waiting) } }
        switch next {
        case .awaitingHead: schedule(limits.headTimeout, reason: "no complete request head")
        case .readingBody: schedule(limits.bodyTimeout, reason: "request body too slow")
        case .responding: cancelTimer()
        case .idle: schedule(limits.idleTimeout, reason: "idle")
        case .closing: schedule(limits.idleTimeout, reason: "the client did not close after the response")
        }
    }

    private func schedule(_ after: Duration, reason: String) {
        cancelTimer()
        guard let context else { return }
        let nanos = after.components.seconds * 1_000_000_000 + after.components.attoseconds / 1_000_000_000
        let loop = context.eventLoop
        timer = loop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: .nanoseconds(nanos)) { [self] in
            self.timer = nil
            guard let context = self.context else { return }
            self.logger.debug(
                "closing an HTTP connection",
                metadata: ["reason": "\(reason)", "remote": "\(context.remoteAddress?.description ?? "?")"])
            context.close(promise: nil)
        }
    }

    private func cancelTimer() {
        timer?.cancel()
        timer = nil
    }
}

/// Tells the connection's `ConnectionWatch` where its requests are: a head decoded, a request's end,
/// a response's end. Sits after Hummingbird's HTTP decoder (as one of its additional handlers).
final class RequestPhases: ChannelDuplexHandler, RemovableChannelHandler {
    // Hummingbird's own handler at the same place names the part types (they come from a module this
    // target does not depend on directly).
    typealias InboundIn = HTTPConnectionStateHandler.InboundIn
    typealias InboundOut = HTTPConnectionStateHandler.InboundOut
    typealias OutboundIn = HTTPConnectionStateHandler.OutboundIn
    typealias OutboundOut = HTTPConnectionStateHandler.OutboundOut

    private var watch: ConnectionWatch?

    func handlerAdded(context: ChannelHandlerContext) {
        watch = try? context.pipeline.syncOperations.handler(type: ConnectionWatch.self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        watch = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: watch?.headArrived()
        case .end: watch?.requestEnded()
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { watch?.responseEnded() }
        context.write(data, promise: promise)
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        // Hummingbird half-closes and then waits for the client's close, for as long as it takes.
        if mode == .output { watch?.outputClosed() }
        context.close(mode: mode, promise: promise)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 whose connections never trap on a shutdown (see `SettledChildChannel`), are capped by
    /// `gate`, and are closed when slow or idle (see `ConnectionWatch`).
    public static func limitedHTTP1(limits: ConnectionLimits, gate: ConnectionGate) -> HTTPServerBuilder {
        .init { responder in
            let configuration = HTTP1Channel.Configuration(additionalChannelHandlers: [RequestPhases()])
            return LimitedChildChannel(
                base: SettledChildChannel(HTTP1Channel(responder: responder, configuration: configuration)),
                gate: gate, limits: limits)
        }
    }
}
