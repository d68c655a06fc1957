import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import KlaxonStore
import Logging
import NIOCore

/// The daemon's HTTP server: health, readiness, Prometheus metrics, and the push and alerts API.
public enum KlaxonHTTP {
    public struct Settings: Sendable {
        public var host: String
        public var port: Int
        /// Bearer token for `/api/v1/*`; nil disables the API (404).
        public var apiToken: String?
        /// The sources the daemon polls (for `/readyz`).
        public var sources: [String]
        /// Owner → token, for `/api/v1/trips` (each owner sees only their own trips).
        public var ownerTokens: [String: String]
        /// The largest body `POST /api/v1/readings` takes (bytes); a larger one gets 413.
        public var maxPushBytes: Int
        /// The status site (its tokens default to `apiToken` and `ownerTokens`).
        public var site: StatusSite.Settings

        public init(
            host: String = "127.0.0.1", port: Int = 9464, apiToken: String? = nil, sources: [String] = [],
            ownerTokens: [String: String] = [:], maxPushBytes: Int = defaultMaxPushBytes,
            site: StatusSite.Settings? = nil
        ) {
            self.host = host
            self.port = port
            self.apiToken = apiToken
            self.sources = sources
            self.ownerTokens = ownerTokens
            self.maxPushBytes = maxPushBytes
            self.site = site ?? StatusSite.Settings(teamToken: apiToken, ownerTokens: ownerTokens)
        }

        /// 4 MiB: some 80,000 CSV readings. Larger loads belong to `klaxon ingest`.
        public static let defaultMaxPushBytes = 4 << 20
    }

