import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import KlaxonStore
import Logging
import NIOCore
import ServiceLifecycle

/// The daemon's HTTP server: health, readiness, Prometheus metrics, and the push and alerts API.
public enum KlaxonHTTP {
    public struct Settings: Sendable {
        public var host: String
        public var port: Int
        /// Bearer token for `/api/v1/*`; nil disables the API (404).
        public var apiToken: String?
        /// The sources the daemon polls (for `/readyz` and `/metrics`).
        public var sources: [String]
        /// The sources as they are at each request, when a reload can change them (else `sources`).
        public var liveSources: (@Sendable () -> [String])? = nil
        var sourceNames: [String] { liveSources?() ?? sources }
        /// Owner → token, for `/api/v1/trips` (each owner sees only their own trips).
        public var ownerTokens: [String: String]
        /// The largest body `POST /api/v1/readings` takes (bytes); a larger one gets 413.
        public var maxPushBytes: Int
        /// The status site (its tokens default to `apiToken` and `ownerTokens`).
        public var site: StatusSite.Settings
        /// How many connections at once, and how long one may take to send a request or sit idle.
        public var connections: ConnectionLimits

        public init(
            host: String = "127.0.0.1", port: Int = 9464, apiToken: String? = nil, sources: [String] = [],
            ownerTokens: [String: String] = [:], maxPushBytes: Int = defaultMaxPushBytes,
            site: StatusSite.Settings? = nil, connections: ConnectionLimits = .init()
        ) {
            self.host = host
            self.port = port
            self.apiToken = apiToken
            self.sources = sources
            self.ownerTokens = ownerTokens
            self.maxPushBytes = maxPushBytes
            self.site = site ?? StatusSite.Settings(teamToken: apiToken, ownerTokens: ownerTokens)
            self.connections = connections
        }

        /// 4 MiB: some 80,000 CSV readings. Larger loads belong to `klaxon ingest`.
        public static let defaultMaxPushBytes = 4 << 20

        /// How far ahead of the daemon's now a pushed reading may be dated (`readings.max_future`).
        public var future = FutureBound.standard

        /// What the Alertmanager API (`/api/v2/*`) shows of routing and the daemon, asked at each
        /// request (a reload changes the routing).
        public var alertmanager: @Sendable () -> AlertmanagerAPISettings = { AlertmanagerAPISettings() }

        /// These settings with the sources asked at each request (a reload changes them).
        public func with(liveSources: @escaping @Sendable () -> [String]) -> Settings {
            var s = self
            s.liveSources = liveSources
            return s
        }

        /// These settings with the Alertmanager API's view of the daemon.
        public func with(alertmanager: AlertmanagerAPISettings) -> Settings {
            with(alertmanager: { alertmanager })
        }

        /// These settings with the Alertmanager API's view of the daemon, as it is at each request.
        public func with(alertmanager: @escaping @Sendable () -> AlertmanagerAPISettings) -> Settings {
            var s = self
            s.alertmanager = alertmanager
            return s
        }

        /// These settings with another future bound.
        public func with(future: FutureBound) -> Settings {
            var s = self
            s.future = future
            return s
        }
    }

