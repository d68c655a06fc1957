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

    public init(
        rules: [String], readings: [String], events: [String], db: String?, from: Int64?, to: Int64?,
        format: StdoutNotifier.Format, explain: Bool, render: String?, config: String?
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
    }

    /// Runs the replay; returns the exit code (1 when rows were rejected).
    public func run() async throws -> Int32 {
        let clock = ContinuousClock.now
        let cfg = try config.map { try Config.load(path: $0) }
        let ruleList = try RuleLoader.load(paths: !rules.isEmpty ? rules : cfg?.rules ?? ["Rules"])
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
            var stations: [String: StationInfo] = [:]
            var floods: [String: FloodCategories] = [:]
            if let context, ruleList.contains(where: { $0.kind is LevelsRule || $0.kind is RateRule }) {
                stations = try await context.stationInfos()
                floods = try await context.floodCategories()
                for line in try await WaterContext.missingCategories(rules: ruleList, store: context) {
                    printError("warning: \(line)")
                }
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
                // The output renders and spills on a third thread meanwhile (parse, evaluate, render).
                result = try await offPool {
                    output.beginBackground()
                    let replay = Swift.Result {
                        try dry.run(files: files, emit: { try output.add($0) }, discard: { output.discard($0) })
                    }
                    try output.endBackground()
                    return try replay.get()
                }
            } else {
                let files = readings
                result = try await offPool { try dry.run(files: files) }
            }
            // Trip-packing rules: the stored trips and forecasts, as of --to (default now).
            if let source, !TripRunner(rules: ruleList).isEmpty {
                let trips = try await dry.replay(
                    trips: source, now: to ?? Int64(Date().timeIntervalSince1970))
                result.transitions = (result.transitions + trips).sorted(by: Transition.outputOrder)
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
            if let previewer, let render {
                // The exact payloads, one per transition, as the receiver would get them.
                for (i, t) in result.transitions.enumerated() {
                    // As the dispatcher would build it: the links, the chart and the buttons show.
                    let n = AlertNotification(
                        key: "dry-run-\(i + 1)", receiver: render,
                        alerts: [NotifiedAlert(transition: t, message: renderer.render(t), id: Int64(i + 1))],
                        externalURL: cfg?.externalURL ?? "", chatActions: cfg.flatMap { ChatWiring.signer($0) })
                    print(
                        TerminalText.safe(
                            "--- \(i + 1): \(t.rule) \(t.station) \(t.state.rawValue) at \(Timestamp.format(t.at)) → \(render)"
                        ))
                    print(try previewer.render(n))
                }
                printError(
                    "dry-run: \(result.readings) readings replayed, \(result.transitions.count) payloads rendered for \(render)"
                )
                return result.rejected > 0 ? 1 : 0
            }
            for t in result.transitions { try output.add(t) }
            let printed = try await offPool {
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
            printError(summary)
            if let cfg {
                try await whatWouldBeSent(
                    cfg, rules: ruleList, dry: dry, source: source, stations: stations, floods: floods,
                    recorded: printed)
            }
            return result.rejected > 0 ? 1 : 0
        }
    }

    /// With a config: the readings replayed again, as if live, through the store and the dispatcher
    /// (`NotifyReplay`), and what each receiver would get printed after the transitions.
    func whatWouldBeSent(
        _ cfg: Config, rules: [Rule], dry: DryRun, source: (any Store)?, stations: [String: StationInfo],
        floods: [String: FloodCategories], recorded: Int
    ) async throws {
        var readings: [Reading] = []
        if let source {
            try await source.forEachReading(from: from, to: to) { key, unit, rows in
                for r in rows {
                    readings.append(
                        Reading(station: key.station, metric: key.metric, time: r.time, value: r.value, unit: unit))
                }
            }
        } else {
            let files = self.readings
            readings = try await offPool {
                var out: [Reading] = []
                for path in files {
                    try ReadingsFiles.stream(path: path) { row in
                        if case .reading(let r, _) = row, dry.inRange(r.time) { out.append(r) }
                    }
                }
                return out
            }
        }
        var settings = Dispatcher.Settings()
        settings.fallbackReceiver = cfg.fallbackReceiver
        settings.externalURL = cfg.externalURL ?? ""
        settings.chatActions = ChatWiring.signer(cfg)
        let (sent, counts) = try await NotifyReplay.with(
            rules: rules, routing: cfg.routing, receivers: cfg.receivers.map(\.name), stations: stations,
            floods: floods, settings: settings
        ) { replay in
            (try await replay.replay(readings, end: to), try await replay.outboxCounts())
        }
        let lines = format == .json ? DryRunPrinter.sentJSON(sent) : [""] + DryRunPrinter.sentText(sent)
        try await offPool {
            let out = BufferedStandardOutput()
            for line in lines { out.line(line) }
            out.flush()
        }
        let folded = counts[.superseded, default: 0]
        let unsent = [OutboxRecord.State.skipped, .dead, .muted, .dropped].reduce(0) { $0 + counts[$1, default: 0] }
        printError(
            "dry-run: \(recorded) transitions recorded; \(sent.count) notifications would be sent (\(folded) folded, \(unsent) not sent)"
        )
        if !QuakeRunner(rules: rules).isEmpty || !TripRunner(rules: rules).isEmpty {
            printError("dry-run: quake and trip rules are not replayed into what would be sent")
        }
    }
}
