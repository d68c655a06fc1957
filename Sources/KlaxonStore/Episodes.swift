import Foundation
import KlaxonCore

// Alert episodes and "notify the present", written once for every backend.
//
// An episode is one alert's life from its first firing to its resolve. Its id is the id of the firing
// transition that opened it: the number messages show and `ack` takes, whatever levels the alert
// passes through. Every transition row carries its episode and the episode's start.
//
// What is *sent* is the present, as Alertmanager sends a group's current state: outbox rows of one
// alert to one receiver (and route) that have not gone out yet are folded into the newest (it takes
// their place and keeps the states they stood for as its `path`); data older than the route's
// `notify_max_age` is queued `held` and decided once the evaluation has caught up (`HeldRow`); a
// resolve goes out only to a receiver that heard the alert firing (`Heard`: what the newest row of
// the alert sent to it said).

/// An alert's open episode: the id of the firing transition that opened it, and when it began.
public struct OpenEpisode: Sendable, Equatable {
    public var id: Int64
    public var startedAt: Int64
    /// The opening firing's headline (`Transition.opening`): an email thread's subject.
    public var opening: String?

    public init(id: Int64, startedAt: Int64, opening: String? = nil) {
        self.id = id
        self.startedAt = startedAt
        self.opening = opening
    }

    /// The open episode read from an alert's newest transition (`episode`, `started_at`, `state`,
    /// `extra`): none when that transition was a resolve.
    public static func from(
        episode: Int64?, startedAt: Int64?, state: String, id: Int64, at: Int64, extra: String? = nil
    ) -> OpenEpisode? {
        guard state != TransitionState.resolved.rawValue else { return nil }
        let e = TransitionExtra(json: extra)
        return OpenEpisode(id: episode ?? id, startedAt: startedAt ?? at, opening: e.opening ?? e.headline)
    }
}

/// A state an alert passed through that was folded into a later notification (`OutboxRecord.path`).
public struct PathStep: Codable, Sendable, Equatable {
    public var state: TransitionState
    public var level: String?
    /// The level it left (what a receiver that heard the step before knew).
    public var from: String?
    /// The data time of the transition.
    public var at: Int64
    public var episode: Int64?

    public init(state: TransitionState, level: String?, from: String? = nil, at: Int64, episode: Int64?) {
        self.state = state
        self.level = level
        self.from = from
        self.at = at
        self.episode = episode
    }

    public init(_ r: TransitionRecord) {
        self.init(
            state: TransitionState(rawValue: r.state) ?? .firing, level: r.level, from: r.fromLevel, at: r.at,
            episode: r.episode ?? r.id)
    }

    enum CodingKeys: String, CodingKey {
        case state = "s"
        case level = "l"
        case from = "f"
        case at
        case episode = "e"
    }

    /// The column's text: a JSON array, nil for no steps.
    public static func encode(_ steps: [PathStep]) -> String? {
        guard !steps.isEmpty else { return nil }
        var out = "["
        for (i, s) in steps.enumerated() {
            if i > 0 { out += "," }
            out += "{\"s\":\"\(s.state.rawValue)\""
            if let l = s.level { out += ",\"l\":" + JSONText.string(l) }
            if let f = s.from { out += ",\"f\":" + JSONText.string(f) }
            out += ",\"at\":\(s.at)"
            if let e = s.episode { out += ",\"e\":\(e)" }
            out += "}"
        }
        return out + "]"
    }

    /// The steps of a column's text (none if it is nil or does not decode).
    public static func decode(_ text: String?) -> [PathStep] {
        guard let text, !text.isEmpty else { return [] }
        return (try? decoder.decode([PathStep].self, from: Data(text.utf8))) ?? []
    }

    // One decoder for every row (it is thread-safe): the dispatcher decodes a path per folded row.
    private static let decoder = JSONDecoder()
}

/// What a receiver last heard of an alert: the state of the last notification of it that was sent
/// (`EpisodeSQL.heardJoin`).
public struct Heard: Sendable, Equatable {
    public var episode: Int64
    public var state: TransitionState
    public var level: String?

    public init(episode: Int64, state: TransitionState, level: String?) {
        self.episode = episode
        self.state = state
        self.level = level
    }

    /// Whether the receiver believes the alert is firing: a resolve is news to it only then.
    public var isFiring: Bool { state != .resolved }
}

