import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import KlaxonApp
import KlaxonCore
import KlaxonServer
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// The demo's world on 127.0.0.1, one server: stand-ins for the upstream services, serving the
/// scenario at the daemon's compressed time, and a chat sink that keeps every webhook post and
/// rewrites an HTML page of them as each arrives.
///
/// | path | stands in for |
/// |---|---|
/// | `GET /ogcapi/v0/collections/continuous/items` | USGS Water Data OGC API, continuous values (`time=FROM/..`) |
/// | `GET /ogcapi/v0/collections/monitoring-locations/items/USGS-01100500` | the site's monitoring location |
/// | `GET /nwps/v1/gauges/{lid}` | NOAA NWPS gauge metadata and flood categories |
/// | `GET /nwps/v1/gauges/{lid}/stageflow/forecast` | the gauge's official forecast issuance |
/// | `GET /earthquakes/feed/v1.0/summary/significant_day.geojson` | the USGS significant-quakes feed |
/// | `GET /v1/forecast` | Open-Meteo daily forecast |
/// | `GET /stations/{id}`, `GET /stations/{id}/observations` | NWS station and its observations (`start`) |
/// | `ws /aqi` | the city AQI WebSocket feed (a frame every 10 scenario minutes) |
/// | `POST /hooks/{receiver}` | a team chat's incoming webhook |
public struct DemoUpstreams: Sendable {
    /// What the server serves from and records into.
    final class World: Sendable {
        let state = State()
        /// Set when the server is stopping: WebSocket handlers end, so no connection holds it open.
        let stopping = Box(false)
        /// Every open connection, closed by `stop`.
        let connections = Connections()
        let scenario: DemoScenario
        let clock: DaemonClock
        let page: String?

        init(scenario: DemoScenario, clock: DaemonClock, page: String?) {
            self.scenario = scenario
            self.clock = clock
            self.page = page
        }
    }

    actor State {
        var requests: [String: Int] = [:]
        var posts: [ChatPage.Post] = []
        var connections = 0
        /// The quake's first, automatic version has been served: only then is the revision shown.
        var quakeListingServed = false
        /// Whether the daemon has announced the quake's first version (set by the demo, which has the
        /// store). The store keeps an event's current version: a daemon that fetched both versions
        /// before it evaluated would announce only the revision, as one new alert, and the story's
        /// "changed" would never be told.
        var quakeAnnounced: (@Sendable () async -> Bool)? = nil

        func count(_ service: String) { requests[service, default: 0] += 1 }
        func gateQuakeRevision(_ announced: @escaping @Sendable () async -> Bool) { quakeAnnounced = announced }
        /// The level of Delhi's air the daemon announced last (set by the demo, which has the store),
        /// nil before the first. The feed is live, with no times of its own: a daemon starved on a
        /// busy machine that missed the few samples of a level would tell "moderate → very poor" and
        /// the story's "poor" would be lost. So the feed shows Delhi at most one level above the one
        /// announced, and holds there until the daemon has told it.
        var airAnnounced: (@Sendable () async -> String?)? = nil
        func gateAirLevels(_ announced: @escaping @Sendable () async -> String?) { airAnnounced = announced }
        /// The highest AQI the feed may show for Delhi now (`DemoScenario.airCap`).
        func airCap() async -> Double {
            guard let airAnnounced else { return .infinity }
            return DemoScenario.airCap(announced: await airAnnounced())
        }
        /// Whether the feed may show the quake's revision, and records a feed that showed its listing:
        /// once the automatic version was served and announced.
        func quakeFeed(listed: Bool) async -> Bool {
            defer { if listed { quakeListingServed = true } }
            guard quakeListingServed else { return false }
            return await quakeAnnounced?() ?? true
        }
        func connected() { connections += 1 }
        /// Records a post and rewrites the page, in turn: concurrent posts never write an older page
        /// over a newer one.
        func add(_ post: ChatPage.Post, world: World) {
            posts.append(post)
            world.writePage(posts)
        }
    }

    let world: World
    public let port: Int
    private let task: Task<Void, any Error>
    private let group: ServiceGroup

    public var url: String { "http://127.0.0.1:\(port)" }
    /// Where the chat page is written (nil: not written).
    public var page: String? { world.page }

