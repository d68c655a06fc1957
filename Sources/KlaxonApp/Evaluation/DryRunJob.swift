import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonSources
import KlaxonStore
import Logging

/// `klaxon dry-run`, the whole job once the command line is parsed: replays readings (files or a
/// database, opened read-only) and quake versions through the rules from a clean state, and prints
/// what would be sent, or the exact payloads one receiver would get (`render`).
public struct DryRunJob: Sendable {
    /// Rule files or folders (empty: the config's `rules:`, else `Rules/`).
    public var rules: [String]
    public var readings: [String]
    public var events: [String]
    public var db: String?
    /// Bounds on reading times (seconds).
    public var from: Int64?
    public var to: Int64?
    public var format: StdoutNotifier.Format
    public var explain: Bool
    public var render: String?
    public var config: String?
    /// Where the lines go: nil for standard output (through a buffer) and standard error.
    public var console: CommandOutput?
    /// `--lead-time`: per observed flood-category crossing, how much earlier the forecast alert
    /// fired (`LeadTime`), instead of the transitions (needs `db`).
    public var leadTime = false

    public init(
        rules: [String], readings: [String], events: [String], db: String?, from: Int64?, to: Int64?,
        format: StdoutNotifier.Format, explain: Bool, render: String?, config: String?, console: CommandOutput? = nil
    ) {
        self.rules = rules
        self.readings = readings
        self.events = events
        self.db = db
        self.from = from
        self.to = to
        self.format = format
        self.explain = explain
        self.render = render
        self.config = config
        self.console = console
    }

    /// A line of standard error.
    func warn(_ line: String) { (console ?? .standard).error(line) }

    /// A line of standard output.
    func say(_ line: String) {
        if let console { console.line(line) } else { print(line) }
    }

    /// Lines of standard output: the console's, or through one buffer.
    func write(_ lines: [String]) {
        if let console {
            lines.forEach(console.line)
            return
        }
        let out = BufferedStandardOutput()
        for line in lines { out.line(line) }
        out.flush()
    }