    /// Builds the application (a ServiceLifecycle service). `onReadings` is called after the API
    /// stored readings, so the daemon can evaluate at once.
    public static func application(
        store: any Store, settings: Settings, metrics: KlaxonMetrics, logger: Logger,
        health: StoreHealth = StoreHealth(),
        chat: ChatEndpoints.Settings = .init(), answer: @escaping ChatEndpoints.Answer = { _, _ in "" },
        onReadings: @escaping @Sendable () -> Void = {}, onRunning: @escaping @Sendable (Int) -> Void = { _ in },
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) -> some ApplicationProtocol {
        let router = Router()
        router.middlewares.add(StoreBusyMiddleware())
        ChatEndpoints.add(to: router, settings: chat, now: { Int64(Date().timeIntervalSince1970) }, answer: answer)
        APIRoutes.add(to: router, store: store, settings: settings)
        // The site's "now" is the daemon's (a demo's compressed clock), so "5 min ago" matches the readings.
        StatusSite.add(to: router, store: store, settings: settings.site, now: now)
        router.get("/healthz") { _, _ in "ok\n" }
        router.get("/readyz") { _, _ -> Response in
            let (ok, body) = await readiness(store: store, sources: settings.sources, health: health)
            return json(body, status: ok ? .ok : .serviceUnavailable)
        }
        router.get("/metrics") { _, _ -> Response in
            // A read of a few rows (the store's running totals), never of the history tables.
            let counts = try await store.metrics()
            let duties = health.duties.all
            let text = try await offPool {
                metrics.sync(counts)
                metrics.duties(duties)
                return metrics.exposition()
            }
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: text)))
        }
        router.post("/api/v1/readings") { request, _ -> Response in
            guard authorized(request, token: settings.apiToken) else { return unauthorized(settings.apiToken) }
            let limit = settings.maxPushBytes
            if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > limit {
                return tooLarge(limit)
            }
            let body: ByteBuffer
            do {
                body = try await request.body.collect(upTo: limit)
            } catch let error as HTTPError where error.status == .contentTooLarge {
                return tooLarge(limit)
            }
            let format: ReadingsParser.Format =
                (request.headers[.contentType] ?? "").contains("json") ? .jsonLines : .csv
            // Parsing and the write run off the cooperative pool: a large push must not hold up /healthz.
            // Parsing runs off the cooperative pool and the write in slices: a large push must not
            // hold up /healthz, nor hold the database's write lock for seconds.
            let push = try await Push.ingest(body, format: format, store: store)
            if push.stats.inserted + push.stats.revised > 0 { onReadings() }
            var out: [String: Any] = [
                "inserted": push.stats.inserted, "revised": push.stats.revised, "unchanged": push.stats.unchanged,
                "rejected": push.rejected,
            ]
            if push.rejectedCount > push.rejected.count { out["rejected_count"] = push.rejectedCount }
            if push.stats.suspect > 0 { out["suspect"] = push.stats.suspect }
            return json(out, status: push.rejectedCount == 0 ? .ok : .badRequest)
        }
        router.get("/api/v1/alerts") { request, _ -> Response in
            guard authorized(request, token: settings.apiToken) else { return unauthorized(settings.apiToken) }
            let acks = try await store.acks()
            let alerts = try await store.firingAlerts().map { a -> [String: Any] in
                let t = a.transition
                var o: [String: Any] = [
                    "id": a.transitionID, "rule": a.key.rule, "station": a.key.station, "metric": a.key.metric,
                    "severity": t.severity.rawValue, "since": Timestamp.format(t.at), "summary": t.summary,
                ]
                if let level = t.level { o["level"] = level }
                if let ack = acks[a.key] {
                    o["acked_by"] = ack.by
                    o["acked_at"] = Timestamp.format(ack.at)
                }
                if let v = t.value { o["value"] = v }
                return o
            }
            return json(["alerts": alerts], status: .ok)
        }
        return Application(
            router: router, server: .settledHTTP1(),
            configuration: .init(address: .hostname(settings.host, port: settings.port)),
            onServerRunning: { channel in onRunning(channel.localAddress?.port ?? 0) }, logger: logger)
    }

    static func authorized(_ request: Request, token: String?) -> Bool {
        guard let token, !token.isEmpty else { return false }
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
        json(
            ["error": "the body is larger than \(limit) bytes (api.max_push_bytes); load big files with klaxon ingest"],
            status: .contentTooLarge)
    }

    /// A push to `/api/v1/readings`: parsed in 64 KiB slices off the pool, written in slices.
    enum Push {
        /// Rejected lines reported back, at most (the count says how many there were).
        static let maxReported = 100

        static func ingest(_ body: ByteBuffer, format: ReadingsParser.Format, store: any Store) async throws -> (
            stats: IngestStats, rejected: [String], rejectedCount: Int
        ) {
            let parsed = try await offPool { parse(body, format: format) }
            let writer = try store.readingWriter()
            var stats = IngestStats()
            var offset = 0
            while offset < parsed.readings.count {
                let end = min(parsed.readings.count, offset + sliceReadings)
                stats += try await writer.write(Array(parsed.readings[offset..<end]))
                offset = end
                await Task.yield()
            }
            if body.readableBytes > 1 << 20 { releaseFreeMemory() }
            return (stats, parsed.rejected, parsed.rejectedCount)
        }

        /// Readings per write transaction: a large push is stored in slices so the writer is never
        /// held for long (each slice is atomic; a push is idempotent, so a retry completes one cut short).
        static let sliceReadings = 50_000

        static func parse(_ body: ByteBuffer, format: ReadingsParser.Format) -> (
            readings: [Reading], rejected: [String], rejectedCount: Int
        ) {
            var parser = ReadingsParser(format: format)
            var readings: [Reading] = []
            var rejected: [String] = []
            var rejectedCount = 0
            let emit: (ParsedRow) -> Void = { row in
                switch row {
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

    static func unauthorized(_ token: String?) -> Response {
        if token == nil { return json(["error": "the API is off: set api.token in the config"], status: .notFound) }
        var r = json(["error": "missing or wrong bearer token"], status: .unauthorized)
        r.headers[.wwwAuthenticate] = "Bearer"
        return r
    }

    static func json(_ object: Any, status: HTTPResponse.Status) -> Response {
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(
            status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data + Data("\n".utf8))))
    }

    /// `/readyz`: the database answers, and each source's last success and error.
    /// `database` is `ok`, `busy` (another process holds the write lock, and a service is waiting for
    /// it), `failing` (a service's store calls fail otherwise) or `unreachable`; only `ok` is ready.
    public static func readiness(store: any Store, sources: [String], health: StoreHealth = StoreHealth()) async
        -> (Bool, [String: Any])
    {
        let reachable = await store.isReachable()
        let troubles = health.troubles
        var states: [[String: Any]] = []
        // An unreachable database is not asked again (each call would wait out the same silence).
        let stored = reachable ? ((try? await store.sourceStates()) ?? []) : []
        for name in sources {
            let s = stored.first { $0.source == name }
            var o: [String: Any] = ["name": name, "failures": s?.failures ?? 0]
            o["last_success"] = s?.lastSuccess.map(Timestamp.format) ?? NSNull()
            o["last_error"] = s?.lastError ?? NSNull()
            // Healthy: fetched at least once, and the last fetch worked.
            o["healthy"] = s?.lastSuccess != nil && (s?.failures ?? 0) == 0
            states.append(o)
        }
        var out: [String: Any] = [
            "database": reachable ? health.state : "unreachable", "sources": states,
            // Which duties this instance holds, and which it waits for while another instance holds
            // them (several daemons on one PostgreSQL database). Standby is ready: it answers HTTP.
            "duties": ["held": health.duties.held, "standby": health.duties.standby],
        ]
        if !troubles.isEmpty {
            out["database_waiting"] = troubles.sorted { $0.key < $1.key }.map { service, t -> [String: Any] in
                ["service": service, "since": Timestamp.format(t.since / 1000), "error": t.error]
            }
        }
        return (reachable && troubles.isEmpty, out)
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
            var response = KlaxonHTTP.json(
                ["error": "the database is busy (another process holds it); try again shortly"],
                status: .serviceUnavailable)
            response.headers[.retryAfter] = "5"
            return response
        }
    }
}
