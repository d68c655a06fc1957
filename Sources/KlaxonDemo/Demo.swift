import AsyncHTTPClient
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSQLite
import KlaxonStore
import Logging
import NIOCore

/// `klaxon demo`: the real daemon against local stand-ins for its upstreams, offline, with time
/// compressed (by default one scenario hour per second). A river rises through its flood stages
/// and recedes, Delhi's air worsens, a strong earthquake near Tokyo is revised upwards, a saved
/// trip's forecast turns snowy, and a windstorm crosses a summit weather station. Alerts go to
/// stdout and to a local chat sink that writes an HTML page; a summary of what went where ends
/// the run.
public enum Demo {
    public struct Options: Sendable {
        /// Scenario seconds per wall second.
        public var speed: Double = 3_600
        /// Scenario length in seconds.
        public var length: Int64 = 18 * 3_600
        /// The stdout receiver's format (nil: no stdout receiver).
        public var stdout: StdoutNotifier.Format? = .text
        /// Where the chat page goes (nil: not written). A relative path is taken in the run's own
        /// folder (`RunFolder`), as the default is: nothing of the demo has a fixed name in the
        /// shared temporary folder.
        public var page: String? = "klaxon-demo-chat.html"
        /// Keep the working folder (config, rules, database).
        public var keep = false
        /// More receivers, routed like the others.
        public var receivers: [Receiver] = []
        /// More sources (YAML list items under `sources:`).
        public var sources: [String] = []
        /// The daemon's log level (logs go to stderr).
        public var logLevel: Logger.Level = .warning
        /// Story lines on stderr as the scenario hours pass.
        public var narrate = true
        /// After the story, keep the daemon and its status site up (in real time) until cancelled.
        public var serve = false
        /// The daemon's HTTP port (0: any free port).
        public var port = 0

        public init() {}
    }

    /// A receiver added to the demo's config: its name and its entry under `receivers:` (YAML).
    public struct Receiver: Sendable {
        public var name: String
        public var yaml: String

        public init(name: String, yaml: String) {
            self.name = name
            self.yaml = yaml
        }
    }

    /// What happened.
    public struct Report: Sendable {
        public var folder: String
        public var elapsed: Duration
        /// From the store, as `/metrics` reports them.
        public var metrics: StoreMetrics
        /// `/metrics` as the daemon served it just before it stopped.
        public var metricsText: String
        /// `/readyz` (JSON) at the same moment.
        public var readyText: String
        public var requests: [String: Int]
        public var webSocketConnections: Int
        public var chatPosts: [ChatPage.Post]
        public var page: String?
        /// The status site's address while the daemon ran.
        public var site: String?
        /// Snapshots of the status site written beside the chat page (overview, the river's gauge).
        public var snapshots: [String] = []

        /// Transitions per rule (all states).
        public var alerts: [String: Int] { metrics.transitions.mapValues { $0.values.reduce(0, +) } }
        /// Notifications not delivered when the demo stopped (queued or in flight).
        public var undelivered: Int { (metrics.outbox["pending"] ?? 0) + (metrics.outbox["sending"] ?? 0) }
    }

    static func rules() -> String {
        """
        rules:
          - name: flood-stage
            kind: levels
            metric: gage_height
            levels: nws
            forecast: {horizon: 48h, stale_after: 36h}
            deadband: 0.5
            min_dwell: 15m
            severity: critical
            labels: {team: public-works}
          - name: delhi-air
            kind: levels
            metric: aqi
            stations: [Delhi]
            scale: india-naqi
            direction: worse
            severity: warning
          - name: quake-near-tokyo
            kind: quake
            min_magnitude: 6
            near: [{name: Tokyo, latitude: 35.6762, longitude: 139.6503, radius_km: 300, min_intensity: IV}]
            severity: critical
          - name: trip-packing
            kind: trip-packing
            severity: info
          - name: ski-air
            kind: air-forecast
            trips: [denver-ski]
            severity: warning
          - name: summit-wind
            kind: threshold
            metric: wind_speed
            stations: [\(DemoScenario.summitStation)]
            above: 50
            clear: 40
            for: 10m
            severity: warning

        """
    }

