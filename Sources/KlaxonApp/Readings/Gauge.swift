import Foundation
import KlaxonCore
import KlaxonStore

/// `klaxon gauge ID`: what a gauge reads now, its flood categories, and its data over a range —
/// the two questions river people ask most. Works from the store.
///
/// Suspect readings (`Plausibility`) are listed as such and kept out of everything else: the latest
/// value, the flood category, the statistics and the sparkline.
public enum GaugeReport {
    /// Latest value of a series (or a suspect reading, in `Series.suspect`).
    public struct Latest: Codable, Sendable, Equatable {
        public var value: Double
        public var unit: String?
        public var time: String
        public var quality: String?
    }

    /// Statistics over one range.
    public struct Stats: Codable, Sendable, Equatable {
        public var from: String
        public var to: String
        public var count: Int
        public var min: Double
        public var mean: Double
        public var max: Double
        /// The total (for precipitation, which USGS reports per interval).
        public var total: Double
        /// Suspect readings in the range, left out of the figures above.
        public var suspect: Int
    }

    /// Suspect readings of a series over the widest range: how many, and the newest few.
    public struct Suspect: Codable, Sendable, Equatable {
        public var count: Int
        public var newest: [Latest]
    }

    public struct Series: Codable, Sendable, Equatable {
        public var metric: String
        public var unit: String?
        public var latest: Latest?
        /// One entry per asked range (24 h and 7 d by default).
        public var ranges: [Stats]
        /// ▁…█ over the last 24 h (or the asked range), highest value per bucket.
        public var sparkline: String
        /// Nil when the ranges hold no suspect reading.
        public var suspect: Suspect?
    }

    /// Suspect readings listed per series, newest first.
    public static let suspectShown = 5

    public struct Flood: Codable, Sendable, Equatable {
        public var stageUnit: String
        public var flowUnit: String
        /// Defined stage thresholds, lowest category first.
        public var stage: [Level]
        public var flow: [Level]
        /// The category the latest height is in (nil: below action stage).
        public var category: String?
        public var categoryThreshold: Double?
        /// The next category up and its threshold.
        public var next: String?
        public var nextThreshold: Double?

        public struct Level: Codable, Sendable, Equatable {
            public var name: String
            public var at: Double
        }

        enum CodingKeys: String, CodingKey {
            case stageUnit = "stage_unit", flowUnit = "flow_unit", stage, flow, category
            case categoryThreshold = "category_threshold", next, nextThreshold = "next_threshold"
        }
    }

    public struct Report: Codable, Sendable, Equatable {
        public var station: String
        public var name: String?
        public var usgsID: String?
        public var nwsLID: String?
        public var timeZone: String?
        public var latitude: Double?
        public var longitude: Double?
        /// The end of the ranges: the newest reading of the station (or `--until`).
        public var asOf: String?
        public var height: Series?
        public var flood: Flood?
        public var discharge: Series?
        public var precipitation: Series?
        /// Every other series of the station.
        public var other: [Series]

        enum CodingKeys: String, CodingKey {
            case station, name, usgsID = "usgs_id", nwsLID = "nws_lid", timeZone = "time_zone", latitude, longitude
            case asOf = "as_of", height, flood, discharge, precipitation, other
        }
    }

    /// The ranges to report.
    public enum Span: Sendable {
        /// The last 24 h and the last N days, ending at the station's newest reading.
        case days(Int)
        /// One range (`--since`, `--until`; nil until = the newest reading).
        case range(from: Int64, to: Int64?)
    }

    /// Metrics for each part of the report, preferred first (daily values when a station has only those).
    public static let heightMetrics = ["gage_height", "stage", "gage_height.mean"]
    public static let dischargeMetrics = ["discharge", "flow", "discharge.mean"]
    public static let precipitationMetrics = ["precipitation", "precipitation.sum"]

