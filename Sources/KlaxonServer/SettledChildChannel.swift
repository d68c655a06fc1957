import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import Synchronization

/// A server child channel whose connections, when the server drops one before a handler takes it,
/// are finished and closed instead of trapping the process.
///
/// NIO's async server channel hands each accepted connection over as a value holding an
/// `NIOAsyncChannel`. A connection accepted while the server shuts down can be dropped before the
/// accept loop reads it (apple/swift-nio#2813, #3481); its writer then deinits unfinished and traps
/// ("Deinited NIOAsyncWriter without calling finish()"), taking down a daemon that was only
/// stopping, or a whole test process. Wrapping the value lets the last reference finish it.
public struct SettledChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    /// An accepted connection on its way to a handler; if none takes it, its deinit releases it.
    public final class Handoff: ServerChildChannelValue {
        let value: Base.Value
        let release: @Sendable (Base.Value) -> Void
        let taken = Atomic<Bool>(false)

        init(value: Base.Value, release: @escaping @Sendable (Base.Value) -> Void) {
            self.value = value
            self.release = release
        }

        public var channel: any Channel { value.channel }

        deinit {
            if !taken.load(ordering: .acquiring) { release(value) }
        }
    }

    public typealias Value = Handoff

    let base: Base
    let release: @Sendable (Base.Value) -> Void

    /// Wraps `base`; `release` finishes and closes a value no handler took.
    public init(base: Base, release: @escaping @Sendable (Base.Value) -> Void) {
        self.base = base
        self.release = release
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Handoff> {
        let release = self.release
        return base.setup(channel: channel, logger: logger).map { Handoff(value: $0, release: release) }
    }

    public func handle(value: Handoff, logger: Logger) async {
        value.taken.store(true, ordering: .releasing)
        await base.handle(value: value.value, logger: logger)
    }
}

extension SettledChildChannel where Base == HTTP1Channel {
    /// Plain HTTP/1.1.
    public init(_ base: HTTP1Channel) {
        self.init(base: base) { Self.release($0) }
    }
}

extension SettledChildChannel where Base == HTTP1WebSocketUpgradeChannel {
    /// HTTP/1.1 with WebSocket upgrades: the value holds the upgrade's outcome, released when it
    /// comes. Hummingbird keeps that future internal, so it is found by reflection; should a later
    /// version rename it, the connection is still closed, only no longer finished first.
    public init(_ base: HTTP1WebSocketUpgradeChannel) {
        self.init(base: base) { value in
            let outcome =
                Mirror(reflecting: value).children
                .first { $0.label == "upgradeResult" }?.value as? EventLoopFuture<Base.UpgradeResult>
            guard let outcome else {
                value.channel.close(promise: nil)
                return
            }
            outcome.whenSuccess { result in
                switch result {
                case .websocket(let channel, _, _): Self.release(channel)
                case .notUpgraded(let channel), .failedUpgrade(let channel, _): Self.release(channel)
                }
            }
        }
    }
}

extension SettledChildChannel {
    /// Finishes and closes `channel`: the task holds it until `executeThenClose` has finished its
    /// writer, so it is never deinited unfinished.
    static func release<Inbound, Outbound>(_ channel: NIOAsyncChannel<Inbound, Outbound>) {
        Task { try? await channel.executeThenClose { _, _ in } }
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 whose connections never trap on a shutdown (see `SettledChildChannel`).
    public static func settledHTTP1(configuration: HTTP1Channel.Configuration = .init()) -> HTTPServerBuilder {
        .init { responder in SettledChildChannel(HTTP1Channel(responder: responder, configuration: configuration)) }
    }
}
