import Foundation
import KlaxonCore
import KlaxonStore

/// `klaxon quakes`: stored events, filtered.
public enum QuakeList {
    public struct Filter: Sendable {
        public var near: (latitude: Double, longitude: Double, radiusKm: Double)?
        /// Origin time at or after this (seconds).
        public var since: Int64
        public var minMagnitude: Double?
        /// `--at`: the place each event's felt intensity is estimated for (its distance is then the
        /// hypocentral distance from there).
        public var at: (latitude: Double, longitude: Double)?

        public init(
            near: (latitude: Double, longitude: Double, radiusKm: Double)? = nil, since: Int64,
            minMagnitude: Double? = nil, at: (latitude: Double, longitude: Double)? = nil
        ) {
            self.near = near
            self.since = since
            self.minMagnitude = minMagnitude
            self.at = at
        }
    }

    /// The felt intensity estimated at `Filter.at` (Atkinson & Wald 2007, `FeltIntensity`).
    public struct Felt: Sendable {
        /// Hypocentral distance from the place, km.
        public var distanceKm: Double
        /// The estimated MMI, nil for an event without a magnitude.
        public var intensity: Double?
        /// `aw2007-california` or `aw2007-ceus`: the model and coefficient set.
        public var source: String
    }

    public struct Row: Sendable {
        public var key: String
        public var event: QuakeEvent
        public var distanceKm: Double?
        public var revisions: Int
        public var felt: Felt? = nil
    }

    /// The felt intensity of `e` at a place, by A&W 2007 with the place's coefficient set.
    public static func felt(_ e: QuakeEvent, latitude: Double, longitude: Double) -> Felt {
        let epicentral = Geo.distanceKm(lat1: latitude, lon1: longitude, lat2: e.latitude, lon2: e.longitude)
        let d = FeltIntensity.hypocentralKm(epicentralKm: epicentral, depthKm: e.depthKm)
        let region = FeltIntensity.Region.forPlace(latitude: latitude, longitude: longitude)
        return Felt(
            distanceKm: d,
            intensity: e.magnitude.flatMap { FeltIntensity.aw2007(magnitude: $0, hypocentralKm: d, region: region) },
            source: "aw2007-" + region.rawValue)
    }

    /// Events matching the filter, newest first.
    public static func find(store: any QuakeStore, filter: Filter) async throws -> [Row] {
        var out: [Row] = []
        let revisions = try await store.quakeRevisionCounts()
        for q in try await store.quakes(from: filter.since * 1000, to: .max) {
            let e = q.event
            if let m = filter.minMagnitude, (e.magnitude ?? -.infinity) < m { continue }
            var distance: Double? = nil
            if let near = filter.near {
                let d = Geo.distanceKm(lat1: near.latitude, lon1: near.longitude, lat2: e.latitude, lon2: e.longitude)
                guard d <= near.radiusKm else { continue }
                distance = d
            }
            var row = Row(key: q.key, event: e, distanceKm: distance, revisions: revisions[q.key, default: 1])
            if let at = filter.at { row.felt = felt(e, latitude: at.latitude, longitude: at.longitude) }
            out.append(row)
        }
        return out
    }

    public static func text(_ r: Row) -> String {
        let e = r.event
        var parts = [Timestamp.format(e.time / 1000)]
        let mag = e.magnitude.map { "M\(formatValue(($0 * 10).rounded() / 10))" } ?? "M?"
        parts.append(mag + (e.magType.map { " \($0)" } ?? ""))
        parts.append(e.place ?? "(no place)")
        if let d = e.depthKm { parts.append("depth \(formatValue(d.rounded())) km") }
        if let f = r.felt {
            parts.append("\(formatValue(f.distanceKm.rounded())) km (hypocentral)")
            if let i = f.intensity {
                parts.append(
                    "estimated intensity \(FeltIntensity.roman(i)) (\(FeltIntensity.shaking(i)) shaking; "
                        + "\(formatValue((i * 10).rounded() / 10)), \(f.source))")
            }
            // The event's own intensities are its maxima, reported by people (DYFI) or instruments
            // (ShakeMap): not at the place.
            var measured: [String] = []
            if let c = e.cdi { measured.append("DYFI \(formatValue((c * 10).rounded() / 10))") }
            if let m = e.mmi { measured.append("ShakeMap \(formatValue((m * 10).rounded() / 10))") }
            if !measured.isEmpty { parts.append("event max: " + measured.joined(separator: ", ")) }
        } else if let d = r.distanceKm {
            parts.append("\(formatValue(d.rounded())) km away")
        }
        if let a = e.alert { parts.append("PAGER \(a)") }
        if e.tsunami { parts.append("tsunami flag") }
        if e.type != "earthquake" { parts.append(e.type) }
        parts.append(e.isDeleted ? "DELETED" : e.status)
        parts.append(e.id + (r.revisions > 1 ? " (\(r.revisions) versions)" : ""))
        return parts.joined(separator: "  ")
    }

