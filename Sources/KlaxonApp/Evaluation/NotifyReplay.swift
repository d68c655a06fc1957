import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonSQLite
import KlaxonStore
import Logging
import Synchronization

/// What a team would receive: readings replayed through the real notification path, so the rules
/// of what is sent are written once, in the store and the dispatcher. A scratch SQLite store in a
/// temporary folder records each evaluation as `evaluate` does (transitions, outbox rows, folding,
/// held rows), and a dispatcher on a clock this replay moves sends what falls due to a notifier that
/// keeps it. Nothing leaves the process.
///
/// Each `step` is one evaluation at its `now`: what fell due before it goes out first, each at its
/// due time, and what is due at `now` goes out after it. `flush` lets time run on and returns what
/// was sent since the last flush. Reminders (`repeat_interval`) and escalations are not replayed.
public final class NotifyReplay: Sendable {
    /// One notification as its receiver would get it, and when it went out (ms since the epoch).
    public struct Sent: Sendable {
        public var at: Int64
        public var notification: AlertNotification
    }

    let folder: URL
    let store: SQLiteStore
    let dispatcher: Dispatcher
    let capture: CaptureNotifier
    let clock: ReplayClock
    let rules: [Rule]
    let routing: Routing
    let engine: RuleEngine
    let renderer: MessageRenderer

    /// The most readings written in one transaction; a larger step is written in parts, then
    /// evaluated once.
    static let writeBatch = 50_000

    /// - Parameters:
    ///   - receivers: every receiver name the routing may name: each goes to the replay's notifier.
    ///     A name not listed fails as an unconfigured receiver does.
    ///   - stations, floods: station metadata and NWS flood categories for the rules' messages and
    ///     `levels: nws` (the scratch store holds none).
    ///   - settings: the dispatcher's (`fallback_receiver`, `external_url`).
    public init(
        rules: [Rule], routing: Routing, receivers: [String], stations: [String: StationInfo] = [:],
        floods: [String: FloodCategories] = [:], settings: Dispatcher.Settings = Dispatcher.Settings()
    ) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "klaxon-replay-\(UUID().uuidString)")
        store = try await offPool {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            do {
                return try SQLiteStore.open(path: folder.appendingPathComponent("replay.sqlite").path)
            } catch {
                try? FileManager.default.removeItem(at: folder)
                throw error
            }
        }
        self.folder = folder
        self.rules = rules
        self.routing = routing
        engine = RuleEngine(rules: rules, stations: stations, floods: floods)
        renderer = try MessageRenderer(rules: rules)
        let clock = ReplayClock()
        let capture = CaptureNotifier(clock: clock)
        self.clock = clock
        self.capture = capture
        var notifiers: [String: any Notifier] = [:]
        for name in receivers { notifiers[name] = capture }
        dispatcher = Dispatcher(
            store: store, notifiers: notifiers, routing: routing, settings: settings,
            logger: Logger(label: "klaxon.replay", factory: { _ in SwiftLogNoOpLogHandler() }),
            clock: { clock.now })
    }

    /// Runs `body` with a replay and removes its folder afterwards, whatever happened.
    public static func with<T: Sendable>(
        rules: [Rule], routing: Routing, receivers: [String], stations: [String: StationInfo] = [:],
        floods: [String: FloodCategories] = [:], settings: Dispatcher.Settings = Dispatcher.Settings(),
        _ body: (NotifyReplay) async throws -> T
    ) async throws -> T {
        let replay = try await NotifyReplay(
            rules: rules, routing: routing, receivers: receivers, stations: stations, floods: floods,
            settings: settings)
        do {
            let result = try await body(replay)
            await replay.close()
            return result
        } catch {
            await replay.close()
            throw error
        }
    }

    /// One evaluation at `now` (seconds) of `readings` (none later than `now`): what is due before
    /// `now` is sent first, at its due time; then the readings are stored and evaluated as they would
    /// be live, and what is due at `now` is sent. Returns the transitions recorded, in output order.
    @discardableResult
    public func step(readings: [Reading], at now: Int64) async throws -> [(transition: Transition, message: String)] {
        let ms = now.multipliedClamped(by: 1000)
        try await dispatch(through: ms - 1)
        var start = 0
        while start < readings.count {
            let end = min(readings.count, start + Self.writeBatch)
            try await store.write(SourceBatch(readings: Array(readings[start..<end])), at: now)
            start = end
        }
        let result = try await Evaluate.run(
            store: store, rules: rules, now: now, routing: routing, queuedAt: ms, renderer: renderer, engine: engine)
        try await dispatch(through: ms)
        return result.transitions
    }

    /// Replays readings (in any order) as if live: each evaluation at its readings' time, then time
    /// runs to `end` (seconds; nil: the last reading's time) for stale checks, and past the last
    /// group timer. Returns everything sent.
    ///
    /// It is as if each reading time were one evaluation, but readings that record nothing are
    /// evaluated together with the next ones that do: a pass of the engine alone finds the times at
    /// which transitions are recorded, and each of those ends one evaluation. Of a series' readings
    /// at one time, the last is kept (as ingest keeps it).
    public func replay(_ readings: [Reading], end: Int64? = nil) async throws -> [Sent] {
        // Sorting and the engine's pass are CPU work the size of the readings: off the pool.
        let (kept, ends) = try await offPool { [self] () -> ([Reading], Set<Int64>) in
            let sorted = readings.enumerated().sorted {
                ($0.element.time, $0.element.station, $0.element.metric, $0.offset)
                    < ($1.element.time, $1.element.station, $1.element.metric, $1.offset)
            }.map(\.element)
            var kept: [Reading] = []
            kept.reserveCapacity(sorted.count)
            for (i, r) in sorted.enumerated() {
                if i + 1 < sorted.count, sorted[i + 1].time == r.time, sorted[i + 1].series == r.series { continue }
                kept.append(r)
            }
            return (kept, evaluationTimes(kept))
        }
        var pending: [Reading] = []
        var last: Int64? = nil
        var i = 0
        while i < kept.count {
            let time = kept[i].time
            while i < kept.count && kept[i].time == time {
                pending.append(kept[i])
                i += 1
            }
            if ends.contains(time) {
                try await step(readings: pending, at: time)
                pending = []
                last = time
            }
        }
        if let final = [end, kept.last?.time].compactMap({ $0 }).max(),
            !pending.isEmpty || last.map({ $0 < final }) ?? true
        {
            try await step(readings: pending, at: final)
        }
        return try await flush()
    }

    /// The reading times at which the engine alone records a transition: each ends an evaluation.
    /// `readings` are in time order, one per series and time.
    func evaluationTimes(_ readings: [Reading]) -> Set<Int64> {
        var index: [SeriesKey: Int] = [:]
        var sessions: [SeriesSession] = []
        // Sessions with a rule that reacts to time: time passes for them at every reading time.
        var timed: [Int] = []
        var out: [Transition] = []
        var times: Set<Int64> = []
        // The store skips suspect readings in evaluation: so does this pass.
        var check = Plausibility.SuspectCheck()
        var i = 0
        while i < readings.count {
            let time = readings[i].time
            while i < readings.count && readings[i].time == time {
                let r = readings[i]
                i += 1
                if check.isSuspect(r) { continue }
                var k = index[r.series] ?? -1
                if index[r.series] == nil, let s = engine.session(for: r.series, unit: r.unit) {
                    sessions.append(s)
                    k = sessions.count - 1
                    if s.ruleIndexes.contains(where: { engine.rules[$0].kind.series?.reactsToTime == true }) {
                        timed.append(k)
                    }
                }
                index[r.series] = k
                guard k >= 0 else { continue }
                engine.step(&sessions[k], time: r.time, value: r.value, into: &out)
            }
            for k in timed { engine.advance(&sessions[k], to: time, into: &out) }
            if !out.isEmpty {
                times.insert(time)
                out.removeAll(keepingCapacity: true)
            }
        }
        return times
    }

    /// Lets time run to `until` (seconds; nil: past the last group timer, until nothing is queued)
    /// and returns what was sent since the last flush, in the order it went out.
    public func flush(until: Int64? = nil) async throws -> [Sent] {
        try await dispatch(through: until.map { $0.multipliedClamped(by: 1000) })
        return capture.take()
    }

    /// The outbox's rows by state: `superseded` were folded into a newer notification, `skipped`
    /// were not sent by rule (a resolve nobody heard firing, old data that told nothing new).
    public func outboxCounts() async throws -> [OutboxRecord.State: Int] { try await store.outboxCounts() }

    /// Removes the scratch store's folder.
    public func close() async {
        let folder = self.folder
        _ = try? await offPool { try FileManager.default.removeItem(at: folder) }
    }

    /// Sends what is due up to `limit` (ms; nil: everything queued), each at its due time.
    func dispatch(through limit: Int64?) async throws {
        while let due = try await store.nextDue(), limit.map({ due <= $0 }) ?? true {
            clock.advance(to: due)
            // Nothing claimed although something is due: leave it rather than spin on it.
            guard try await dispatcher.dispatchOnce().batches > 0 else { break }
        }
        if let limit { clock.advance(to: limit) }
    }
}