    /// Builds the application (a ServiceLifecycle service). `onReadings` is called after the API
    /// stored readings, so the daemon can evaluate at once. Chat: `answer` answers commands, `act`
    /// takes a pressed button's action, and `post` (the app's HTTP client) sends the result of a
    /// Slack press to its `response_url`.
    public static func application(
        store: any ServerStore, settings: Settings, metrics: KlaxonMetrics, logger: Logger,
        health: StoreHealth = StoreHealth(),
        chat: ChatEndpoints.Settings = .init(), answer: @escaping ChatEndpoints.Answer = { _, _ in "" },
        act: @escaping ChatEndpoints.Act = { _, _ in .failed("Buttons are not set up here.") },
        post: ChatResponses.Post? = nil,
        onReadings: @escaping @Sendable () -> Void = {}, onRunning: @escaping @Sendable (Int) -> Void = { _ in },
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) },
        reload: Reload? = nil
    ) -> some Service {
        let router = Router()
        // Every request body is read against one budget across connections (see `BodyBudget`).
        router.middlewares.add(
            BodyBudgetMiddleware(budget: BodyBudget(limit: settings.connections.maxBufferedBodyBytes)))
        router.middlewares.add(StoreBusyMiddleware())
        router.middlewares.add(StoreErrorMiddleware(health: health))
        // Presses are acted on and answered by a service of the application, after their request.
        let responses = ChatResponses(post: post, logger: logger)
        ChatEndpoints.add(
            to: router, settings: chat, seen: store, now: { Int64(Date().timeIntervalSince1970) }, answer: answer,
            act: act,
            responses: responses)
        APIRoutes.add(to: router, store: store, settings: settings)
        AlertmanagerAPI.add(to: router, store: store, settings: settings, now: now)
        // The site's "now" is the daemon's (a demo's compressed clock), so "5 min ago" matches the readings.
        StatusSite.add(to: router, store: store, settings: settings.site, now: now)
        if let reload { addReload(to: router, settings: settings, reload: reload) }
        router.get("/healthz") { _, _ in "ok\n" }
        router.get("/readyz") { _, _ -> Response in
            let (ok, body) = await readiness(store: store, sources: settings.sourceNames, health: health)
            return json(encoded: body, status: ok ? .ok : .serviceUnavailable)
        }
        router.get("/metrics") { _, _ -> Response in
            // A read of a few rows (the store's running totals), never of the history tables.
            let counts = try await store.metrics()
            let duties = health.duties.all
            let text = try await offPool {
                metrics.sync(counts, sources: settings.sourceNames)
                metrics.duties(duties)
                return metrics.exposition(process: .current())
            }
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: text)))
        }
        let team = router.group().add(middleware: TeamTokenMiddleware(token: settings.apiToken))
        team.post("/api/v1/readings") { request, _ -> Response in
            let limit = settings.maxPushBytes
            if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > limit {
                return tooLarge(limit)
            }
            let body: ByteBuffer
            do {
                body = try await request.collectBody(upTo: limit)
            } catch let error as HTTPError where error.status == .contentTooLarge {
                return tooLarge(limit)
            }
            let format: ReadingsParser.Format =
                (request.headers[.contentType] ?? "").contains("json") ? .jsonLines : .csv
            // Parsing and the write run off the cooperative pool: a large push must not hold up /healthz.
            // Parsing runs off the cooperative pool and the write in slices: a large push must not
            // hold up /healthz, nor hold the database's write lock for seconds.
            let push = try await Push.ingest(body, format: format, store: store, now: now(), future: settings.future)
            if push.stats.inserted + push.stats.revised > 0 { onReadings() }
            let out = PushAnswer(
                inserted: push.stats.inserted, rejected: push.rejected,
                rejectedCount: push.rejectedCount > push.rejected.count ? push.rejectedCount : nil,
                revised: push.stats.revised, suspect: push.stats.suspect > 0 ? push.stats.suspect : nil,
                unchanged: push.stats.unchanged)
            return json(encoded: out, status: push.rejectedCount == 0 ? .ok : .badRequest)
        }
        team.get("/api/v1/alerts") { request, _ -> Response in
            // One page (`limit`, `after`), with `total` and `next`: bounded work however many fire.
            return try await APIPaging.alerts(request, store: store)
        }
        // Connections are capped below the open-files limit, and slow or idle ones closed (ConnectionLimits).
        let gate = ConnectionGate(settings.connections, logger: logger)
        let app = Application(
            router: router, server: .limitedHTTP1(limits: settings.connections, gate: gate),
            configuration: .init(
                address: .hostname(settings.host, port: settings.port),
                availableConnectionsDelegate: gate.backstop),
            services: [responses],
            onServerRunning: { channel in onRunning(channel.localAddress?.port ?? 0) },
            logger: Self.serverLogger(logger))
        // A failed bind names the address (`HTTPServer+Listen.swift`).
        return HTTPServer(app: app, host: settings.host, port: settings.port)
    }

    /// Hummingbird's logger: at notice or above, so its info lines ("Server started and listening
    /// on …", "Shutting down") stay out: the daemon logs where it listens once, as `msg=listening
    /// address=…`, and its own start and stop. Its warnings and errors still show.
    static func serverLogger(_ logger: Logger) -> Logger {
        var server = logger
        server.logLevel = max(logger.logLevel, .notice)
        return server
    }

    static func authorized(_ request: Request, token: String?) -> Bool {
        guard let token, ServerSecrets.usable(token) else { return false }
        return constantTimeEqual(request.headers[.authorization] ?? "", "Bearer \(token)")
    }

    /// Compares secrets in time that depends on their length only, never on where they differ.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        var diff = x.count ^ y.count
        for i in 0..<min(x.count, y.count) { diff |= Int(x[i] ^ y[i]) }
        return diff == 0
    }

    static func tooLarge(_ limit: Int) -> Response {
        APIError(
            .contentTooLarge,
            "the body is larger than \(limit) bytes (api.max_push_bytes); load big files with klaxon ingest"
        ).response
    }

    /// A push to `/api/v1/readings`: parsed in 64 KiB slices off the pool, written in slices.
    enum Push {
        /// Rejected lines reported back, at most (the count says how many there were).
        static let maxReported = 100

        /// Lines dated more than `future`'s margin after `now` are rejected (and listed) like bad
        /// lines; readings in a unit their series cannot take are listed by series.
        static func ingest(
            _ body: ByteBuffer, format: ReadingsParser.Format, store: any ReadingIngest,
            now: Int64 = Int64(Date().timeIntervalSince1970), future: FutureBound = .standard
        ) async throws -> (stats: IngestStats, rejected: [String], rejectedCount: Int) {
            let parsed = try await offPool { parse(body, format: format, now: now, future: future) }
            let writer = try store.readingWriter(source: "api")
            var stats = IngestStats()
            var offset = 0
            while offset < parsed.readings.count {
                let end = min(parsed.readings.count, offset + sliceReadings)
                stats += try await writer.write(Array(parsed.readings[offset..<end]))
                offset = end
                await Task.yield()
            }
            if body.readableBytes > 1 << 20 { releaseFreeMemory() }
            var rejected = parsed.rejected
            for refusal in stats.unitRefused where rejected.count < maxReported { rejected.append("\(refusal)") }
            return (stats, rejected, parsed.rejectedCount + stats.unitRefusedCount)
        }

        /// Readings per write transaction: a large push is stored in slices so the writer is never
        /// held for long (each slice is atomic; a push is idempotent, so a retry completes one cut short).
        static let sliceReadings = 50_000

        static func parse(
            _ body: ByteBuffer, format: ReadingsParser.Format, now: Int64 = Int64(Date().timeIntervalSince1970),
            future: FutureBound = .standard
        ) -> (readings: [Reading], rejected: [String], rejectedCount: Int) {
            var parser = ReadingsParser(format: format)
            var readings: [Reading] = []
            var rejected: [String] = []
            var rejectedCount = 0
            let latest = future.latest(now: now)
            let emit: (ParsedRow) -> Void = { row in
                switch row {
                case .reading(let r, let line) where r.time > latest:
                    rejectedCount += 1
                    if rejected.count < maxReported {
                        rejected.append("line \(line): \(future.problem(time: r.time, now: now) ?? "")")
                    }
                case .reading(let r, _): readings.append(r)
                case .rejected(let line, let reason):
                    rejectedCount += 1
                    if rejected.count < maxReported { rejected.append("line \(line): \(reason)") }
                }
            }
            body.withUnsafeReadableBytes { raw in
                let bytes = raw.bindMemory(to: UInt8.self)
                var offset = 0
                while offset < bytes.count {
                    let end = min(bytes.count, offset + 64 << 10)
                    parser.feed(UnsafeBufferPointer(rebasing: bytes[offset..<end]), emit)
                    offset = end
                }
            }
            parser.finish(emit)
            return (readings, rejected, rejectedCount)
        }
    }

    /// `value` as the API's JSON (`APIJSON`), and a newline.
    static func json(encoded value: some Encodable, status: HTTPResponse.Status) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(
            status: status, headers: headers,
            body: .init(byteBuffer: ByteBuffer(bytes: APIJSON.encode(value) + Data("\n".utf8))))
    }

    /// `/readyz`: the database answers, and each source's last success and error.
    /// `database` is `ok`, `busy` (another process holds the write lock, and a service is waiting for
    /// it), `failing` (a service's store calls fail otherwise: a full disk, say), `deleted`, `truncated` or
    /// `replaced` (the database file, under the running daemon: `database_error` says what to do) or
    /// `unreachable`; only `ok` is ready.
    public static func readiness(store: any HealthReads, sources: [String], health: StoreHealth = StoreHealth()) async
        -> (Bool, Readiness)
    {
        let reachable = await store.isReachable()
        // Is the database file still the one opened (not deleted or replaced under the daemon)? A
        // `stat`, off the pool.
        let file = (try? await offPool { store.storeFile() }) ?? .ok
        let troubles = health.troubles
        // An unreachable database is not asked again (each call would wait out the same silence).
        let stored = reachable ? ((try? await store.sourceStates()) ?? []) : []
        let states = sources.map { name in
            let s = stored.first { $0.source == name }
            // Healthy: fetched at least once, and the last fetch worked.
            return Readiness.Source(
                name: name, failures: s?.failures ?? 0, lastSuccess: s?.lastSuccess.map(Timestamp.format),
                lastError: s?.lastError, healthy: s?.lastSuccess != nil && (s?.failures ?? 0) == 0)
        }
        let database = !reachable ? "unreachable" : file.state != .ok ? file.state.rawValue : health.state
        let out = Readiness(
            database: database, sources: states,
            // Which build answers (`BuildInfo`).
            version: BuildInfo.version, revision: BuildInfo.revision,
            // Which duties this instance holds, and which it waits for while another instance holds
            // them (several daemons on one PostgreSQL database). Standby is ready: it answers HTTP.
            duties: .init(held: health.duties.held, standby: health.duties.standby),
            databaseWaiting: troubles.isEmpty
                ? nil
                : troubles.sorted { $0.key < $1.key }.map { service, t in
                    Readiness.Waiting(service: service, since: Timestamp.format(t.since / 1000), error: t.error)
                },
            databaseError: file.message)
        return (reachable && troubles.isEmpty && file.state == .ok, out)
    }
}