    public static func json(_ r: Row) -> String {
        let e = r.event
        func s(_ v: String?) -> String { v.map(JSONText.string) ?? "null" }
        func n(_ v: Double?) -> String { v.map(JSONText.number) ?? "null" }
        func i(_ v: Int?) -> String { v.map(String.init) ?? "null" }
        var o = "{\"id\":\(JSONText.string(e.id)),\"ids\":[\(e.ids.map(JSONText.string).joined(separator: ","))]"
        o += ",\"time\":\"\(Timestamp.format(e.time / 1000))\",\"updated\":\"\(Timestamp.format(e.updated / 1000))\""
        o += ",\"magnitude\":\(n(e.magnitude)),\"mag_type\":\(s(e.magType)),\"place\":\(s(e.place))"
        o += ",\"latitude\":\(JSONText.number(e.latitude)),\"longitude\":\(JSONText.number(e.longitude))"
        o += ",\"depth_km\":\(n(e.depthKm)),\"sig\":\(i(e.sig)),\"alert\":\(s(e.alert)),\"tsunami\":\(e.tsunami)"
        o += ",\"status\":\(JSONText.string(e.status)),\"type\":\(JSONText.string(e.type)),\"url\":\(s(e.url))"
        o += ",\"felt\":\(i(e.felt)),\"cdi\":\(n(e.cdi)),\"mmi\":\(n(e.mmi))"
        if let f = r.felt {
            o += ",\"distance_km\":\(JSONText.number((f.distanceKm * 10).rounded() / 10))"
            o += ",\"intensity\":\(n(f.intensity.map { ($0 * 10).rounded() / 10 }))"
            o += ",\"intensity_source\":\(f.intensity == nil ? "null" : JSONText.string(f.source))"
        } else if let d = r.distanceKm {
            o += ",\"distance_km\":\(JSONText.number((d * 10).rounded() / 10))"
        }
        o += ",\"revisions\":\(r.revisions)}"
        return o
    }
}

/// `klaxon aqi CITY`: the latest AQI, its level and a sparkline of the last 25 samples.
public enum AirReport {
    public struct Report: Codable, Sendable, Equatable {
        public var city: String
        public var station: String
        public var aqi: Double
        public var time: String
        public var scale: String
        public var level: String?
        public var emoji: String?
        public var colour: String?
        public var advice: String?
        public var samples: [Double]
        public var sparkline: String
    }

    /// The report for a city (a station id or name, any case); nil when none has AQI readings.
    public static func build(store: any SeriesReads & StationReads, city: String, scale: AQIScale) async throws
        -> Report?
    {
        let infos = try await store.stationInfos()
        let wanted = city.lowercased()
        var candidates = [city]
        for (id, info) in infos where id.lowercased() == wanted || info.name?.lowercased() == wanted {
            candidates.append(id)
        }
        for id in candidates {
            guard let latest = try await store.latest(station: id, metric: "aqi") else { continue }
            let recent = try await store.values(station: id, metric: "aqi", from: .min, to: latest.time).suffix(25).map(
                \.value)
            let level = scale.level(for: latest.value)
            return Report(
                city: infos[id]?.name ?? id, station: id, aqi: latest.value, time: Timestamp.format(latest.time),
                scale: scale.id, level: level?.name, emoji: level?.emoji, colour: level?.colour, advice: level?.advice,
                samples: Array(recent), sparkline: RecentReadings.sparkline(recent.map { Optional($0) }))
        }
        return nil
    }

    public static func text(_ r: Report) -> String {
        var lines = ["\(r.city): AQI \(formatValue(r.aqi.rounded())) at \(r.time)"]
        if let level = r.level {
            lines.append("  \(r.emoji ?? "") \(level) (\(r.scale))")
        }
        if let advice = r.advice, !advice.isEmpty { lines.append("  \(advice)") }
        lines.append("  last \(r.samples.count) samples: \(r.sparkline)")
        return lines.joined(separator: "\n")
    }

    /// `klaxon aqi AREA --forecast -o json`: `[{"date", "issued", "parameter", "aqi", "category",
    /// "action_day"}]`, in the order given (by date, then pollutant); `aqi` null for a category-only
    /// forecast, `category` EPA's name.
    public static func forecastJSON(_ forecasts: [AirForecast]) -> String {
        let items = forecasts.map { f in
            "{\"date\":\(JSONText.string(f.date)),\"issued\":\(JSONText.string(f.issued)),"
                + "\"parameter\":\(JSONText.string(f.parameter)),\"aqi\":\(f.aqi.map(String.init) ?? "null"),"
                + "\"category\":\(JSONText.string(f.categoryName)),\"action_day\":\(f.actionDay)}"
        }
        return "[" + items.joined(separator: ",") + "]"
    }

    /// One line per forecast: `Denver 2026-12-08 Tue  O3  AQI 125  Unhealthy for Sensitive Groups  ACTION DAY  (issued 2026-12-07)`.
    public static func forecastText(_ forecasts: [AirForecast]) -> String {
        var lines: [String] = []
        if let first = forecasts.first {
            lines.append("\(first.area)\(first.state.map { ", \($0)" } ?? ""): air-quality forecast (AirNow)")
        }
        for f in forecasts {
            var line = "  \(f.date) \(Packer.weekday(of: f.date) ?? "   ")  \(f.parameter)  "
            line += f.aqi.map { "AQI \($0)" } ?? "AQI —"
            line += "  \(f.categoryName)"
            if f.actionDay { line += "  ACTION DAY" }
            line += "  (issued \(f.issued))"
            lines.append(line)
        }
        if let d = forecasts.last(where: { $0.discussion != nil })?.discussion { lines.append("  " + d) }
        return lines.joined(separator: "\n")
    }

    public static func json(_ r: Report) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(r)) ?? Data("{}".utf8), as: UTF8.self)
    }
}