/// The replay's time (ms since the epoch), moved forward only by the replay.
final class ReplayClock: Sendable {
    private let value = Mutex<Int64>(0)

    var now: Int64 { value.withLock { $0 } }

    func advance(to t: Int64) { value.withLock { $0 = max($0, t) } }
}

/// The replay's notifier: keeps each notification with the time it went out and never fails.
final class CaptureNotifier: Notifier {
    let clock: ReplayClock
    private let sent = Mutex<[(seq: Int, sent: NotifyReplay.Sent)]>([])

    init(clock: ReplayClock) { self.clock = clock }

    func render(_ notification: AlertNotification) throws -> String {
        WebhookPayloads.genericText(notification, groupBy: notification.groupBy ?? [])
    }

    func send(_ notification: AlertNotification) async throws {
        let at = clock.now
        sent.withLock { $0.append(($0.count, NotifyReplay.Sent(at: at, notification: notification))) }
    }

    /// What was sent since the last call: by time, then receiver (receivers send side by side), then
    /// the order each receiver sent in.
    func take() -> [NotifyReplay.Sent] {
        let all = sent.withLock { list -> [(seq: Int, sent: NotifyReplay.Sent)] in
            defer { list = [] }
            return list
        }
        return all.sorted {
            ($0.sent.at, $0.sent.notification.receiver, $0.seq) < ($1.sent.at, $1.sent.notification.receiver, $1.seq)
        }.map(\.sent)
    }
}