    /// Builds the report for an id a person typed (USGS site, NWS LID, station id); nil when the
    /// store knows nothing by that id.
    public static func build(store: any SeriesReads & StationReads, id: String, span: Span) async throws -> Report? {
        guard let station = try await store.resolveStation(id) else { return nil }
        let info = try await store.stationInfos()[station] ?? StationInfo(id: station)
        let floods = try await store.floodCategories()
        let series = try await store.series(station: station)
        var newest: Int64? = nil
        for s in series {
            if let t = try await store.latest(station: station, metric: s.metric, at: .max, includingSuspect: true)?
                .time
            {
                newest = max(newest ?? t, t)
            }
        }
        var end = newest ?? 0
        // Each range: its start as shown, and the query's exclusive lower bound.
        var ranges: [(shown: Int64, after: Int64, to: Int64)]
        switch span {
        case .days(let n):
            ranges = [(end - 86_400, end - 86_400, end)]
            if n != 1 { ranges.append((end - Int64(n) * 86_400, end - Int64(n) * 86_400, end)) }
        case .range(let from, let to):
            if let to { end = to }
            ranges = [(from, from - 1, end)]
        }
        let sparkFrom: Int64
        if case .range(let from, _) = span { sparkFrom = from - 1 } else { sparkFrom = end - 86_400 }

        func build(_ metric: String, _ unit: String?) async throws -> Series {
            let latest = try await store.latest(station: station, metric: metric, at: end).map {
                Latest(value: $0.value, unit: $0.unit ?? unit, time: Timestamp.format($0.time), quality: $0.quality)
            }
            var stats: [Stats] = []
            for (shown, after, to) in ranges {
                if let s = try await store.summary(station: station, metric: metric, from: after, to: to) {
                    stats.append(
                        Stats(
                            from: Timestamp.format(shown), to: Timestamp.format(to), count: s.count, min: s.min,
                            mean: s.mean, max: s.max, total: s.sum, suspect: s.suspect))
                }
            }
            let widest = ranges.map(\.after).min() ?? end
            let marked = try await store.suspectReadings(
                station: station, metric: metric, from: widest, to: end, limit: suspectShown)
            let newest = marked.newest.map {
                Latest(value: $0.value, unit: $0.unit ?? unit, time: Timestamp.format($0.time), quality: $0.quality)
            }
            let suspect = marked.count == 0 ? nil : Suspect(count: marked.count, newest: newest)
            let spark = await RecentReadings.sparkline(
                of: try store.values(station: station, metric: metric, from: sparkFrom, to: end), from: sparkFrom,
                to: end)
            return Series(
                metric: metric, unit: unit, latest: latest, ranges: stats, sparkline: spark, suspect: suspect)
        }

        var report = Report(
            station: station, name: info.name, usgsID: info.usgsID, nwsLID: info.nwsLID, timeZone: info.timeZone,
            latitude: info.latitude, longitude: info.longitude, asOf: newest == nil ? nil : Timestamp.format(end),
            other: [])
        let names = series.map(\.metric)
        func pick(_ preferred: [String]) -> String? { preferred.first { names.contains($0) } }
        let height = pick(heightMetrics)
        let discharge = pick(dischargeMetrics)
        let precipitation = pick(precipitationMetrics)
        for s in series {
            let built = try await build(s.metric, s.unit)
            switch s.metric {
            case height: report.height = built
            case discharge: report.discharge = built
            case precipitation: report.precipitation = built
            default: report.other.append(built)
            }
        }
        if let f = floods[station] {
            let stage = (f.ladder(forMetric: "gage_height") ?? []).map { Flood.Level(name: $0.name, at: $0.at) }
            let flow = (f.ladder(forMetric: "discharge") ?? []).map { Flood.Level(name: $0.name, at: $0.at) }
            var flood = Flood(stageUnit: f.stageUnit, flowUnit: f.flowUnit, stage: stage, flow: flow)
            if let h = report.height?.latest?.value {
                let i = stage.lastIndex { h >= $0.at }
                flood.category = i.map { stage[$0].name }
                flood.categoryThreshold = i.map { stage[$0].at }
                let n = (i ?? -1) + 1
                if n < stage.count {
                    flood.next = stage[n].name
                    flood.nextThreshold = stage[n].at
                }
            }
            report.flood = flood
        }
        return report
    }