extension TransitionLog {
    /// Alerts whose open episode the backend must read before `assign` (the newest transition of
    /// each, `OpenEpisode.from`): those whose first transition here is not a firing.
    public var episodeLookups: [AlertKey] {
        var seen: Set<AlertKey> = []
        var out: [AlertKey] = []
        for t in transitions where seen.insert(t.alertKey).inserted {
            if t.state != .firing { out.append(t.alertKey) }
        }
        return out
    }

    /// Numbers the transitions (`ids`, taken in order) and gives each its episode: a firing opens one
    /// under its own id; any other transition belongs to its alert's open episode (`open`, or one
    /// opened earlier here); a resolve closes it. A transition with no open episode (history from
    /// before episodes were kept) opens one of its own.
    public mutating func assign(ids: [Int64], open: [AlertKey: OpenEpisode]) {
        var episodes = Episodes(open: open)
        for i in transitions.indices {
            let episode = episodes.next(transitions[i], id: ids[i])
            records[i].id = ids[i]
            records[i].episode = episode.id
            records[i].startedAt = episode.startedAt
            // Every transition of an episode carries its opening headline (a stable mail subject).
            if let opening = episode.opening, transitions[i].opening != opening {
                transitions[i].opening = opening
                records[i].extra = TransitionExtra(transitions[i]).json
            }
        }
    }
}

/// Alerts' open episodes as transitions are logged one after another (`TransitionLog.assign`).
public struct Episodes: Sendable {
    var current: [AlertKey: OpenEpisode]
    /// Alerts whose open episode was given (or looked up) already.
    var known: Set<AlertKey>

    public init(open: [AlertKey: OpenEpisode] = [:]) {
        current = open
        known = Set(open.keys)
    }

    /// Whether the alert's open episode must be looked up before `next` (`OpenEpisode.from`).
    public func needsLookup(_ t: Transition) -> Bool { t.state != .firing && !known.contains(t.alertKey) }

    /// Tells the open episode looked up for an alert (nil: none).
    public mutating func found(_ key: AlertKey, _ open: OpenEpisode?) {
        known.insert(key)
        current[key] = open
    }

    /// The episode of the transition logged as `id`.
    public mutating func next(_ t: Transition, id: Int64) -> OpenEpisode {
        let key = t.alertKey
        known.insert(key)
        if t.state == .firing || current[key] == nil {
            current[key] = OpenEpisode(id: id, startedAt: t.at, opening: t.headline)
        }
        let episode = current[key]!
        if t.state == .resolved { current[key] = nil }
        return episode
    }
}

/// A row already queued for one of a log's alerts, as `OutboxPlan` needs it: unsent (pending,
/// sending) or held, with its transition's state.
public struct QueuedRow: Sendable {
    public var id: String
    public var alert: String
    public var receiver: String
    public var route: Int?
    public var state: OutboxRecord.State
    public var batch: String?
    public var path: String?
    /// The row's own transition, as a step of a later row's path.
    public var step: PathStep
    /// When it is due (ms).
    public var dueAt: Int64

    public init(
        id: String, alert: String, receiver: String, route: Int?, state: OutboxRecord.State, batch: String?,
        path: String?, step: PathStep, dueAt: Int64
    ) {
        self.dueAt = dueAt
        self.id = id
        self.alert = alert
        self.receiver = receiver
        self.route = route
        self.state = state
        self.batch = batch
        self.path = path
        self.step = step
    }

    /// Not yet in any batch, so a newer row may take its place: waiting for its group's time, or held.
    public var foldable: Bool { batch == nil && (state == .pending || state == .held) }

    var foldKey: String { OutboxPlan.foldKey(alert: alert, receiver: receiver, route: route) }
}

/// The outbox rows a transition log queues: for each alert, receiver and route, one row, of its
/// newest transition, which takes the place of the earlier ones (of this log, and a queued row not
/// yet in a batch) and keeps their states as its `path`. A row whose data is older than its route's
/// `notify_max_age` is queued `held`; an event's (`TransitionLog.events`) is not queued at all.
public struct OutboxPlan: Sendable {
    public struct Row: Sendable {
        /// The transition's index in the log.
        public var index: Int
        public var delivery: PlannedDelivery
        /// The states folded into it (`PathStep.encode`).
        public var path: String?
        public var held: Bool
        /// The due time of the waiting row it took the place of: the new row is due no later, so
        /// an alert that keeps changing is not put off past its group's time again and again.
        public var dueBy: Int64?

        /// Its due time, given the one its group's timing says now.
        public func due(_ timed: Int64) -> Int64 { dueBy.map { min($0, timed) } ?? timed }
    }

