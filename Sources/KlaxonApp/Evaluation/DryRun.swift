import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore

/// `klaxon dry-run`: replays readings in time order through the same engine `evaluate` uses, from a
/// clean state, and returns the transitions it would produce. Never writes, never delivers. Suspect
/// readings (`Plausibility`) are skipped, as `evaluate` skips them.
///
/// Readings files are streamed: memory holds one session per watched series and the transitions,
/// not the readings. A series whose readings are out of order in the files is replayed again, sorted,
/// in a second pass that holds only that series' readings.
public struct DryRun: Sendable {
    public struct Result: Sendable {
        public var transitions: [Transition] = []
        public var readings = 0
        public var rejected = 0
        /// Readings of the files skipped as suspect (counted in `readings` too).
        public var suspect = 0
    }

    public let engine: RuleEngine
    public var from: Int64?
    public var to: Int64?

    public init(
        rules: [Rule], from: Int64? = nil, to: Int64? = nil, stations: [String: StationInfo] = [:],
        floods: [String: FloodCategories] = [:]
    ) {
        engine = RuleEngine(rules: rules, stations: stations, floods: floods)
        self.from = from
        self.to = to
        wantsNowCast = rules.contains {
            if case .series(let kind) = $0.kind.family { return kind.metric.hasSuffix(NowCastSeries.suffix) }
            return false
        }
    }

    /// A rule watches a derived NowCast series: the replay derives them from the files' PM
    /// concentrations, as the stores do (`NowCastSeries`).
    let wantsNowCast: Bool

    /// Sessions by series, with a one-entry cache for files grouped by series, and a guess for files
    /// interleaved by time (each time's readings of every series, then the next time's: the series
    /// come in the same order at every time), both tried before hashing the key.
    struct Sessions {
        var index: [SeriesKey: Int] = [:]
        var sessions: [SeriesSession] = []
        var lastKey: SeriesKey? = nil
        var lastIndex = -1
        /// Per session: the session looked up right after it the last time (-1: none yet).
        var next: [Int] = []

        /// The session index for a series (-1 when no rule watches it).
        mutating func lookup(_ key: SeriesKey, unit: String?, engine: RuleEngine) -> Int {
            if let lastKey, lastKey == key { return lastIndex }
            let previous = lastIndex
            if previous >= 0, previous < next.count {
                let guess = next[previous]
                if guess >= 0, sessions[guess].series == key {
                    lastKey = key
                    lastIndex = guess
                    return guess
                }
            }
            let i: Int
            if let known = index[key] {
                i = known
            } else if let s = engine.session(for: key, unit: unit) {
                sessions.append(s)
                i = sessions.count - 1
                index[key] = i
            } else {
                i = -1
                index[key] = -1
            }
            if i >= 0 {
                while next.count <= i { next.append(-1) }
                if previous >= 0, previous < next.count { next[previous] = i }
            }
            lastKey = key
            lastIndex = i
            return i
        }
    }

    func inRange(_ t: Int64) -> Bool { (from.map { t >= $0 } ?? true) && (to.map { t <= $0 } ?? true) }

    /// Replays readings files; the transitions in output order.
    public func run(files: [String], report: (String) -> Void = printError) throws -> Result {
        var all: [Transition] = []
        var result = try run(
            files: files, report: report, emit: { all.append($0) },
            discard: { series in all.removeAll { series.contains(SeriesKey(station: $0.station, metric: $0.metric)) } })
        result.transitions = all.sorted(by: Transition.outputOrder)
        return result
    }