    /// Runs the replay; returns the exit code (1 when rows were rejected).
    public func run() async throws -> Int32 {
        let clock = ContinuousClock.now
        let cfg = try config.map { try Config.load(path: $0) }
        var ruleList = try RuleLoader.load(paths: !rules.isEmpty ? rules : cfg?.rules ?? ["Rules"])
        var previewer: (any Notifier)? = nil
        if let render, let cfg {
            guard let n = try DeliveryWiring.notifiers(cfg)[render] else {
                throw UserError("--render: no receiver \"\(render)\"\(cfg.knownReceivers)")
            }
            previewer = n
        }
        // Station names and NWS flood categories come from the replayed database, else from the
        // config's database when it is a SQLite file that exists (PostgreSQL: give --db).
        let sourceLocation = try db.map {
            try StoreLocation.parse($0, environment: ProcessInfo.processInfo.environment)
        }
        var contextLocation = sourceLocation
        if contextLocation == nil, let path = cfg?.database, FileManager.default.fileExists(atPath: path) {
            contextLocation = .sqlite(path: path)
        }
        return try await StoreLocation.withOptionalStore(contextLocation, readOnly: true) { context in
            let source = sourceLocation == nil ? nil : context
            // People's watches in the database, with the config's receivers, as the daemon evaluates them.
            if let context, let cfg {
                do {
                    ruleList += try await WatchWiring.storedRules(store: context, config: cfg)
                } catch {
                    warn("warning: the database's watches are not replayed: \(error)")
                }
            }
            var stations: [String: StationInfo] = [:]
            var floods: [String: FloodCategories] = [:]
            if let context, WaterContext.needsStations(ruleList) {
                stations = try await context.stationInfos()
                floods = try await context.floodCategories()
                for line in try await WaterContext.missingCategories(rules: ruleList, store: context) {
                    warn("warning: \(line)")
                }
            }
            if leadTime {
                guard let source else {
                    throw UserError("--lead-time needs --db (the stored observations and forecasts)")
                }
                let replayed = try await LeadTime.replay(
                    store: source, rules: ruleList, stations: stations, floods: floods, from: from, to: to,
                    report: { warn("warning: " + $0) })
                if ForecastRunner(rules: ruleList).isEmpty {
                    warn("warning: no rule has forecast: (levels: nws with a forecast: option): nothing to measure")
                }
                let rows = LeadTime.rows(replayed)
                write(rows.map { format == .json ? LeadTime.json($0) : LeadTime.text($0) })
                warn(LeadTime.summary(rows))
                return 0
            }
            let dry = DryRun(
                rules: ruleList, from: from, to: to,
                stations: stations, floods: floods)
            let renderer = try MessageRenderer(rules: ruleList)
            // Transitions go to the output as they are made; it orders them in bounded memory.
            let output = DryRunOutput(format: format, explain: explain, renderer: renderer)
            var result: DryRun.Result
            if let source {
                result = try await dry.run(store: source)
            } else if previewer == nil {
                // Files of any size are read and replayed on a thread of their own, not on the pool.
                let files = readings
                let warn = (console ?? .standard).error
                // The output renders and spills on a third thread meanwhile (parse, evaluate, render).
                result = try await offPool {
                    output.beginBackground()
                    let replay = Swift.Result {
                        try dry.run(
                            files: files, report: warn, emit: { try output.add($0) }, discard: { output.discard($0) })
                    }
                    try output.endBackground()
                    return try replay.get()
                }
            } else {
                let files = readings
                let warn = (console ?? .standard).error
                result = try await offPool { try dry.run(files: files, report: warn) }
            }
            // Trip-packing rules: the stored trips and forecasts, as of --to (default now).
            if let source, !TripRunner(rules: ruleList).isEmpty {
                let trips = try await dry.replay(
                    trips: source, now: to ?? Int64(Date().timeIntervalSince1970))
                result.transitions = (result.transitions + trips).sorted(by: Transition.outputOrder)
            }
            // Forecast rules: the stored issuances and observations (`LeadTime.replay`).
            if let source, !ForecastRunner(rules: ruleList).isEmpty {
                let replayed = try await LeadTime.replay(
                    store: source, rules: ruleList, stations: stations, floods: floods, from: from, to: to,
                    report: { warn("warning: " + $0) })
                result.transitions = (result.transitions + LeadTime.transitions(replayed)).sorted(
                    by: Transition.outputOrder)
            }
            // Quake rules: the stored revision history, or events files.
            if !QuakeRunner(rules: ruleList).isEmpty {
                var versions: [(key: String?, event: QuakeEvent)] = []
                if let source, events.isEmpty {
                    versions = try await source.quakeRevisions().map { ($0.key, $0.event) }
                }
                for path in events {
                    guard let data = try await readFile(path) else {
                        throw UserError("\(path): cannot read the file")
                    }
                    do {
                        versions += try QuakeParser.parse(data).map { (nil, $0) }
                    } catch {
                        throw UserError("\(path): \(error)")
                    }
                }
                let quakes = dry.replay(quakes: versions)
                result.transitions = (result.transitions + quakes).sorted(by: Transition.outputOrder)
            }
            if let previewer, let render, let cfg {
                let printed = try await renderAsSent(
                    cfg, receiver: render, previewer: previewer, rules: ruleList, renderer: renderer,
                    transitions: result.transitions, dry: dry, source: source, stations: stations, floods: floods)
                warn("dry-run: \(result.readings) readings replayed, \(printed) payloads rendered for \(render)")
                return result.rejected > 0 ? 1 : 0
            }
            for t in result.transitions { try output.add(t) }
            let console = console
            let printed = try await offPool {
                if let console { return try output.finish(console.line) }
                let out = BufferedStandardOutput()
                let n = try output.finish(out.line)
                out.flush()
                return n
            }
            let elapsed = clock.duration(to: .now)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            var summary =
                "dry-run: \(result.readings) readings replayed, \(printed) transitions, \(String(format: "%.2f", seconds)) s"
            if result.rejected > 0 { summary += ", \(result.rejected) rows rejected" }
            if result.suspect > 0 { summary += ", \(result.suspect) suspect readings skipped" }
            warn(summary)
            if let cfg {
                try await whatWouldBeSent(
                    cfg, rules: ruleList, dry: dry, source: source, stations: stations, floods: floods,
                    recorded: printed)
            }
            return result.rejected > 0 ? 1 : 0
        }
    }