    /// Shows the quake's revision only once `announced` says the daemon announced its first version.
    public func gateQuakeRevision(_ announced: @escaping @Sendable () async -> Bool) async {
        await world.state.gateQuakeRevision(announced)
    }

    /// Holds Delhi's air at most one level above the level `announced` returns (see `State.airAnnounced`).
    public func gateAirLevels(_ announced: @escaping @Sendable () async -> String?) async {
        await world.state.gateAirLevels(announced)
    }

    /// Requests served per service, WebSocket connections, and the chat posts received.
    public func served() async -> (requests: [String: Int], connections: Int, posts: [ChatPage.Post]) {
        (await world.state.requests, await world.state.connections, await world.state.posts)
    }

    /// Starts the server on a free port of 127.0.0.1.
    public static func start(scenario: DemoScenario, clock: DaemonClock, page: String?) async throws
        -> DemoUpstreams
    {
        let world = World(scenario: scenario, clock: clock, page: page)
        world.writePage([])
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "klaxon.demo.upstreams")
        logger.logLevel = .critical
        let responder = CallbackResponder { (request: Request, _: BasicRequestContext) in
            try await world.respond(request)
        }
        let app = Application(
            responder: responder,
            server: HTTPServerBuilder { responder in
                let upgrading = HTTP1WebSocketUpgradeChannel(responder: responder, configuration: .init()) {
                    request, _, _ in
                    guard request.path?.hasPrefix("/aqi") == true else { return .dontUpgrade }
                    return .upgrade([:]) { inbound, outbound, _ in
                        await world.state.connected()
                        // Frames go out every 10 scenario minutes; the inbound side is drained
                        // alongside so the client's pings are answered.
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            group.addTask { for try await _ in inbound {} }
                            group.addTask {
                                while !Task.isCancelled && !world.stopping.value {
                                    try await outbound.write(
                                        .text(scenario.aqiFrame(at: clock.now(), delhiCap: await world.state.airCap())))
                                    try await clock.sleep(600)
                                }
                            }
                            _ = try await group.next()
                            group.cancelAll()
                        }
                    }
                }
                return ClosableChildChannel(base: SettledChildChannel(upgrading), connections: world.connections)
            },
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: logger)
        // Run as a service, so that stopping is a graceful shutdown: cancelling a NIO server's task
        // while an accepted connection is still queued traps the process ("Deinited NIOAsyncWriter
        // without calling finish()", apple/swift-nio#3481).
        let group = ServiceGroup(
            configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        let task = Task {
            defer { continuation.finish() }  // a server that fails to start must not leave us waiting
            try await group.run()
        }
        var port = 0
        for await p in stream { port = p }
        guard port > 0 else {
            await group.triggerGracefulShutdown()
            throw UserError("demo: the local stand-in servers did not start")
        }
        return DemoUpstreams(world: world, port: port, task: task, group: group)
    }

    /// Stops the server: it stops accepting, every connection is closed (WebSocket handlers end with
    /// theirs), then the server stops. It is given 5 s; a server still running then is left to the process's end.
    /// True if it stopped in time.
    @discardableResult
    /// Stops the stand-ins; false if they are still running after `bound` (then left behind).
    public func stop(within bound: Duration = .seconds(5)) async -> Bool {
        world.stopping.set(true)
        await group.triggerGracefulShutdown()
        world.connections.closeAll()
        return await Bounded.wait(for: task, within: bound)
    }
}

/// The stand-in server's open connections, so that `stop` can close them all. Hummingbird's
/// WebSocket-upgrade channel awaits a connection's first request with no timeout, no
/// graceful-shutdown hook and no cancellation: a connection on which no request ever comes holds the
/// server's shutdown for as long as the client keeps it open. `HTTPClient.shared` opens such
/// connections (one more than the requests in flight needed, when a busy one came free first) and
/// keeps idle connections for ten minutes.
final class Connections: Sendable {
    private struct State {
        var open: [ObjectIdentifier: any Channel] = [:]
        var closing = false
    }

    private let state = Mutex(State())