    /// Replays readings files, handing each transition to `emit` as it is made (in no particular
    /// order: `DryRunOutput` orders them). Memory holds one session per watched series and a batch of
    /// transitions, never all of them. A series found out of order is replayed again, sorted: before
    /// its second replay, `discard` is told to forget what it was handed for that series.
    public func run(
        files: [String], report: (String) -> Void = printError, emit: (Transition) throws -> Void,
        discard: (Set<SeriesKey>) -> Void
    ) throws -> Result {
        var result = Result()
        var sessions = Sessions()
        var out: [Transition] = []
        var emitError: (any Error)? = nil
        /// Hands over what the engine made, in batches.
        func drain() {
            guard emitError == nil else { return out.removeAll(keepingCapacity: true) }
            do {
                for t in out { try emit(t) }
            } catch {
                emitError = error
            }
            out.removeAll(keepingCapacity: true)
        }
        var disordered: Set<SeriesKey> = []
        var maxTime = Int64.min
        var check = Plausibility.SuspectCheck()
        var concentrations: [Reading] = []
        for path in files {
            var rejections = RejectionReport(path: path)
            defer {
                result.rejected += rejections.count
                let lines = rejections.closing(
                    look: { PayloadLook.of(path: path) },
                    advice: { look in
                        guard let format = look.format, format != .readings else { return nil }
                        return "it looks like \(look.description): load it with `klaxon ingest --format "
                            + "\(format.rawValue)`, then replay it with `dry-run --db`"
                    })
                for line in lines { report(line) }
            }
            try ReadingsFiles.streamPrefetching(path: path) { row in
                switch row {
                case .rejected(let line, let reason):
                    if let message = rejections.add(line: line, reason: reason) { report(message) }
                case .reading(let r, _):
                    guard inRange(r.time) else { return }
                    result.readings += 1
                    maxTime = max(maxTime, r.time)
                    if wantsNowCast, NowCastSeries.isConcentration(r) { concentrations.append(r) }
                    let i = sessions.lookup(r.series, unit: r.unit, engine: engine)
                    guard i >= 0, !sessions.sessions[i].disordered else { return }
                    if check.isSuspect(r) {
                        result.suspect += 1
                        return
                    }
                    if let last = sessions.sessions[i].lastTime, r.time <= last {
                        sessions.sessions[i].disordered = true
                        disordered.insert(r.series)
                        return
                    }
                    engine.step(&sessions.sessions[i], time: r.time, value: r.value, into: &out)
                    if out.count >= 4096 { drain() }
                }
            }
        }
        if !disordered.isEmpty {
            // Second pass: only the out-of-order series, sorted; a repeated time keeps the last value (as
            // ingest would). Their first-pass transitions were held back (the engine stops stepping a
            // series at its first out-of-order reading, so those few are dropped here).
            out.removeAll { disordered.contains(SeriesKey(station: $0.station, metric: $0.metric)) }
            discard(disordered)
            var held: [SeriesKey: [(time: Int64, order: Int, value: Double, unit: String?)]] = [:]
            var order = 0
            for path in files {
                try ReadingsFiles.stream(path: path) { row in
                    guard case .reading(let r, _) = row, inRange(r.time), disordered.contains(r.series),
                        !check.isSuspect(r)
                    else { return }
                    order += 1
                    held[r.series, default: []].append((r.time, order, r.value, r.unit))
                }
            }
            for (key, var readings) in held {
                readings.sort { ($0.time, $0.order) < ($1.time, $1.order) }
                guard var s = engine.session(for: key, unit: readings.first?.unit) else { continue }
                for (k, r) in readings.enumerated() where k + 1 == readings.count || readings[k + 1].time != r.time {
                    engine.step(&s, time: r.time, value: r.value, into: &out)
                }
                sessions.sessions[sessions.index[key]!] = s
            }
        }
        // The NowCast series of the files' PM concentrations, each in time order (`NowCastSeries`).
        if !concentrations.isEmpty {
            var derived: [SeriesKey: [Reading]] = [:]
            for r in NowCastSeries.derive(concentrations, stored: [:]) { derived[r.series, default: []].append(r) }
            for (key, readings) in derived {
                guard var s = engine.session(for: key, unit: readings.first?.unit) else { continue }
                for r in readings where inRange(r.time) { engine.step(&s, time: r.time, value: r.value, into: &out) }
                if let i = sessions.index[key], i >= 0 {
                    sessions.sessions[i] = s
                } else {
                    sessions.sessions.append(s)
                    sessions.index[key] = sessions.sessions.count - 1
                }
            }
        }
        finish(&sessions, end: to ?? maxTime, into: &out)
        drain()
        if let emitError { throw emitError }
        return result
    }

