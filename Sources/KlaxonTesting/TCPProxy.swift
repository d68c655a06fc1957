import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP proxy on 127.0.0.1 in front of another loopback port, that a test can cut off: a network
/// partition between a daemon and its database, on one machine.
///
/// `partition()` models the two sides of a partition once the server has noticed it (its TCP
/// keepalives, in seconds): the connections to the server are closed, so the server ends those
/// sessions and frees their locks; the daemon's side stays open and hears nothing more, as across a
/// real partition; new connections are accepted and never answered. Stop it with `stop()`.
public final class TCPProxy: Sendable {
    public let port: Int
    private let channel: any Channel
    private let state: NIOLockedValueBox<State>

    struct State {
        var partitioned = false
        var upstreams: [any Channel] = []
        var clients: [any Channel] = []
    }

    private init(port: Int, channel: any Channel, state: NIOLockedValueBox<State>) {
        self.port = port
        self.channel = channel
        self.state = state
    }

    /// Starts a proxy to `127.0.0.1:target`.
    public static func start(to target: Int) async throws -> TCPProxy {
        let state = NIOLockedValueBox(State())
        let group = MultiThreadedEventLoopGroup.singleton
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { client in
                let partitioned = state.withLockedValue { s -> Bool in
                    s.clients.append(client)
                    return s.partitioned
                }
                // After the partition: accepted, never answered.
                if partitioned { return client.pipeline.addHandler(Blackhole()) }
                return client.setOption(.autoRead, value: false).flatMap {
                    ClientBootstrap(group: client.eventLoop)
                        .channelInitializer { upstream in
                            upstream.pipeline.addHandler(Relay(peer: client, state: state))
                        }
                        .connect(host: "127.0.0.1", port: target)
                }.flatMap { upstream in
                    state.withLockedValue { $0.upstreams.append(upstream) }
                    return client.pipeline.addHandler(Relay(peer: upstream, state: state)).flatMap {
                        client.setOption(.autoRead, value: true)
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return TCPProxy(port: channel.localAddress?.port ?? 0, channel: channel, state: state)
    }

    /// Cuts the daemon off from the server (see the type's comment).
    public func partition() {
        let upstreams = state.withLockedValue { s -> [any Channel] in
            s.partitioned = true
            return s.upstreams
        }
        for upstream in upstreams { upstream.close(promise: nil) }
    }

    /// Closes the listener and every connection.
    public func stop() async {
        let all = state.withLockedValue { $0.upstreams + $0.clients }
        for c in all { c.close(promise: nil) }
        try? await channel.close()
    }

    /// Forwards what one side sends to the other, until the partition; then drops it. A closed
    /// upstream does not close the client's side once partitioned (the client hears nothing).
    final class Relay: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let peer: any Channel
        let state: NIOLockedValueBox<State>

        init(peer: any Channel, state: NIOLockedValueBox<State>) {
            self.peer = peer
            self.state = state
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !state.withLockedValue({ $0.partitioned }) else { return }
            peer.writeAndFlush(Self.unwrapInboundIn(data), promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            if !state.withLockedValue({ $0.partitioned }) { peer.close(promise: nil) }
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }

    /// Reads and drops everything.
    final class Blackhole: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
    }
}