    public private(set) var rows: [Row] = []
    /// Ids of queued rows the new ones take the place of.
    public private(set) var folded: [String] = []
    /// Queued rows that stay ahead of the new ones (already in a batch): the claim's order rule.
    public private(set) var ahead: [QueuedRow] = []

    static func foldKey(alert: String, receiver: String, route: Int?) -> String {
        alert + "\u{1F}" + receiver + "\u{1F}" + (route.map(String.init) ?? "-")
    }

    /// The alerts whose `heard` the plan needs (`init`'s): those with a resolve in the log, and
    /// those with a resolve queued.
    public static func heardNeeded(_ log: TransitionLog, queued: [QueuedRow]) -> [String] {
        Array(
            Set(
                log.transitions.filter { $0.state == .resolved }.map(OutboxRecord.alertKey)
                    + queued.filter { $0.step.state == .resolved }.map(\.alert)))
    }

    /// `now`: the evaluation time (seconds), against which data age is measured. `heard`: what each
    /// receiver last heard of the alerts of `heardNeeded` (`QueueClaim.heardKey`). A resolve is news
    /// of its own to a receiver that heard the alert firing (the resolve contract): a later episode's
    /// row does not take its place, queued or in this log (unless its data is older than
    /// `notify_max_age`: a held row tells the present only).
    public init(_ log: TransitionLog, queued: [QueuedRow], now: Int64, heard: [String: Heard] = [:]) {
        func awaited(_ alert: String, _ receiver: String) -> Bool {
            heard[QueueClaim.heardKey(alert: alert, receiver: receiver)]?.isFiring ?? false
        }
        var foldable: [String: QueuedRow] = [:]
        for q in queued {
            let owed = q.state == .pending && q.step.state == .resolved && awaited(q.alert, q.receiver)
            if q.foldable && foldable[q.foldKey] == nil && !owed {
                foldable[q.foldKey] = q
            } else {
                ahead.append(q)
            }
        }
        // The transitions of each key in log order; the last one is queued.
        var order: [String] = []
        var chains: [String: [(index: Int, delivery: PlannedDelivery)]] = [:]
        for i in log.transitions.indices {
            for d in log.deliveries[i] {
                let key = Self.foldKey(
                    alert: OutboxRecord.alertKey(log.transitions[i]), receiver: d.receiver, route: d.route)
                if chains[key] == nil { order.append(key) }
                chains[key, default: []].append((i, d))
            }
        }
        var made: [Row] = []
        for key in order {
            let chain = chains[key]!
            let last = chain.last!
            let stale = last.delivery.isStale(log.transitions[last.index], now: now)
            // An old event is recorded, not sent (and takes no queued row's place): an event never
            // resolves, so as "the present" it would always be news.
            if stale && log.events { continue }
            var steps: [PathStep] = []
            var dueBy: Int64? = nil
            if let q = foldable.removeValue(forKey: key) {
                steps = PathStep.decode(q.path) + [q.step]
                folded.append(q.id)
                if q.state == .pending { dueBy = q.dueAt }
            }
            var owed =
                !log.events && awaited(OutboxRecord.alertKey(log.transitions[last.index]), last.delivery.receiver)
            for link in chain.dropLast() {
                let t = log.transitions[link.index]
                // The resolve its receiver waits for goes as a row of its own, ahead of what follows.
                if owed && t.state == .resolved && !link.delivery.isStale(t, now: now) {
                    made.append(
                        Row(
                            index: link.index, delivery: link.delivery, path: PathStep.encode(steps), held: false,
                            dueBy: dueBy))
                    steps = []
                    owed = false
                    continue
                }
                steps.append(PathStep(log.records[link.index]))
            }
            made.append(
                Row(
                    index: last.index, delivery: last.delivery, path: PathStep.encode(steps),
                    held: stale, dueBy: dueBy))
        }
        // Queue order: by transition, as the log was written.
        rows = made.enumerated().sorted { ($0.element.index, $0.offset) < ($1.element.index, $1.offset) }.map(\.element)
        ahead += foldable.values
    }
}

/// A held row (data older than `notify_max_age`), decided once the evaluation has caught up: it
/// goes out only if it tells the receiver something true now that it has not heard.
public enum HeldRow {
    /// Whether to send it (else it is skipped). `latest`: its transition is its alert's newest (the
    /// present, not a step on the way); `heard`: what the receiver last heard of the alert.
    public static func send(state: TransitionState, level: String?, episode: Int64, latest: Bool, heard: Heard?)
        -> Bool
    {
        guard latest else { return false }
        if state == .resolved { return heard?.isFiring ?? false }
        guard let heard, heard.isFiring, heard.episode == episode else { return true }
        return heard.level != level
    }

