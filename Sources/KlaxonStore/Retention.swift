import Foundation
import KlaxonCore

/// A kind of history that retention prunes.
public enum HistoryKind: String, CaseIterable, Sendable, Hashable {
    /// Outbox rows sent, muted or dropped.
    case delivered
    /// Outbox rows given up on.
    case dead
    case transitions
    case readings
    /// Evaluated ingest-log entries, folded into one per series and source (their sums are kept).
    /// Pruned with readings.
    case ingestLog = "ingest_log"
    case forecasts
    /// Older versions of quake events (the newest version of each event is kept).
    case quakeRevisions = "quake_revisions"
    /// River forecast issuances, by when they were issued (the latest of each gauge series is kept).
    case forecastIssuances = "forecast_issuances"
    /// AirNow air-quality forecasts, by the day they are for. Pruned with `forecasts`.
    case airForecasts = "air_forecasts"

    /// The order a pass works in: outbox rows first, so the transitions they held can go after them.
    static let passOrder: [HistoryKind] = [
        .delivered, .dead, .transitions, .readings, .ingestLog, .forecasts, .quakeRevisions, .forecastIssuances,
        .airForecasts,
    ]
}

/// What to prune: how long each kind of history is kept, as of when.
public struct RetentionPlan: Sendable, Equatable {
    /// Seconds since the epoch.
    public var now: Int64
    /// Seconds each kind is kept; a kind absent is kept forever. `ingestLog` follows `readings`,
    /// `airForecasts` follows `forecasts`.
    public var keep: [HistoryKind: Int64]
    /// Seconds of readings the rules look back over (rate windows, flood trends): a series keeps at
    /// least this much before its newest reading, whatever its age, so pruning never changes an
    /// evaluation. A series' newest reading is always kept.
    public var lookBack: Int64
    /// The most rows one write transaction removes.
    public var batch: Int

    public init(now: Int64, keep: [HistoryKind: Int64], lookBack: Int64 = 0, batch: Int = 5_000) {
        self.now = now
        self.keep = keep
        self.lookBack = max(0, lookBack)
        self.batch = max(1, batch)
    }

    /// Rows of `kind` older than this (seconds) may go; nil: the kind is kept forever.
    public func cutoff(_ kind: HistoryKind) -> Int64? {
        let governing: HistoryKind =
            switch kind {
            case .ingestLog: .readings
            case .airForecasts: .forecasts
            default: kind
            }
        guard let k = keep[governing] else { return nil }
        return now.subtractingClamped(max(0, k))
    }
}

/// Rows removed (or that would be), per kind.
public struct PruneCounts: Sendable, Equatable {
    public var removed: [HistoryKind: Int] = [:]

    public init(_ removed: [HistoryKind: Int] = [:]) { self.removed = removed }

    public subscript(_ kind: HistoryKind) -> Int {
        get { removed[kind] ?? 0 }
        set { removed[kind] = newValue }
    }

    public var total: Int { removed.values.reduce(0, +) }

    public mutating func add(_ other: PruneCounts) {
        for (k, v) in other.removed { self[k] += v }
    }
}

/// Where a prune pass stands between its transactions. Start from `.start`; done when `isDone`.
public struct PruneCursor: Sendable, Equatable {
    /// The index in `steps`; `a`, `b` and `c` are the backend's place within the step.
    public var step: Int
    public var a: Int64
    public var b: Int64
    public var c: Int64

    /// A place within a step (another backend's).
    public init(step: Int, a: Int64, b: Int64, c: Int64) {
        self.step = step
        self.a = a
        self.b = b
        self.c = c
    }

    public static let start = PruneCursor(step: 0, a: .min, b: .min, c: 0)
    public var isDone: Bool { step >= PruneCursor.steps.count }

    /// The pass's steps: outbox states one by one, then the other kinds.
    public static let steps: [(kind: HistoryKind, state: String?)] = [
        (.delivered, "sent"), (.delivered, "muted"), (.delivered, "dropped"), (.delivered, "superseded"),
        (.delivered, "skipped"), (.dead, "dead"),
        (.transitions, nil), (.readings, nil), (.ingestLog, nil), (.forecasts, nil), (.quakeRevisions, nil),
        (.forecastIssuances, nil), (.airForecasts, nil),
    ]

    /// The start of the next step.
    public func next() -> PruneCursor { PruneCursor(step: step + 1, a: .min, b: .min, c: 0) }
}

