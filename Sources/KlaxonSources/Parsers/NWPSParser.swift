import Foundation
import KlaxonCore

/// The NOAA National Water Prediction Service API (`https://api.water.noaa.gov/nwps/v1`).
///
/// NWPS writes an undefined flood category as `-9999` and an unavailable value as `-999`; both are
/// absent here. Stage is in feet; flow is in kcfs in status and stageflow data but in cfs in the
/// flood categories, and Klaxon stores flow in ft³/s (cfs) throughout.
public enum NWPSParser {
    static let format = "nwps-json"
    static let source = "nwps"

    /// A gauge's metadata, flood categories and observed status (`/gauges/{id}`).
    public static func gauge(_ data: Data) throws -> GaugeInfo {
        let g = try JSONInput.decode(Gauge.self, from: data, format: format)
        var categories = FloodCategories(
            stageUnit: nonEmpty(g.flood?.stageUnits) ?? "ft", flowUnit: nonEmpty(g.flood?.flowUnits) ?? "cfs")
        for (name, category) in g.flood?.categories ?? [:] where FloodCategories.names.contains(name) {
            if let stage = defined(category.stage) { categories.stage[name] = stage }
            if let flow = defined(category.flow) { categories.flow[name] = flow }
        }
        let observed = g.status?.observed
        let timeZone = nonEmpty(g.timeZone).map { TimeZones.iana(posix: $0) ?? $0 }
        return GaugeInfo(
            lid: g.lid, usgsID: nonEmpty(g.usgsId), name: nonEmpty(g.name), description: nonEmpty(g.description),
            state: nonEmpty(g.state?.abbreviation), latitude: g.latitude, longitude: g.longitude, timeZone: timeZone,
            categories: categories, observedStage: defined(observed?.primary),
            observedFlow: flow(observed?.secondary, unit: observed?.secondaryUnit),
            observedCategory: nonEmpty(observed?.floodCategory), observedTime: time(observed?.validTime))
    }

    /// Observed stage (`gage_height`, ft) and flow (`discharge`, ft³/s) readings of a gauge, from
    /// `/gauges/{id}/stageflow/observed` or from the combined `/stageflow` body (whose forecast is
    /// ignored). `station` is the id to store them under (`GaugeInfo.stationID`).
    public static func stageflow(_ data: Data, station: String) throws -> SourceBatch {
        let body = try JSONInput.decode(StageflowBody.self, from: data, format: format)
        guard let series = body.observed ?? body.direct else {
            throw ParseError(.missingField, format: format, "missing field 'observed'")
        }
        let stageUnit = nonEmpty(series.primaryUnits) ?? "ft"
        var batch = SourceBatch()
        for (index, point) in series.data.enumerated() {
            guard let time = Timestamp.parse(point.validTime) else {
                throw ParseError(
                    .badValue, format: format,
                    "bad time '\(ParseError.excerpt(point.validTime, limit: 40))' in data[\(index)].validTime")
            }
            if let stage = defined(point.primary) {
                batch.readings.append(
                    Reading(
                        station: station, metric: "gage_height", time: time, value: stage, unit: stageUnit,
                        source: source))
            } else {
                batch.gaps += 1
            }
            if let flow = flow(point.secondary, unit: series.secondaryUnits) {
                batch.readings.append(
                    Reading(
                        station: station, metric: "discharge", time: time, value: flow, unit: "ft³/s", source: source))
            } else {
                batch.gaps += 1
            }
        }
        return batch
    }

    /// Nil for NWPS' "undefined" (`-9999`) and "unavailable" (`-999`) sentinels.
    static func defined(_ value: Double?) -> Double? {
        guard let value, value.isFinite, value > -999 else { return nil }
        return value
    }

    /// A flow in cfs from a value in `unit` (kcfs unless it says cfs).
    static func flow(_ value: Double?, unit: String?) -> Double? {
        guard let value = defined(value) else { return nil }
        switch unit?.lowercased() {
        case "cfs", "ft3/s", "ft^3/s": return value
        default: return (value * 1000 * 1_000_000).rounded() / 1_000_000
        }
    }

    /// Nil for the "no time" `0001-01-01T00:00:00Z`.
    static func time(_ text: String?) -> Int64? {
        guard let text, !text.hasPrefix("0001-"), let t = Timestamp.parse(text) else { return nil }
        return t
    }

    static func nonEmpty(_ s: String?) -> String? {
        guard let s = s?.trimmingSpaces(), !s.isEmpty else { return nil }
        return s
    }

    // MARK: - NWPS JSON, the parts Klaxon reads

    struct Gauge: Decodable {
        struct Named: Decodable { var abbreviation: String? }
        struct Status: Decodable { var observed: Value? }
        struct Value: Decodable {
            var primary: Double?
            var primaryUnit: String?
            var secondary: Double?
            var secondaryUnit: String?
            var floodCategory: String?
            var validTime: String?
        }
        struct Flood: Decodable {
            var stageUnits: String?
            var flowUnits: String?
            var categories: [String: Category]?
        }
        struct Category: Decodable {
            var stage: Double?
            var flow: Double?
        }
        var lid: String
        var usgsId: String?
        var name: String?
        var description: String?
        var state: Named?
        var timeZone: String?
        var latitude: Double?
        var longitude: Double?
        var status: Status?
        var flood: Flood?
    }

    struct Series: Decodable {
        struct Point: Decodable {
            var validTime: String
            var primary: Double?
            var secondary: Double?
        }
        var primaryUnits: String?
        var secondaryUnits: String?
        var data: [Point]
    }

    /// Either `{observed: {…, data: […]}, forecast: …}` or the observed series itself.
    struct StageflowBody: Decodable {
        var observed: Series?
        var direct: Series?

        enum Keys: String, CodingKey { case observed, data }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            if c.contains(.observed) {
                observed = try c.decode(Series.self, forKey: .observed)
            } else if c.contains(.data) {
                direct = try Series(from: decoder)
            } else {
                throw DecodingError.keyNotFound(
                    Keys.observed, .init(codingPath: [], debugDescription: "neither 'observed' nor 'data'"))
            }
        }
    }
}