    /// Why a held row was not sent (its `last_error`).
    public static func skipReason(latest: Bool) -> String {
        latest
            ? "not sent: its data was older than notify_max_age and told nothing new"
            : "not sent: its data was older than notify_max_age and a later state followed"
    }
}

/// Settling the held rows once the evaluation has caught up, decided once for every backend:
///
///     var settle = HeldSettlement()
///     for row in <EpisodeSQL.held> { settle.add(<its columns>) }
///     <mark settle.send pending, due now or when its group's timing said>; <mark each of settle.skip
///     skipped, with its reason>; <write settle.deltas>
public struct HeldSettlement {
    /// The rows to send.
    public private(set) var send: [String] = []
    /// The rows skipped, each with why (`HeldRow.skipReason`).
    public private(set) var skip: [(id: String, reason: String)] = []
    public private(set) var deltas = MetricDeltas()

    public init() {}

    /// A held row as `EpisodeSQL.held` reads it (`HeldRow.send` decides).
    public mutating func add(id: String, state: String, level: String?, episode: Int64, latest: Bool, heard: Heard?) {
        let state = TransitionState(rawValue: state) ?? .firing
        if HeldRow.send(state: state, level: level, episode: episode, latest: latest, heard: heard) {
            send.append(id)
        } else {
            skip.append((id, HeldRow.skipReason(latest: latest)))
            deltas.add("outbox", OutboxRecord.State.skipped.rawValue)
        }
    }
}

/// The migration both backends run to keep episodes: the same statements in both dialects.
public enum EpisodeSQL {
    /// Gives every logged transition its episode (the newest firing of its alert at or before it)
    /// and the episode's start; open alerts get the id and the true start of the episode they are in.
    public static let backfill = """
        UPDATE transitions SET episode = e.ep FROM (
            SELECT id, coalesce(max(CASE WHEN state = 'firing' THEN id END)
                OVER (PARTITION BY rule, station, metric ORDER BY id ROWS UNBOUNDED PRECEDING), id) AS ep
            FROM transitions) AS e
        WHERE e.id = transitions.id;
        UPDATE transitions SET started_at = f.at FROM transitions AS f WHERE f.id = transitions.episode;
        UPDATE transitions SET started_at = at WHERE started_at IS NULL;
        """

    /// An alert's newest transition, for its open episode (`OpenEpisode.from`); binds rule, station, metric.
    public static let newest =
        "SELECT id, at, state, episode, started_at, extra FROM transitions WHERE rule = $1 AND station = $2 AND metric = $3 ORDER BY id DESC LIMIT 1"

    /// What a receiver last heard of the alert of outbox row `o`: the transition `ht` of the newest
    /// row of that alert sent to that receiver (a walk back along `outbox_by_alert`, no table of its
    /// own to keep: retention keeps a firing alert's last sent row). Selects `heardColumns`.
    public static let heardJoin = heardJoin(when: nil)

    /// `heardJoin` only for the rows that meet `condition` (the others hear nothing): the claim
    /// needs it only for resolves (`Dispatcher`'s present stage).
    public static func heardJoin(when condition: String?) -> String {
        """
        LEFT JOIN transitions ht ON \(condition.map { "(\($0)) AND " } ?? "")ht.id = (
            SELECT h.transition_id FROM outbox h
            WHERE h.alert = o.alert AND h.receiver = o.receiver AND h.state = 'sent'
            ORDER BY h.seq DESC LIMIT 1)
        """
    }

    /// The claim's: what was heard matters only for a resolve.
    public static let heardJoinForResolves = heardJoin(when: "t.state = 'resolved'")
    /// The heard episode, state and level (`Heard.from`), after `heardJoin`.
    public static let heardColumns = "coalesce(ht.episode, ht.id), ht.state, ht.level"