    /// Records a new connection; one that arrives after `closeAll` is closed at once.
    func add(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        let admitted = state.withLock { state in
            if state.closing { return false }
            state.open[id] = channel
            return true
        }
        guard admitted else {
            channel.close(promise: nil)
            return
        }
        channel.closeFuture.whenComplete { _ in self.state.withLock { _ = $0.open.removeValue(forKey: id) } }
    }

    /// Closes every open connection, and any that arrives later.
    func closeAll() {
        let open = state.withLock { state in
            state.closing = true
            defer { state.open = [:] }
            return Array(state.open.values)
        }
        for channel in open { channel.close(promise: nil) }
    }
}

/// A server child channel that registers each connection with `connections` before `base` sets it up.
struct ClosableChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    let base: Base
    let connections: Connections

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Base.Value> {
        connections.add(channel)
        return base.setup(channel: channel, logger: logger)
    }

    func handle(value: Base.Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

extension DemoUpstreams.World {
    func respond(_ request: Request) async throws -> Response {
        let path = request.uri.path
        let query = request.uri.queryParameters
        let now = clock.now()
        func json(_ body: String, service: String) async -> Response {
            await state.count(service)
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
        }
        switch (request.method, path) {
        case (.get, "/ogcapi/v0/collections/continuous/items"):
            // `time=START/..`, as the source asks; a day back without it.
            var from = now - 86_400
            if let t = query["time"].flatMap({ $0.split(separator: "/").first }).flatMap({ Timestamp.parse(String($0)) }
            ) {
                from = t
            }
            return await json(scenario.usgsOGC(from: from, to: now), service: "usgs-ogc")
        case (.get, "/ogcapi/v0/collections/monitoring-locations/items/USGS-\(DemoScenario.site)"):
            return await json(scenario.usgsOGCLocation(), service: "usgs-ogc")
        case (.get, "/nwps/v1/gauges/\(DemoScenario.lid)"):
            return await json(scenario.nwpsGauge(), service: "nwps")
        case (.get, "/nwps/v1/gauges/\(DemoScenario.lid)/stageflow/forecast"):
            return await json(scenario.nwpsForecast(), service: "nwps")
        case (.get, "/earthquakes/feed/v1.0/summary/significant_day.geojson"):
            // The story's two versions of the quake are each served at least once, however late a
            // starved daemon polls: the revision shows only after the automatic version was served.
            let revisable = await state.quakeFeed(listed: scenario.quakeListed(at: now))
            return await json(scenario.quakeFeed(at: now, revisable: revisable), service: "usgs-quakes")
        case (.get, "/stations/\(DemoScenario.summitStation)"):
            return await json(scenario.nwsStation(), service: "nws-observations")
        case (.get, "/stations/\(DemoScenario.summitStation)/observations"):
            let from = query["start"].flatMap { Timestamp.parse(String($0)) } ?? now - 7 * 86_400
            return await json(scenario.nwsObservations(from: from, to: now), service: "nws-observations")
        case (.get, "/v1/forecast"):
            return await json(scenario.openMeteo(at: now), service: "open-meteo")
        case (.post, _) where path.hasPrefix("/hooks/"):
            let body = try await request.body.collect(upTo: 1 << 20)
            // Stamped with the story's time, so the page reads as the day it shows.
            let post = ChatPage.Post(
                channel: String(path.dropFirst("/hooks/".count)),
                receivedAt: Date(timeIntervalSince1970: clock.seconds()), body: Data(buffer: body))
            await state.add(post, world: self)
            await state.count("chat")
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "ok")))
        default:
            return Response(status: .notFound, body: .init(byteBuffer: ByteBuffer(string: "not part of the demo\n")))
        }
    }

    /// Rewrites the page. A page that cannot be written is said once, on stderr; the post itself was
    /// received, so the sink still answers 200 (a 500 would make the daemon send it again).
    func writePage(_ posts: [ChatPage.Post]) {
        guard let page else { return }
        let html = ChatPage.html(
            title: "Klaxon demo", subtitle: "what the team's chat received, as it arrived", posts: posts)
        do {
            try html.write(toFile: page, atomically: true, encoding: .utf8)
        } catch {
            if posts.count <= 1 { printError("demo: cannot write the chat page \(page): \(error)") }
        }
    }
}
