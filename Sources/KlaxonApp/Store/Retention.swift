import Foundation
import KlaxonCore
import KlaxonStore
import Logging
import ServiceLifecycle
import Yams

/// `retention:` in klaxon.yaml: how long each kind of history is kept (seconds; nil keeps it
/// forever). The daemon prunes the rest every ten minutes; `klaxon prune` does it by hand.
public struct Retention: Sendable, Equatable {
    /// Readings: a season of river history for charts and `klaxon dry-run --db`.
    public var readings: Int64? = 90 * 86_400
    /// The transition log (what fired and resolved, when): a year, to compare with last year's floods.
    public var transitions: Int64? = 365 * 86_400
    /// Outbox rows sent, muted or dropped: a month of "was this delivered?".
    public var delivered: Int64? = 30 * 86_400
    /// Outbox rows given up on: a season to notice and `klaxon outbox retry` them.
    public var dead: Int64? = 90 * 86_400
    /// Daily forecasts, by the day they are for: two weeks after that day.
    public var forecasts: Int64? = 14 * 86_400
    /// Older versions of quake events (the newest of each event is always kept).
    public var quakeRevisions: Int64? = 90 * 86_400
    /// River forecast issuances, by when issued (the latest of each gauge series is always kept): a
    /// year, so `dry-run --lead-time` can measure last year's floods.
    public var forecastIssuances: Int64? = 365 * 86_400

    public init() {}

    /// Everything kept forever.
    public static let forever: Retention = {
        var r = Retention()
        for kind in Retention.kinds { r[kind.kind] = nil }
        return r
    }()

    /// Config keys, with the kind each one sets.
    public static let kinds: [(key: String, kind: HistoryKind)] = [
        ("readings", .readings), ("transitions", .transitions), ("delivered", .delivered), ("dead", .dead),
        ("forecasts", .forecasts), ("quake_revisions", .quakeRevisions), ("forecast_issuances", .forecastIssuances),
    ]

    /// The shortest retention accepted: shorter is more often a slip than a wish (and a delivered row
    /// younger than a route's group_interval still times the group's next notification).
    public static let minimum: Int64 = 86_400

    public subscript(_ kind: HistoryKind) -> Int64? {
        get {
            switch kind {
            case .readings, .ingestLog: readings
            case .transitions: transitions
            case .delivered: delivered
            case .dead: dead
            case .forecasts, .airForecasts: forecasts
            case .quakeRevisions: quakeRevisions
            case .forecastIssuances: forecastIssuances
            }
        }
        set {
            switch kind {
            case .readings, .ingestLog: readings = newValue
            case .transitions: transitions = newValue
            case .delivered: delivered = newValue
            case .dead: dead = newValue
            case .forecasts, .airForecasts: forecasts = newValue
            case .quakeRevisions: quakeRevisions = newValue
            case .forecastIssuances: forecastIssuances = newValue
            }
        }
    }

    /// Whether anything is pruned at all.
    public var prunesAnything: Bool { Self.kinds.contains { self[$0.kind] != nil } }

    /// The store's plan as of `now` (seconds), keeping what `rules` look back over.
    public func plan(now: Int64, rules: [Rule], batch: Int = 5_000) -> RetentionPlan {
        var keep: [HistoryKind: Int64] = [:]
        for (_, kind) in Self.kinds { if let k = self[kind] { keep[kind] = k } }
        return RetentionPlan(now: now, keep: keep, lookBack: Self.lookBack(rules), batch: batch)
    }

    /// Seconds of readings the rules need before a series' newest reading (rate windows, flood trends).
    public static func lookBack(_ rules: [Rule]) -> Int64 {
        rules.map(\.kind.historySpan).max() ?? 0
    }

    /// `90d`, or `forever`.
    public static func describe(_ seconds: Int64?) -> String {
        seconds.map { DurationText.format($0) } ?? "forever"
    }
}

extension ConfigReader {
    /// `retention: {readings: 90d, transitions: forever, …}`: each a duration of at least a day, or
    /// `forever` (also `0`) to keep that kind for good.
    func retention(_ node: Node) -> Retention {
        var out = Retention()
        guard var m = file.map(node, what: "retention") else { return out }
        for (key, kind) in Retention.kinds {
            guard let n = m.value(key) else { continue }
            let what = "retention.\(key)"
            if let s = n.scalar?.string, s == "forever" || s == "0" {
                out[kind] = nil
                continue
            }
            guard let d = file.duration(n, what: what) else { continue }
            if d < Retention.minimum {
                file.error(n, "\(what) must be at least 1d, or forever, not \(YAMLFile.show(n))")
            } else {
                out[kind] = d
            }
        }
        m.rejectUnknown(known: Retention.kinds.map(\.key), what: "retention")
        return out
    }
}

/// Pruning by hand (`klaxon prune`) and by the daemon.
public enum Prune {
    /// Prunes by the plan in bounded transactions, yielding (and honouring cancellation) between them.
    public static func run(store: any RetentionStore, plan: RetentionPlan) async throws -> PruneCounts {
        try await store.prune(plan) {
            await Task.yield()
            try Task.checkCancellation()
        }
    }

    /// `readings 120, transitions 3` (kinds with nothing removed left out), or `nothing`.
    public static func summary(_ counts: PruneCounts) -> String {
        let parts = HistoryKind.allCases.compactMap { k in counts[k] > 0 ? "\(k.rawValue) \(counts[k])" : nil }
        return parts.isEmpty ? "nothing" : parts.joined(separator: ", ")
    }
}

extension Daemon {
    /// One prune pass as of `now` (the daemon's clock by default), logged when it removed anything.
    @discardableResult
    public func prune(now: Int64? = nil) async throws -> PruneCounts {
        let plan = config.retention.plan(now: now ?? clock.now(), rules: rules)
        let removed = try await Prune.run(store: store, plan: plan)
        if removed.total > 0 {
            var metadata: Logger.Metadata = [:]
            for kind in HistoryKind.allCases where removed[kind] > 0 { metadata[kind.rawValue] = "\(removed[kind])" }
            logger.info("pruned old history", metadata: metadata)
        }
        return removed
    }
}

/// Prunes history past its retention shortly after start and every ten minutes (of the daemon's
/// clock, never more often than every 5 s of real time), a bounded transaction at a time. A store
/// error waits and retries like every service; a shutdown cancels it between transactions.
struct PrunerService: Service {
    let daemon: Daemon
    var firstAfter: Double = 30
    var every: Double = 600

    func run() async throws {
        try await untilGracefulShutdown {
            try await Task.sleep(for: .seconds(max(0.1, firstAfter)))
            // One instance prunes at a time (several daemons on one PostgreSQL database).
            await daemon.serve(duty: "pruner") {
                while !Task.isCancelled {
                    try await daemon.health.persist("pruner", logger: daemon.logger) {
                        _ = try await daemon.prune()
                    }
                    try await Task.sleep(for: .seconds(max(5, daemon.clock.wallSeconds(every))))
                }
            }
        }
    }
}