    /// The news silences and quiet hours kept from receivers (`CatchUpQueue.missed`): of the alerts
    /// in `$1` (a list, rendered by `list` as in `heard(list:)`), each alert and receiver whose newest
    /// row is `muted` or `dropped`: alert, receiver, route, that row's transition (episode, state,
    /// level), then `heardColumns`, then when the receiver was last sent anything of the alert (ms).
    public static func missed(list: String) -> String {
        """
        SELECT o.alert, o.receiver, o.route, coalesce(mt.episode, mt.id), mt.state, mt.level, \(heardColumns),
          (SELECT max(s.sent_at) FROM outbox s WHERE s.alert = o.alert AND s.receiver = o.receiver AND s.state = 'sent')
        FROM outbox o JOIN transitions mt ON mt.id = o.transition_id
        \(heardJoin)
        WHERE o.alert \(list) AND o.state IN ('muted', 'dropped')
          AND NOT EXISTS (SELECT 1 FROM outbox n WHERE n.alert = o.alert AND n.receiver = o.receiver AND n.seq > o.seq)
        ORDER BY o.seq
        """
    }

    /// The held rows with what `HeldRow.send` needs: the row, its transition's state, level and
    /// episode, whether it is its alert's newest transition, and what the receiver heard.
    public static let held = """
        SELECT o.id, t.state, t.level, coalesce(t.episode, t.id),
          NOT EXISTS (SELECT 1 FROM transitions x
                      WHERE x.rule = t.rule AND x.station = t.station AND x.metric = t.metric AND x.id > t.id),
          \(heardColumns)
        FROM outbox o JOIN transitions t ON t.id = o.transition_id
        \(heardJoin)
        WHERE o.state = 'held'
        ORDER BY o.seq
        """

    /// What each receiver last heard of the alerts in `$1` (a list), one row per alert and receiver
    /// that was sent anything: alert, receiver, then `heardColumns`. `list` renders the list test
    /// (`IN (SELECT value FROM json_each($1))`, `= ANY($1::text[])`).
    public static func heard(list: String) -> String {
        """
        SELECT o.alert, o.receiver, \(heardColumns)
        FROM (SELECT DISTINCT alert, receiver FROM outbox WHERE alert \(list)) o
        \(heardJoin)
        WHERE ht.id IS NOT NULL
        """
    }
}

/// News a silence or quiet hours kept from a receiver: the newest notification of an alert to it
/// was muted or dropped (`CatchUpQueue.missed`).
public struct MissedNews: Sendable, Equatable {
    public var alert: String
    public var receiver: String
    /// The route of the row not sent.
    public var route: Int?
    /// What the row not sent said.
    public var missed: Heard
    /// What the receiver last heard of the alert (nil: nothing).
    public var heard: Heard?
    /// When the receiver was last sent anything of the alert (ms; nil: never).
    public var lastSentAt: Int64?

    public init(alert: String, receiver: String, route: Int?, missed: Heard, heard: Heard?, lastSentAt: Int64?) {
        self.alert = alert
        self.receiver = receiver
        self.route = route
        self.missed = missed
        self.heard = heard
        self.lastSentAt = lastSentAt
    }

    /// Whether the receiver believes something other than what it missed: another episode, level, or
    /// firing or not (a reminder muted while the receiver knew the state is no news).
    public var isNews: Bool {
        guard let heard else { return true }
        return heard.episode != missed.episode || heard.level != missed.level || heard.isFiring != missed.isFiring
    }
}

extension Heard {
    /// From `EpisodeSQL.heardColumns` (nil when nothing was sent).
    public static func from(episode: Int64?, state: String?, level: String?) -> Heard? {
        guard let episode, let state, let s = TransitionState(rawValue: state) else { return nil }
        return Heard(episode: episode, state: s, level: level)
    }
}

/// One alert episode as the status site shows it: every transition it logged (recorded), and the
/// notifications queued for them with what became of each (sent, folded, held, skipped…).
public struct EpisodeHistory: Sendable {
    public var id: Int64
    public var transitions: [TransitionRecord]
    public var deliveries: [OutboxRecord]

    public init(id: Int64, transitions: [TransitionRecord], deliveries: [OutboxRecord]) {
        self.id = id
        self.transitions = transitions
        self.deliveries = deliveries
    }

    /// The most transitions one page of an episode shows (a flapping alert's episode is long).
    public static let limit = 500

    /// Its transitions, oldest first, at most `limit`, selecting `select` of `transitions` (binds
    /// the episode's id as `$1`).
    public static func transitionsSQL(select: String) -> String {
        """
        SELECT \(select) FROM transitions
        WHERE episode = $1 OR (episode IS NULL AND id = $1)
        ORDER BY id LIMIT \(limit)
        """
    }

    /// The episode an id names: its own, or the episode of the transition with that id (`$1`).
    public static let episodeOf = "SELECT coalesce(episode, id) FROM transitions WHERE id = $1"
}