    static func config(upstreams: DemoUpstreams, options: Options) -> String {
        let u = upstreams.url
        var receivers = [#"  - {name: team-chat, type: webhook, preset: slack, url: "\#(u)/hooks/team-chat"}"#]
        var names = ["team-chat"]
        if let format = options.stdout {
            receivers.insert("  - {name: console, type: stdout, format: \(format.rawValue)}", at: 0)
            names.insert("console", at: 0)
        }
        receivers += options.receivers.map { "  - " + $0.yaml }
        names += options.receivers.map(\.name)
        return """
            database: klaxon.sqlite
            rules: [rules.yaml]
            listen: 127.0.0.1:\(options.port)
            # The story is a past day replayed thousands of times faster: its data is old by design.
            notify_max_age: 0s
            sources:
              - {name: river, kind: usgs-ogc, base_url: "\(u)/ogcapi/v0/", sites: ["\(DemoScenario.site)"], parameters: [gage_height], period: 1d, every: 15m}
              - {name: flood-stages, kind: nwps, base_url: "\(u)/nwps/v1/", gauges: [\(DemoScenario.lid)], forecast: true, every: 6h}
              - {name: quakes, kind: usgs-quakes, base_url: "\(u)/earthquakes/feed/v1.0/summary/", feed: significant_day, every: 5m}
              - {name: city-air, kind: aqi-websocket, url: "ws://127.0.0.1:\(upstreams.port)/aqi", sample_every: 20m}
              - {name: forecast, kind: open-meteo, base_url: "\(u)/v1/", every: 1h}
              - {name: summit, kind: nws-observations, base_url: "\(u)/", stations: [\(DemoScenario.summitStation)], units: us, period: 2d, every: 10m}
            \(options.sources.joined(separator: "\n"))
            receivers:
            \(receivers.joined(separator: "\n"))
            routes:
              - receivers: [\(names.joined(separator: ", "))]

            """
    }

    /// Runs the scenario through the daemon until the story has ended and the outbox is empty.
    public static func run(_ options: Options = Options()) async throws -> Report {
        let dir = try RunFolder.make()
        var options = options
        if let page = options.page, !page.hasPrefix("/") { options.page = dir.appendingPathComponent(page).path }
        defer { if !options.keep { RunFolder.clean(dir, keeping: options.page) } }

        // The story ends now: the last `length` seconds, replayed `speed` times faster. Serving, it
        // ends half an hour earlier, and the clock runs in real time from the end of the settling
        // half hour (now) on.
        let settling: Int64 = options.serve ? 1_800 : 0
        let scenario = DemoScenario(
            start: Int64(Date().timeIntervalSince1970) - options.length - settling, length: options.length)
        let clock = DaemonClock.compressed(
            start: scenario.start, factor: options.speed,
            realTimeFrom: options.serve ? scenario.end + settling : nil)
        let upstreams = try await DemoUpstreams.start(scenario: scenario, clock: clock, page: options.page)
        do {
            let report = try await run(options, dir: dir, scenario: scenario, clock: clock, upstreams: upstreams)
            await upstreams.stop()
            return report
        } catch {
            await upstreams.stop()
            throw error
        }
    }

    static func run(
        _ options: Options, dir: URL, scenario: DemoScenario, clock: DaemonClock, upstreams: DemoUpstreams
    ) async throws -> Report {
        let started = ContinuousClock.now

        let configPath = dir.appendingPathComponent("klaxon.yaml").path
        try rules().write(toFile: dir.appendingPathComponent("rules.yaml").path, atomically: true, encoding: .utf8)
        try config(upstreams: upstreams, options: options).write(toFile: configPath, atomically: true, encoding: .utf8)
        var config = try Config.load(path: configPath)
        config.database = dir.appendingPathComponent("klaxon.sqlite").path
        let rules = try RuleLoader.load(paths: [dir.appendingPathComponent("rules.yaml").path])
        let problems = config.check(rules: rules)
        if !problems.isEmpty { throw DiagnosticsError(diagnostics: problems) }
        let store = try SQLiteStore.open(path: config.database ?? "")
        try await store.save(trip: scenario.trip, at: scenario.start)
        // AirNow's forecast for the trip (an issuance as `klaxon ingest` would store it).
        try await store.write(airForecasts: scenario.airForecasts)
        await upstreams.gateQuakeRevision {
            (try? await store.recentTransitions(limit: 1_000))?.contains { $0.station == DemoScenario.quakeID } ?? false
        }
        await upstreams.gateAirLevels {
            (try? await store.recentTransitions(limit: 1_000))?.first {
                $0.rule == "delhi-air" && $0.station == "Delhi"
            }?
            .level
        }

        var logger = Logger(label: "klaxon")
        logger.logLevel = options.logLevel
        StartLine.log(to: logger)
        let daemon = Daemon(config: config, store: store, rules: rules, logger: logger, clock: clock)
        if options.narrate {
            printError(
                "demo: replaying \(options.length / 3_600) hours of a river, a city's air, an earthquake feed, a trip forecast and a summit's wind at \(Int(options.speed))× real time, through the real daemon and local stand-ins for its upstreams"
            )
        }
        let port = Box(0)
        let metricsText = Box("")
        let readyText = Box("")
        let snapshots = Box<[String]>([])
        try await daemon.run(
            onListening: { listening in
                port.set(listening)
                if options.narrate || options.serve {
                    printError("demo: the status site is at http://127.0.0.1:\(listening)/")
                }
            },
            until: {
                await narrate(scenario: scenario, clock: clock, enabled: options.narrate)
                await settle(daemon: daemon, clock: clock)
                metricsText.set(await get("/metrics", port: port.value))
                readyText.set(await get("/readyz", port: port.value))
                if let page = options.page {
                    snapshots.set(await snapshot(beside: page, port: port.value))
                }
                if options.serve { await serve(port: port.value) }
            })
        let served = await upstreams.served()
        let report = await Report(
            folder: dir.path, elapsed: ContinuousClock.now - started, metrics: try store.metrics(),
            metricsText: metricsText.value, readyText: readyText.value, requests: served.requests,
            webSocketConnections: served.connections,
            chatPosts: served.posts, page: options.page,
            site: port.value > 0 ? "http://127.0.0.1:\(port.value)/" : nil, snapshots: snapshots.value)
        return report
    }

    /// The run's own folder: made by `mkdtemp` (a random name, mode 0700) under the temporary
    /// folder, so no other user can read it, take its name first or plant a link in it. It holds the
    /// config, rules and database, and by default the chat page and the site's snapshots.
    enum RunFolder {
        static func make() throws -> URL {
            let template = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-demo-XXXXXX").path
            var bytes = Array(template.utf8CString)
            guard bytes.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) != nil }) else {
                throw UserError(
                    "cannot make the demo's folder under \(FileManager.default.temporaryDirectory.path): \(String(cString: strerror(errno)))"
                )
            }
            // mkdtemp wrote the name over the template's Xs.
            let made = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return URL(fileURLWithPath: made, isDirectory: true)
        }

        /// At the end of a run: everything of it goes (config, rules, database) but the chat page
        /// and the snapshots beside it, which the summary tells people to open; the folder goes too
        /// when nothing is left in it.
        static func clean(_ dir: URL, keeping page: String?) {
            let fm = FileManager.default
            let keep = page.map { URL(fileURLWithPath: $0).deletingLastPathComponent().standardizedFileURL.path }
            let stem = page.map { URL(fileURLWithPath: $0).deletingPathExtension().lastPathComponent } ?? ""
            let base = stem.hasSuffix("-chat") ? String(stem.dropLast(5)) : stem
            for name in (try? fm.contentsOfDirectory(atPath: dir.path)) ?? [] {
                let isPage = keep == dir.standardizedFileURL.path && name.hasPrefix(base) && name.hasSuffix(".html")
                if !isPage { try? fm.removeItem(at: dir.appendingPathComponent(name)) }
            }
            if ((try? fm.contentsOfDirectory(atPath: dir.path)) ?? []).isEmpty { try? fm.removeItem(at: dir) }
        }
    }

    /// A story line every three scenario hours, until the story ends.
    static func narrate(scenario: DemoScenario, clock: DaemonClock, enabled: Bool) async {
        var next = scenario.start
        while clock.now() < scenario.end && !Task.isCancelled {
            if enabled && clock.now() >= next {
                let t = next
                printError(
                    "demo: \(Timestamp.format(t).dropFirst(11).prefix(5)) UTC  river \(String(format: "%.1f", scenario.stage(at: t))) ft · Delhi AQI \(Int(scenario.aqi(city: "Delhi", at: t))) · summit wind \(Int(scenario.wind(at: t))) mph"
                )
                next += 3 * 3_600
            }
            do { try await Task.sleep(for: .milliseconds(50)) } catch { return }
        }
    }

    /// After the story's end: one more round of polls, then an evaluation that started after them,
    /// then until nothing is left to deliver. Waiting on the evaluation itself, not on time, is what
    /// lets a loaded machine run the demo at any speed: the wait gives up only when nothing has moved
    /// (no evaluation ended, no notification went out) for `stall`, which stands for "broken", not
    /// for how fast the machine is (a fixed 30 s cut a loaded machine's demo short, with the last
    /// changes untold and notifications still in the outbox).
    static func settle(daemon: Daemon, clock: DaemonClock, stall: Duration = .seconds(120)) async {
        do {
            try await clock.sleep(20 * 60)
            var progress = Progress(daemon: daemon, stall: stall)
            // The evaluation in progress (if any) may have started before the last polls: wait for the
            // one after it.
            let target = daemon.metrics.evaluations + 2
            daemon.wake.yield()
            while daemon.metrics.evaluations < target, progress.moving(undelivered: nil) {
                try await Task.sleep(for: .milliseconds(20))
                daemon.wake.yield()
            }
            while true {
                let outbox = await (try? daemon.store.metrics().outbox) ?? [:]
                let undelivered = (outbox["pending"] ?? 0) + (outbox["sending"] ?? 0)
                if undelivered == 0 || !progress.moving(undelivered: undelivered) { break }
                try await Task.sleep(for: .milliseconds(100))
            }
        } catch {
            // Cancelled: the daemon is stopping anyway.
        }
    }

    /// Whether the daemon is still getting somewhere: an evaluation ended or the outbox shrank within
    /// the last `stall`.
    struct Progress {
        let daemon: Daemon
        let stall: Duration
        var evaluations: Int
        var undelivered = Int.max
        var lastMove = ContinuousClock.now

        init(daemon: Daemon, stall: Duration) {
            self.daemon = daemon
            self.stall = stall
            self.evaluations = daemon.metrics.evaluations
        }

        mutating func moving(undelivered now: Int?) -> Bool {
            let evaluated = daemon.metrics.evaluations
            if evaluated > evaluations || (now ?? .max) < undelivered {
                evaluations = evaluated
                undelivered = now ?? undelivered
                lastMove = ContinuousClock.now
            }
            return ContinuousClock.now - lastMove < stall
        }
    }

    /// A GET from the daemon's own HTTP server ("" when it fails, or is not 200 with `onlyOK`, or takes more than 5 s: the
    /// client's timeout ends at the response head, so the body is bounded here).
    static func get(_ path: String, port: Int, onlyOK: Bool = false) async -> String {
        guard port > 0 else { return "" }
        let text = await Bounded.value(within: .seconds(5)) {
            let response = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)"), timeout: .seconds(5))
            let body = String(buffer: try await response.body.collect(upTo: 1 << 22))
            return onlyOK && response.status != .ok ? "" : body
        }
        return text ?? ""
    }

    /// The status site's pages written beside the chat page `page` (`…-chat.html` →
    /// `…-overview.html`, `…-gauge.html`), as the daemon served them, without their refresh.
    /// Returns the files written.
    static func snapshot(beside page: String, port: Int) async -> [String] {
        let url = URL(fileURLWithPath: page)
        let folder = url.deletingLastPathComponent()
        var stem = url.deletingPathExtension().lastPathComponent
        if stem.hasSuffix("-chat") { stem.removeLast(5) }
        var written: [String] = []
        for (name, path) in [("overview", "/?refresh=off"), ("gauge", "/gauges/\(DemoScenario.lid)?refresh=off")] {
            let html = await get(path, port: port, onlyOK: true)
            guard !html.isEmpty else { continue }
            let file = folder.appendingPathComponent("\(stem)-\(name).html").path
            if (try? html.write(toFile: file, atomically: true, encoding: .utf8)) != nil { written.append(file) }
        }
        return written
    }

    /// `--serve`: after the story, the daemon and its site stay up until Ctrl-C.
    static func serve(port: Int) async {
        printError(
            "demo: the story has ended; the daemon goes on in real time and the status site stays up at http://127.0.0.1:\(port)/ until Ctrl-C"
        )
        while !Task.isCancelled {
            do { try await Task.sleep(for: .seconds(3_600)) } catch { return }
        }
    }

    /// The closing summary, for people.
    public static func summary(_ r: Report) -> String {
        func list(_ d: [String: Int]) -> String {
            d.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: " · ")
        }
        let seconds = Double(r.elapsed.components.seconds) + Double(r.elapsed.components.attoseconds) / 1e18
        let left =
            r.undelivered == 0
            ? "everything was delivered" : "\(r.undelivered) notifications were still undelivered"
        var lines = ["demo: done in \(String(format: "%.1f", seconds)) s; the daemon stopped; \(left)"]
        lines.append(
            "  upstream requests: \(list(r.requests.filter { $0.key != "chat" })) · aqi websocket connections \(r.webSocketConnections)"
        )
        lines.append("  readings stored:   \(list(r.metrics.readingsBySource))")
        lines.append("  alerts:            \(list(r.alerts))")
        for (receiver, outcomes) in r.metrics.deliveries.sorted(by: { $0.key < $1.key }) {
            let kind = receiver == "team-chat" ? "chat sink" : receiver == "console" ? "stdout" : "receiver"
            lines.append("  delivered to \(receiver) (\(kind)): \(list(outcomes))")
        }
        if let page = r.page {
            lines.append("  chat page:         \(page) (\(r.chatPosts.count) messages; open it in a browser)")
        }
        for file in r.snapshots {
            lines.append("  status page:       \(file) (a snapshot of the site the daemon served)")
        }
        return lines.joined(separator: "\n")
    }
}