    /// Replays a store's readings (read-only).
    public func run(store: any ReadingScans) async throws -> Result {
        var result = Result()
        var sessions = Sessions()
        var out: [Transition] = []
        var maxTime = Int64.min
        try await store.forEachReading(from: from, to: to) { key, unit, readings in
            result.readings += readings.count
            maxTime = max(maxTime, readings.last?.time ?? maxTime)
            let i = sessions.lookup(key, unit: unit, engine: engine)
            guard i >= 0 else { return }
            for r in readings { engine.step(&sessions.sessions[i], time: r.time, value: r.value, into: &out) }
        }
        finish(&sessions, end: to ?? maxTime, into: &out)
        result.transitions = out.sorted(by: Transition.outputOrder)
        return result
    }

    /// Replays quake event versions (oldest `updated` first) through the quake rules, from a clean
    /// state, as `evaluate` would have seen them arrive: a revision is an update, never a second
    /// new alert. `key` is the stored event key, or nil to merge here as the store would
    /// (`QuakeIndex`: by the events' own ids, never by a shared third id alone). The runner
    /// is `evaluate`'s own; only where announcements are kept differs.
    public func replay(quakes versions: [(key: String?, event: QuakeEvent)]) -> [Transition] {
        let runner = QuakeRunner(rules: engine.rules, from: from, to: to)
        guard !runner.isEmpty else { return [] }
        var index = QuakeIndex()
        let keyed = versions.sorted(by: { ($0.event.updated, $0.event.id) < ($1.event.updated, $1.event.id) }).map {
            given, e in (key: given ?? index.add(e).key ?? e.id, event: e)
        }
        var announced: [String: [String: String]] = [:]
        return EventRounds.quakes(keyed, runner: runner, announced: &announced).transitions
    }

    /// Trip-packing rules over stored trips and forecasts, from a clean state: what each rule would
    /// announce now (the lists as ready, and the alerts in force). `now` sets "today". The runner is
    /// `evaluate`'s own.
    public func replay(trips store: any TripStore & WeatherStore & AirForecastStore, now: Int64) async throws
        -> [Transition]
    {
        let runner = TripRunner(rules: engine.rules)
        guard !runner.isEmpty else { return [] }
        let today = TripRunner.today(now)
        var inputs: [EventRounds.TripInput] = []
        let trips = try await store.trips(owner: nil) + runner.watchedPlaces(today: today)
        for trip in trips where TripRunner.isAhead(trip, today: today) {
            inputs.append(
                EventRounds.TripInput(
                    trip: trip, weather: try await store.weather(for: trip), alerts: try await store.alerts(for: trip),
                    air: try await store.airDays(for: trip)))
        }
        var announced: [TripKey: [String: String]] = [:]
        return EventRounds.trips(inputs, runner: runner, now: now, announced: &announced).transitions
    }

    /// Lets time run to the end of the replay, so a series that went quiet is seen as stale.
    func finish(_ sessions: inout Sessions, end: Int64, into out: inout [Transition]) {
        guard end != Int64.min else { return }
        for i in sessions.sessions.indices {
            engine.advance(&sessions.sessions[i], to: end, into: &out)
        }
    }
}

/// Prints dry-run results.
public enum DryRunPrinter {
    /// One JSON object per transition, keys in the documented order.
    public static func json(_ transitions: [Transition], renderer: MessageRenderer, explain: Bool) -> [String] {
        transitions.map { StdoutNotifier.jsonLine($0, message: renderer.render($0), explain: explain, details: false) }
    }