/// The body of `/readyz` (`KlaxonHTTP.readiness`), written with its keys sorted.
public struct Readiness: Encodable, Sendable {
    /// A source's state: `last_success` and `last_error` are `null` when there is none.
    public struct Source: Encodable, Sendable {
        public var name: String
        public var failures: Int
        public var lastSuccess: String?
        public var lastError: String?
        public var healthy: Bool

        enum CodingKeys: String, CodingKey {
            case name, failures, healthy
            case lastSuccess = "last_success"
            case lastError = "last_error"
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(name, forKey: .name)
            try c.encode(failures, forKey: .failures)
            // Written as `null`, not left out.
            try c.encode(lastSuccess, forKey: .lastSuccess)
            try c.encode(lastError, forKey: .lastError)
            try c.encode(healthy, forKey: .healthy)
        }
    }

    public struct Duties: Encodable, Sendable {
        public var held: [String]
        public var standby: [String]
    }

    /// A service waiting for the database (`StoreHealth.troubles`).
    public struct Waiting: Encodable, Sendable {
        public var service: String
        public var since: String
        public var error: String
    }

    public var database: String
    public var sources: [Source]
    public var version: String
    public var revision: String
    public var duties: Duties
    /// Left out when no service waits.
    public var databaseWaiting: [Waiting]?
    /// Left out when the database file is fine.
    public var databaseError: String?

    enum CodingKeys: String, CodingKey {
        case database, sources, version, revision, duties
        case databaseWaiting = "database_waiting"
        case databaseError = "database_error"
    }
}

/// A request that finds the database locked by another process gets 503 with `Retry-After`, not 500:
/// the daemon is fine, and the same request will work shortly.
struct StoreBusyMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch  where StoreHealth.isBusy(error) {
            return APIError(
                .serviceUnavailable, "the database is busy (another process holds it); try again shortly",
                headers: [.retryAfter: "5"]
            ).response
        }
    }
}