extension RetentionStore {
    /// Prunes everything the plan lets go, one bounded transaction at a time, running `between`
    /// after each (yield, check for cancellation, log). Returns what was removed.
    @discardableResult
    public func prune(_ plan: RetentionPlan, between: () async throws -> Void = { await Task.yield() }) async throws
        -> PruneCounts
    {
        var total = PruneCounts()
        var cursor = PruneCursor.start
        while !cursor.isDone {
            let (removed, next) = try await prune(plan, from: cursor)
            total.add(removed)
            cursor = next
            try await between()
        }
        return total
    }
}

extension RetentionPlan {
    /// `YYYY-MM-DD` (UTC) of a time: forecasts are kept by the day they are for.
    public static func day(_ time: Int64) -> String {
        // Years 0000 to 9999 (and no overflow below).
        let seconds = min(max(time, -62_167_219_200), 253_402_300_799)
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        return String(format: "%04d-%02d-%02d", Int(y), Int(m), Int(d))
    }
}

/// The tables `klaxon migrate-store` copies from one store to another, parents before the tables
/// that refer to them. Both backends have these tables with the same columns. `instances` (the
/// running daemons' leases) is not copied.
public enum StoreTables {
    public static let copied = [
        "stations", "series", "readings", "ingest_log", "meta", "source_state", "gauges", "alert_states",
        "transitions", "outbox", "silences", "acks", "quake_events", "quake_aliases", "quake_revisions",
        "quake_announcements", "trips", "forecasts", "weather_alerts", "trip_announcements", "metric_counts",
        "living_messages", "receiver_budgets", "budget_folds", "watches", "forecast_issuances",
        "forecast_announcements", "air_forecasts",
    ]
}

/// SQL both backends prune with, the same text in both dialects.
public enum RetentionSQL {
    /// The latest transition of every firing alert (reminders, escalations and acks refer to it)
    /// and the firing that opened its episode (the alert's id and start, on the site and in the API).
    public static let firingCTE = """
        WITH latest(tid) AS (
            SELECT max(t.id) FROM alert_states a JOIN transitions t
              ON t.rule = a.rule AND t.station = a.station AND t.metric = a.metric
            WHERE a.status = 'firing' GROUP BY a.rule, a.station, a.metric),
        firing(tid) AS (
            SELECT tid FROM latest
            UNION SELECT coalesce(t.episode, t.id) FROM transitions t JOIN latest l ON t.id = l.tid),
        firing_keys(k) AS (
            SELECT rule || '|' || station || '|' || metric FROM alert_states WHERE status = 'firing')
        """

    /// Outbox rows (alias `o`) of a finished state that may go: old, not of a firing alert's current
    /// transition (escalations and reminders read those), and not the last notification of a firing
    /// alert to a receiver (reminders time themselves from it).
    public static func outboxPrunable(cut: String) -> String {
        """
        o.due_at < \(cut) AND coalesce(o.sent_at, 0) < \(cut)
          AND o.transition_id NOT IN (SELECT tid FROM firing WHERE tid IS NOT NULL)
          AND NOT (o.state = 'sent' AND o.alert IN (SELECT k FROM firing_keys)
            AND o.seq = (SELECT p.seq FROM outbox p WHERE p.alert = o.alert AND p.receiver = o.receiver
                           AND p.state = 'sent' ORDER BY p.sent_at DESC, p.seq DESC LIMIT 1))
        """
    }
}

extension RetentionSQL {
    /// River forecast issuances (alias `f`) that may go: issued before the cut, and not the latest
    /// issuance of their gauge series (the forecast rule and `klaxon gauge --forecast` read it, however
    /// old). `cut` is the dialect's placeholder.
    public static func issuancesPrunable(cut: String) -> String {
        """
        f.issued < \(cut) AND f.issued < (
            SELECT max(k.issued) FROM forecast_issuances k WHERE k.station = f.station AND k.metric = f.metric)
        """
    }
}

/// Alert queries both backends run, the same text in both dialects.
public enum AlertSQL {
    /// Each firing alert's newest transition (one query, not one per alert), selecting `select` of
    /// `transitions t`, in id order.
    public static func firingLatest(select: String) -> String {
        """
        SELECT \(select) FROM transitions t JOIN (
            SELECT max(t.id) AS tid
            FROM alert_states a JOIN transitions t
              ON t.rule = a.rule AND t.station = a.station AND t.metric = a.metric
            WHERE a.status = 'firing'
            GROUP BY a.rule, a.station, a.metric
        ) f ON t.id = f.tid
        ORDER BY t.id
        """
    }
}