    /// One row of the table.
    static func cells(_ t: Transition, renderer: MessageRenderer) -> [String] {
        let level: String
        switch (t.fromLevel, t.level) {
        case (let f?, let l?): level = "\(f)→\(l)"
        case (nil, let l?): level = l
        case (let f?, nil): level = "\(f)→"
        default: level = "-"
        }
        return [
            Timestamp.format(t.at), t.rule, t.station, t.metric, t.state.rawValue, level,
            t.value.map(formatValue) ?? "-", renderer.render(t),
        ]
    }

    /// A readable table; with `explain`, a `why:` line under each row.
    public static func text(_ transitions: [Transition], renderer: MessageRenderer, explain: Bool) -> [String] {
        guard !transitions.isEmpty else { return ["no transitions"] }
        let header = ["AT", "RULE", "STATION", "METRIC", "STATE", "LEVEL", "VALUE", "MESSAGE"]
        let rows: [[String]] = transitions.map { cells($0, renderer: renderer) }
        var widths = header.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, c in
                i == cells.count - 1 ? c : c + String(repeating: " ", count: widths[i] - c.count)
            }.joined(separator: "  ")
        }
        var out = [line(header)]
        for (row, t) in zip(rows, transitions) {
            out.append(line(row))
            if explain {
                out.append("    why: \(t.explanation)")
                if !t.details.isEmpty { out.append("    engine: \(t.details)") }
            }
        }
        return out
    }
}

extension DryRunPrinter {
    /// What would be sent, per receiver, each notification in time order: one row per alert, its
    /// headline as chat shows it; a notification's further alerts under its first.
    public static func sentText(_ sent: [NotifyReplay.Sent]) -> [String] {
        guard !sent.isEmpty else { return ["what would be sent: nothing"] }
        let header = ["AT", "RECEIVER", "STATUS", "ALERT"]
        var rows: [[String]] = []
        for s in byReceiver(sent) {
            let n = s.notification
            for (i, a) in n.alerts.enumerated() {
                let title = TerminalText.safe(WebhookPayloads.title(a))
                rows.append(
                    i == 0
                        ? [Timestamp.format(s.at / 1000), TerminalText.safe(n.receiver), n.status, title]
                        : ["", "", "", title])
            }
        }
        var widths = header.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, c in
                i == cells.count - 1 ? c : c + String(repeating: " ", count: widths[i] - c.count)
            }.joined(separator: "  ")
        }
        return ["what would be sent:", line(header)] + rows.map(line)
    }

    /// One JSON object per notification, after the transitions' lines: `"type":"notification"`
    /// (transition lines have no `type`), `at`, `receiver`, `status` and its `alerts`.
    public static func sentJSON(_ sent: [NotifyReplay.Sent]) -> [String] {
        byReceiver(sent).map { s in
            let n = s.notification
            let alerts = n.alerts.map { a in
                let t = a.transition
                return "{\"rule\":\(JSONText.string(t.rule)),\"station\":\(JSONText.string(t.station)),"
                    + "\"metric\":\(JSONText.string(t.metric)),\"state\":\"\(t.state.rawValue)\","
                    + "\"title\":\(JSONText.string(WebhookPayloads.title(a))),\"message\":\(JSONText.string(a.message))}"
            }
            return "{\"type\":\"notification\",\"at\":\"\(Timestamp.format(s.at / 1000))\","
                + "\"receiver\":\(JSONText.string(n.receiver)),\"status\":\"\(n.status)\","
                + "\"alerts\":[\(alerts.joined(separator: ","))]}"
        }
    }

    /// Receivers in name order, each one's notifications in the order they went out.
    static func byReceiver(_ sent: [NotifyReplay.Sent]) -> [NotifyReplay.Sent] {
        sent.enumerated().sorted {
            ($0.element.notification.receiver, $0.element.at, $0.offset)
                < ($1.element.notification.receiver, $1.element.at, $1.offset)
        }.map(\.element)
    }
}