    /// The report as JSON (keys sorted, for scripts).
    public static func json(_ r: Report) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(r)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// The report for people.
    public static func text(_ r: Report) -> String {
        var lines: [String] = []
        lines.append(r.name ?? r.station)
        var ids: [String] = []
        if let u = r.usgsID { ids.append("USGS \(u)") }
        if let l = r.nwsLID { ids.append("NWS \(l)") }
        if ids.isEmpty { ids.append("station \(r.station)") }
        if let tz = r.timeZone { ids.append(tz) }
        if let la = r.latitude, let lo = r.longitude { ids.append("\(formatValue(la)), \(formatValue(lo))") }
        lines.append("  " + ids.joined(separator: " · "))
        func show(_ v: Double, _ unit: String?) -> String {
            let rounded = (v * 100).rounded() / 100
            return unit.map { "\(formatValue(rounded)) \($0)" } ?? formatValue(rounded)
        }
        func latest(_ s: Series) -> String {
            guard let l = s.latest else { return "no reading" }
            let q = l.quality.map { " (\($0))" } ?? ""
            return "\(show(l.value, l.unit)) at \(l.time)\(q)"
        }
        func counted(_ s: Stats) -> String {
            s.suspect == 0
                ? "(\(s.count) readings)" : "(\(s.count) readings; \(s.suspect) suspect left out)"
        }
        func suspect(_ s: Series) {
            guard let x = s.suspect else { return }
            let list = x.newest.map { l in
                "\(show(l.value, l.unit)) at \(l.time)" + (l.quality.map { " (\($0))" } ?? "")
            }
            let more = x.count > x.newest.count ? " and \(x.count - x.newest.count) more" : ""
            lines.append("                 suspect, left out: " + list.joined(separator: " · ") + more)
        }
        func label(_ from: String, _ to: String) -> String {
            guard let f = Timestamp.parse(from), let t = Timestamp.parse(to) else { return "\(from)…\(to)" }
            let d = t - f
            if d == 86_400 { return "24 h" }
            if d % 86_400 == 0 { return "\(d / 86_400) d" }
            return "\(from) … \(to)"
        }
        if let h = r.height {
            var line = "  height         \(latest(h))"
            if let f = r.flood, h.latest != nil {
                if let c = f.category, let at = f.categoryThreshold {
                    line += " — \(LevelsRule.floodTitle(c).uppercased()) (\(show(at, f.stageUnit)))"
                } else if !f.stage.isEmpty {
                    line += " — below flood categories"
                }
            }
            lines.append(line)
            for s in h.ranges {
                lines.append(
                    "                 \(label(s.from, s.to)): min \(show(s.min, nil)) · mean \(show(s.mean, nil)) · max \(show(s.max, h.unit)) \(counted(s))"
                )
            }
            if !h.sparkline.isEmpty { lines.append("                 \(h.sparkline)") }
            suspect(h)
        }
        if let f = r.flood {
            if f.stage.isEmpty && f.flow.isEmpty {
                lines.append("  flood          NWS defines no flood categories for this gauge")
            } else {
                if !f.stage.isEmpty {
                    let list = f.stage.map { "\($0.name) \(formatValue($0.at))" }.joined(separator: " · ")
                    var line = "  flood stages   \(list) \(f.stageUnit)"
                    if let n = f.next, let at = f.nextThreshold { line += "; next: \(n) at \(show(at, f.stageUnit))" }
                    lines.append(line)
                }
                if !f.flow.isEmpty {
                    let list = f.flow.map { "\($0.name) \(formatValue($0.at))" }.joined(separator: " · ")
                    lines.append("  flood flows    \(list) \(f.flowUnit)")
                }
            }
        } else {
            lines.append("  flood          no NWS flood categories stored (add an nwps source, or use --fetch)")
        }
        if let d = r.discharge {
            lines.append("  discharge      \(latest(d))")
            for s in d.ranges {
                lines.append(
                    "                 \(label(s.from, s.to)): min \(show(s.min, nil)) · mean \(show(s.mean, nil)) · max \(show(s.max, d.unit)) \(counted(s))"
                )
            }
            if !d.sparkline.isEmpty { lines.append("                 \(d.sparkline)") }
            suspect(d)
        }
        if let p = r.precipitation {
            let totals = p.ranges.map { "\(label($0.from, $0.to)) \(show($0.total, p.unit))" }
            lines.append("  precipitation  " + (totals.isEmpty ? latest(p) : totals.joined(separator: " · ")))
            suspect(p)
        }
        for o in r.other {
            lines.append(
                "  \(o.metric.padding(toLength: max(13, o.metric.count), withPad: " ", startingAt: 0))  \(latest(o))")
            suspect(o)
        }
        if r.asOf == nil { lines.append("  no readings stored") }
        return lines.joined(separator: "\n")
    }
}
