import KlaxonCore

/// How CWMS time series become metrics, so that each time series stays a series of its own.
///
/// A time-series id is `Location.Parameter-SubParameter.Type.Interval.Duration.Version`
/// (`KEYS.Flow-Res Out.Ave.1Hour.1Hour.Rev-Regi`). The location is the station; the metric is:
/// - the base parameter's name for a parameter without a sub-parameter: `Elev` → `elevation`,
///   `Stage` → `gage_height`, `Flow` → `discharge`, `Precip` → `precipitation`, `Temp-Water` →
///   `water_temperature`;
/// - that name, a dot and the sub-parameter for a parameter with one, the sub-parameter lowercased
///   with each run of other characters than letters and digits written `_`: `Flow-Res In` →
///   `discharge.res_in`, `Flow-Res Out` → `discharge.res_out`, `Elev-Tailwater` →
///   `elevation.tailwater`, `Precip-Mean Areal` → `precipitation.mean_areal`;
/// - any other parameter written the same way, whole: `Stor-Flood` → `stor_flood`, `%-Opening` →
///   `pct_opening`.
///
/// When two time series of one location that are loaded together would get one name
/// (`KEYS.Flow.Inst.1Hour.0.Best` and `KEYS.Flow.Ave.1Day.1Day.Best`), each gets its type, interval
/// and duration too (`discharge.inst.1hour.0`, `discharge.ave.1day.1day`), and if that is not
/// enough its version (`discharge.inst.1hour.0.raw`); ids that differ only in punctuation are then
/// numbered in id order. A metric named in the configuration (`timeseries: [{name, metric}]`)
/// is used as given, and a derived name that would equal it is lengthened the same way.
extension CWMSParser {
    /// The longest metric a time-series id may give, in bytes (as for a readings file).
    static let maxMetricBytes = 128

    /// The location of a time-series id: its text before the first `.`; nil when the id has no
    /// location or no parameter.
    static func location(seriesID: String) -> String? {
        let segments = seriesID.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count >= 2, !segments[0].isEmpty, !segments[1].isEmpty else { return nil }
        return String(segments[0])
    }

    /// The metric of one time series on its own (`KEYS.Flow-Res Out.Inst.1Hour.0.Best` →
    /// `discharge.res_out`); nil for an id without a location and a parameter, or whose metric
    /// would be longer than 128 bytes.
    public static func metricName(seriesID: String) -> String? {
        guard location(seriesID: seriesID) != nil else { return nil }
        let segments = seriesID.split(separator: ".", omittingEmptySubsequences: false)
        let name = metricName(parameter: String(segments[1]))
        return name.utf8.count <= maxMetricBytes ? name : nil
    }

    /// `Elev` → `elevation`, `Flow-Res Out` → `discharge.res_out`, `Stor-Flood` → `stor_flood`.
    static func metricName(parameter: String) -> String {
        let parts = parameter.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        let base = parts[0].lowercased()
        let sub = parts.count > 1 ? slug(parts[1]) : ""
        let known: String?
        switch base {
        case "elev": known = "elevation"
        case "stage": known = "gage_height"
        case "flow": known = "discharge"
        case "precip": known = "precipitation"
        case "temp" where sub == "water": return "water_temperature"
        case "temp" where sub.hasPrefix("water_"): return "water_temperature." + sub.dropFirst("water_".count)
        default: known = nil
        }
        if let known { return sub.isEmpty ? known : known + "." + sub }
        let whole = slug(parameter)
        return whole.isEmpty ? parameter.lowercased() : whole
    }

    /// Lowercase letters and digits, each run of anything else written `_` (none at either end);
    /// `%` is written `pct`.
    static func slug(_ text: some StringProtocol) -> String {
        var out = ""
        var pendingSeparator = false
        for scalar in text.replacingOccurrences(of: "%", with: "pct").lowercased().unicodeScalars {
            if scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) {
                if pendingSeparator && !out.isEmpty { out += "_" }
                pendingSeparator = false
                out.unicodeScalars.append(scalar)
            } else {
                pendingSeparator = true
            }
        }
        return out
    }

    /// The metrics of time series loaded together (one source's `timeseries`, or the files of one
    /// `klaxon ingest`), each series its own: see the naming rules above. Ids compare without
    /// regard to case, as CWMS compares them.
    public struct MetricNames: Sendable {
        /// Lowercased time-series id → metric.
        private var names: [String: String] = [:]

        /// `series`: each time-series id with the metric configured for it (nil: derived). An id
        /// without a location and a parameter gets no name.
        public init(_ series: [(id: String, metric: String?)]) {
            var explicit: [String: String] = [:]
            var derived: [String: String] = [:]  // lowercased id → the id as first given
            for (id, metric) in series {
                let key = id.lowercased()
                if let metric {
                    explicit[key] = metric
                } else if derived[key] == nil {
                    derived[key] = id
                }
            }
            for key in explicit.keys { derived[key] = nil }
            names = explicit
            // Names taken at each (lowercased) location: configured ones, then derived ones as they settle.
            var taken: [String: Set<String>] = [:]
            for (key, metric) in explicit {
                guard let location = CWMSParser.location(seriesID: key) else { continue }
                taken[location, default: []].insert(metric)
            }
            // Derived ids by location and plain name, lengthened together while they collide.
            var groups: [SeriesKey: [String]] = [:]
            for (key, id) in derived {
                guard let location = CWMSParser.location(seriesID: id), let plain = CWMSParser.metricName(seriesID: id)
                else { continue }
                groups[SeriesKey(station: location.lowercased(), metric: plain), default: []].append(key)
            }
            for (group, keys) in groups.sorted(by: { $0.key < $1.key }) {
                let ids = keys.sorted().compactMap { derived[$0] }
                let location = group.station
                let candidates: [[String]] = [
                    ids.map { _ in group.metric },
                    ids.map { group.metric + "." + Self.qualifier($0, segments: 2...4) },
                    ids.map { group.metric + "." + Self.qualifier($0, segments: 2...5) },
                ]
                let chosen =
                    candidates.first { option in
                        Set(option).count == option.count && !option.contains { taken[location]?.contains($0) == true }
                    }
                    // Ids that differ only in punctuation: numbered, in id order.
                    ?? zip(candidates[2], 1...).map { "\($0).\($1)" }
                for (id, name) in zip(ids, chosen) {
                    names[id.lowercased()] = name
                    taken[location, default: []].insert(name)
                }
            }
        }

        /// The metric of a time-series id given to `init`, nil for any other.
        public subscript(id: String) -> String? { names[id.lowercased()] }

        /// `inst.1hour.0` (type, interval, duration), or with the version (`inst.1hour.0.raw`).
        static func qualifier(_ id: String, segments range: ClosedRange<Int>) -> String {
            let segments = id.split(separator: ".", omittingEmptySubsequences: false)
            return range.map { $0 < segments.count ? CWMSParser.slug(segments[$0]) : "" }
                .map { $0.isEmpty ? "_" : $0 }.joined(separator: ".")
        }
    }
}
