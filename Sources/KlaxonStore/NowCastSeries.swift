import KlaxonCore

/// The derived NowCast series (issue 42, item 4): for every station with hourly PM2.5 or PM10
/// concentrations (`pm25`/`pm10` in µg/m³, as OpenAQ and readings files give them), the series
/// `pm25.nowcast` / `pm10.nowcast` (µg/m³, truncated as EPA truncates) and `aqi.pm25.nowcast` /
/// `aqi.pm10.nowcast` (the integer AQI of that NowCast), one reading per clock hour, stored beside the
/// raw series and usable by any rule.
///
/// Hours: a concentration belongs to the clock hour its time falls in (`time − time mod 3600`;
/// OpenAQ stamps the hour 12:00–13:00 at 13:00, so its hour is labelled 13:00, as stored); several
/// readings in one hour are averaged. The NowCast of hour H is computed from hours H−11 … H
/// (`NowCast.compute`: 2 of the 3 most recent hours needed, a missing hour in neither sum) and is
/// stamped H. An hour is derived only up to the newest hour that has data: no NowCast is made for an
/// hour not yet measured.
///
/// When a batch brings concentrations, the NowCasts of every hour they can change are recomputed:
/// a concentration of hour H changes the NowCasts of H … H+11 (those that exist). Each backend reads
/// the stored concentrations of `windows(_:)` its own way; the rest is here. A concentration outside
/// the physical range (`NowCast.Pollutant.plausible`) counts as a missing hour, so a bad value never
/// makes a NowCast; an hour whose NowCast is no longer valid keeps its last derived value (a stale
/// value is shown as such by its age, never replaced by a wrong one).
public enum NowCastSeries {
    /// One station's raw concentration series.
    public struct Key: Hashable, Sendable {
        public var station: String
        public var pollutant: NowCast.Pollutant
    }

    /// The stored concentrations a batch's NowCasts need: `[from, through]` (hour starts, inclusive)
    /// of one series.
    public struct Window: Hashable, Sendable {
        public var station: String
        public var metric: String
        public var from: Int64
        public var through: Int64
    }

    static let hour: Int64 = 3_600
    /// The suffix of a derived series' metric (`pm25.nowcast`, `aqi.pm25.nowcast`).
    public static let suffix = ".nowcast"

    /// The pollutant of a raw concentration reading, nil for any other reading (an index such as
    /// `aqi.pm25`, a concentration in another unit, a derived series).
    static func pollutant(of r: Reading) -> NowCast.Pollutant? {
        guard r.metric == "pm25" || r.metric == "pm10" else { return nil }
        let unit = Plausibility.unitKey(r.unit)
        guard unit == "ug/m3" || unit.isEmpty else { return nil }
        return r.metric == "pm25" ? .pm25 : .pm10
    }

    /// A raw PM concentration a NowCast is derived from.
    public static func isConcentration(_ r: Reading) -> Bool { pollutant(of: r) != nil }

    /// True when the batch holds a concentration a NowCast is derived from: the cheap test that keeps
    /// the rest away from every other batch.
    public static func applies(to readings: [Reading]) -> Bool {
        readings.contains { pollutant(of: $0) != nil }
    }

    static func hourOf(_ t: Int64) -> Int64 { t - ((t % hour) + hour) % hour }

    /// Per series, the hours the batch touches: from the earliest hour − 11 (what its NowCast reads)
    /// to the latest hour + 11 (the last NowCast it can change).
    public static func windows(_ readings: [Reading]) -> [Window] {
        var span: [Key: (Int64, Int64)] = [:]
        for r in readings {
            guard let p = pollutant(of: r) else { continue }
            let h = hourOf(r.time)
            let key = Key(station: r.station, pollutant: p)
            let old = span[key] ?? (h, h)
            span[key] = (min(old.0, h), max(old.1, h))
        }
        return span.map { key, s in
            Window(
                station: key.station, metric: key.pollutant.metric, from: s.0 - 11 * hour, through: s.1 + 12 * hour - 1)
        }
    }

    /// The derived readings for the batch's series: `stored` holds, per window (by station and
    /// metric), the stored concentrations in it as (time, value); the batch's own concentrations
    /// take the place of a stored value at the same time.
    public static func derive(_ readings: [Reading], stored: [SeriesKey: [(time: Int64, value: Double)]]) -> [Reading] {
        var out: [Reading] = []
        // The batch's concentrations by series, in one pass (a replay may bring millions of readings).
        var batch: [Key: [Reading]] = [:]
        for r in readings {
            guard let p = pollutant(of: r) else { continue }
            batch[Key(station: r.station, pollutant: p), default: []].append(r)
        }
        for w in windows(readings) {
            guard let p = NowCast.Pollutant(name: w.metric) else { continue }
            // Raw values by time: stored, then the batch's (a revision replaces the stored value).
            var byTime: [Int64: Double] = [:]
            for (t, v) in stored[SeriesKey(station: w.station, metric: w.metric)] ?? [] { byTime[t] = v }
            var touched: [Int64] = []
            var source: String?
            for r in batch[Key(station: w.station, pollutant: p)] ?? [] {
                byTime[r.time] = r.value
                touched.append(hourOf(r.time))
                source = source ?? r.source
            }
            // Hourly means; an implausible value is a missing hour's worth of nothing.
            var sums: [Int64: (Double, Int)] = [:]
            for (t, v) in byTime where v.isFinite && p.plausible.contains(v) {
                let h = hourOf(t)
                let s = sums[h] ?? (0, 0)
                sums[h] = (s.0 + v, s.1 + 1)
            }
            guard let newest = sums.keys.max(), let first = touched.min(), let last = touched.max() else { continue }
            var h = first
            while h <= min(last + 11 * hour, newest) {
                var hours: [Double?] = []
                hours.reserveCapacity(12)
                for back in 0..<12 {
                    hours.append(sums[h - Int64(back) * hour].map { $0.0 / Double($0.1) })
                }
                if case .success(let r) = NowCast.compute(p, hourly: hours) {
                    out.append(
                        Reading(
                            station: w.station, metric: p.nowcastMetric, time: h, value: r.nowcast, unit: "µg/m³",
                            source: source))
                    out.append(
                        Reading(
                            station: w.station, metric: p.aqiMetric, time: h, value: Double(r.aqi), source: source))
                }
                h += hour
            }
        }
        return out
    }
}
