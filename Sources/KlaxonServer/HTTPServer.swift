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

        public init(
            host: String = "127.0.0.1", port: Int = 9464, apiToken: String? = nil, sources: [String] = [],
            ownerTokens: [String: String] = [:], maxPushBytes: Int = defaultMaxPushBytes
        ) {
            self.host = host
            self.port = port
            self.apiToken = apiToken
            self.sources = sources
            self.ownerTokens = ownerTokens
            self.maxPushBytes = maxPushBytes
        }

        /// 4 MiB: some 80,000 CSV readings. Larger loads belong to `klaxon ingest`.
        public static let defaultMaxPushBytes = 4 << 20
    }

    /// In-process counters the store does not hold.
    public final class Counters: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [String: Int] = [:]

        public init() {}

        public func add(_ name: String, _ n: Int = 1) {
            lock.lock()
            values[name, default: 0] += n
            lock.unlock()
        }

        public var snapshot: [String: Int] {
            lock.lock()
            defer { lock.unlock() }
            return values
        }
    }

    /// Builds the application (a ServiceLifecycle service). `onReadings` is called after the API
    /// stored readings, so the daemon can evaluate at once.
    public static func application(
        store: any Store, settings: Settings, counters: Counters, logger: Logger, health: StoreHealth = StoreHealth(),
        chat: ChatEndpoints.Settings = .init(), answer: @escaping ChatEndpoints.Answer = { _, _ in "" },
        onReadings: @escaping @Sendable () -> Void = {}, onRunning: @escaping @Sendable (Int) -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = Router()
        router.middlewares.add(StoreBusyMiddleware())
        ChatEndpoints.add(to: router, settings: chat, now: { Int64(Date().timeIntervalSince1970) }, answer: answer)
        APIRoutes.add(to: router, store: store, settings: settings)
        router.get("/healthz") { _, _ in "ok\n" }
        router.get("/readyz") { _, _ -> Response in
            let (ok, body) = await readiness(store: store, sources: settings.sources, health: health)
            return json(body, status: ok ? .ok : .serviceUnavailable)
        }
        router.get("/metrics") { _, _ -> Response in
            let text = try await prometheus(store.metrics(), counters: counters.snapshot)
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
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
            counters.add("api_readings", push.stats.inserted)
            if push.stats.inserted + push.stats.revised > 0 { onReadings() }
            var out: [String: Any] = [
                "inserted": push.stats.inserted, "revised": push.stats.revised, "unchanged": push.stats.unchanged,
                "rejected": push.rejected,
            ]
            if push.rejectedCount > push.rejected.count { out["rejected_count"] = push.rejectedCount }
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
            router: router, configuration: .init(address: .hostname(settings.host, port: settings.port)),
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
        let stored = (try? await store.sourceStates()) ?? []
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
        ]
        if !troubles.isEmpty {
            out["database_waiting"] = troubles.sorted { $0.key < $1.key }.map { service, t -> [String: Any] in
                ["service": service, "since": Timestamp.format(t.since / 1000), "error": t.error]
            }
        }
        return (reachable && troubles.isEmpty, out)
    }

    /// The Prometheus text exposition of the store's counts and the in-process counters.
    public static func prometheus(_ m: StoreMetrics, counters: [String: Int]) -> String {
        var out = ""
        func esc(_ s: String) -> String {
            s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
        }
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        family("klaxon_readings_total", "counter", "Readings stored, by source.")
        for (source, n) in m.readingsBySource.sorted(by: { $0.key < $1.key }) {
            out += "klaxon_readings_total{source=\"\(esc(source))\"} \(n)\n"
        }
        family("klaxon_source_failures", "gauge", "Consecutive failed fetches, by source.")
        for s in m.sources { out += "klaxon_source_failures{source=\"\(esc(s.source))\"} \(s.failures)\n" }
        family("klaxon_source_errors_total", "counter", "Failed fetches since the daemon started, by source.")
        for (k, v) in counters.sorted(by: { $0.key < $1.key }) where k.hasPrefix("source_error:") {
            out += "klaxon_source_errors_total{source=\"\(esc(String(k.dropFirst(13))))\"} \(v)\n"
        }
        family("klaxon_evaluations_total", "counter", "Evaluations run since the daemon started.")
        out += "klaxon_evaluations_total \(counters["evaluations", default: 0])\n"
        family("klaxon_transitions_total", "counter", "Alert transitions, by rule and state.")
        for (rule, states) in m.transitions.sorted(by: { $0.key < $1.key }) {
            for (state, n) in states.sorted(by: { $0.key < $1.key }) {
                out += "klaxon_transitions_total{rule=\"\(esc(rule))\",state=\"\(state)\"} \(n)\n"
            }
        }
        family("klaxon_outbox_depth", "gauge", "Outbox rows, by state.")
        for state in ["pending", "sending", "sent", "dead", "muted", "dropped"] {
            out += "klaxon_outbox_depth{state=\"\(state)\"} \(m.outbox[state, default: 0])\n"
        }
        family("klaxon_deliveries_total", "counter", "Notifications by receiver and outcome.")
        for (receiver, states) in m.deliveries.sorted(by: { $0.key < $1.key }) {
            for (state, n) in states.sorted(by: { $0.key < $1.key }) {
                out += "klaxon_deliveries_total{receiver=\"\(esc(receiver))\",outcome=\"\(state)\"} \(n)\n"
            }
        }
        family("klaxon_delivery_latency_seconds", "histogram", "Seconds from queueing to delivery.")
        for (le, n) in m.latencyBuckets {
            out += "klaxon_delivery_latency_seconds_bucket{le=\"\(formatValue(le))\"} \(n)\n"
        }
        out += "klaxon_delivery_latency_seconds_bucket{le=\"+Inf\"} \(m.latencyCount)\n"
        out += "klaxon_delivery_latency_seconds_sum \(formatValue(m.latencySum))\n"
        out += "klaxon_delivery_latency_seconds_count \(m.latencyCount)\n"
        return out
    }
}

/// Hands memory freed by a large request back to the system (glibc keeps it otherwise).
func releaseFreeMemory() {
    #if os(Linux)
        _ = glibcMallocTrim(0)
    #endif
}

#if os(Linux)
    /// glibc's `malloc_trim`, which its Swift module does not import.
    @_silgen_name("malloc_trim") private func glibcMallocTrim(_ pad: Int) -> Int32
#endif

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