    /// `--render`: the exact payloads `receiver` would get, as the daemon would send them. The
    /// readings go through the daemon's own path (`NotifyReplay`: the store records each evaluation,
    /// the dispatcher routes, groups, folds and builds each notification), so a payload carries the
    /// episode's id and `startsAt`, and an email its episode's subject and `In-Reply-To` the thread's
    /// first message, one this replay rendered before. Quake and trip transitions, which the replay
    /// does not take, follow as one payload each (each is news of its own, with no thread before it).
    /// Returns how many payloads were printed.
    func renderAsSent(
        _ cfg: Config, receiver: String, previewer: any Notifier, rules: [Rule], renderer: MessageRenderer,
        transitions: [Transition], dry: DryRun, source: (any ReadingScans)?, stations: [String: StationInfo],
        floods: [String: FloodCategories]
    ) async throws -> Int {
        let readings = try await replayedReadings(dry: dry, source: source)
        let sent = try await NotifyReplay.with(
            rules: rules, routing: cfg.routing, receivers: cfg.receivers.map(\.name), stations: stations,
            floods: floods, settings: replaySettings(cfg)
        ) { replay in try await replay.replay(readings, end: to) }
        var printed = 0
        // A receiver that edits: the first notification of a thread posts its message (`message-N`,
        // N the payload's number), every later one is shown as the edit of it.
        var living = LivingPreview()
        func show(_ n: AlertNotification) throws {
            printed += 1
            guard let first = n.alerts.first?.transition else { return }
            let more = n.alerts.count > 1 ? " (+\(n.alerts.count - 1) more)" : ""
            var shown = n
            var edit: (of: String, request: RenderedEdit)?
            if previewer.editsMessages {
                let step = living.next(n, messageID: "message-\(printed)")
                shown = step.notification
                if let of = step.edits, let request = try previewer.renderEdit(shown, messageID: of) {
                    edit = (of, request)
                }
            }
            let how = edit.map { ", edits \($0.of): \($0.request.request)" } ?? ""
            say(
                TerminalText.safe(
                    "--- \(printed): \(first.rule) \(first.station) \(first.state.rawValue) at \(Timestamp.format(first.at))\(more) → \(receiver)\(how)"
                ))
            say(try edit?.request.body ?? previewer.render(shown))
        }
        for s in sent where s.notification.receiver == receiver { try show(s.notification) }
        // Quake and trip news: each its own episode (the replay has no event rounds), numbered
        // after the replayed ones.
        let events = transitions.filter(\.isEvent)
        let last = sent.flatMap { $0.notification.alerts.map(\.id) }.max() ?? 0
        for (i, t) in events.enumerated() {
            let id = last + Int64(i + 1)
            try show(
                AlertNotification(
                    key: "dry-run-event-\(i + 1)", receiver: receiver,
                    alerts: [NotifiedAlert(transition: t, message: renderer.render(t), id: id)],
                    externalURL: cfg.externalURL ?? "", chatActions: ChatWiring.signer(cfg)))
        }
        if printed == 0 {
            warn(
                "dry-run: receiver \(TerminalText.safe(receiver)) would get nothing from these readings (routes and rules' notify)"
            )
        }
        return printed
    }

    /// The readings of the replay (the database's, or the files'), within --from/--to.
    func replayedReadings(dry: DryRun, source: (any ReadingScans)?) async throws -> [Reading] {
        var readings: [Reading] = []
        if let source {
            try await source.forEachReading(from: from, to: to) { key, unit, rows in
                for r in rows {
                    readings.append(
                        Reading(station: key.station, metric: key.metric, time: r.time, value: r.value, unit: unit))
                }
            }
            return readings
        }
        let files = self.readings
        return try await offPool {
            var out: [Reading] = []
            for path in files {
                try ReadingsFiles.stream(path: path) { row in
                    if case .reading(let r, _) = row, dry.inRange(r.time) { out.append(r) }
                }
            }
            // PM concentrations bring their NowCast series, as the stores derive them (issue 42).
            if NowCastSeries.applies(to: out) { out += NowCastSeries.derive(out, stored: [:]) }
            return out
        }
    }

    /// The dispatcher's settings as the daemon's (`fallback_receiver`, `external_url`, chat buttons).
    func replaySettings(_ cfg: Config) -> Dispatcher.Settings {
        var settings = Dispatcher.Settings()
        settings.fallbackReceiver = cfg.fallbackReceiver
        settings.externalURL = cfg.externalURL ?? ""
        settings.chatActions = ChatWiring.signer(cfg)
        return settings
    }

    /// With a config: the readings replayed again, as if live, through the store and the dispatcher
    /// (`NotifyReplay`), and what each receiver would get printed after the transitions.
    func whatWouldBeSent(
        _ cfg: Config, rules: [Rule], dry: DryRun, source: (any ReadingScans)?, stations: [String: StationInfo],
        floods: [String: FloodCategories], recorded: Int
    ) async throws {
        let readings = try await replayedReadings(dry: dry, source: source)
        let settings = replaySettings(cfg)
        let (sent, counts) = try await NotifyReplay.with(
            rules: rules, routing: cfg.routing, receivers: cfg.receivers.map(\.name), stations: stations,
            floods: floods, settings: settings
        ) { replay in
            (try await replay.replay(readings, end: to), try await replay.outboxCounts())
        }
        let lines = format == .json ? DryRunPrinter.sentJSON(sent) : [""] + DryRunPrinter.sentText(sent)
        try await offPool { write(lines) }
        let folded = counts[.superseded, default: 0]
        let unsent = [OutboxRecord.State.skipped, .dead, .muted, .dropped].reduce(0) { $0 + counts[$1, default: 0] }
        warn(
            "dry-run: \(recorded) transitions recorded; \(sent.count) notifications would be sent (\(folded) folded, \(unsent) not sent)"
        )
        if !QuakeRunner(rules: rules).isEmpty || !TripRunner(rules: rules).isEmpty {
            warn("dry-run: quake and trip rules are not replayed into what would be sent")
        }
    }
}
