import Foundation
import KlaxonCore

/// One page of the USGS Water Data OGC API (`/ogcapi/v0/collections/{collection}/items`), a GeoJSON
/// FeatureCollection.
///
/// Observation collections (`continuous`, `latest-continuous`, `daily`, `latest-daily`) give
/// readings, and the station of each with the position its geometry gives; `monitoring-locations`
/// gives stations in full; the features of any other collection are ignored. Observation times are UTC (`2025-01-01T00:15:00+00:00`) or, for daily values, calendar
/// days (`2025-12-26`, stored at 00:00Z).
public enum OGCParser {
    static let format = "usgs-ogc-json"
    static let source = "usgs-ogc"

    /// The page's readings or stations, and the next page (`links[rel=next].href`), nil on the last.
    public static func parse(_ data: Data) throws -> (batch: SourceBatch, next: URL?) {
        let page = try JSONInput.decode(FeatureCollection.self, from: data, format: format)
        var batch = SourceBatch()
        var stations = StationList()
        var namer = SeriesNamer()
        for (index, feature) in page.features.enumerated() {
            guard let properties = feature.properties?.fields else { continue }
            if isObservation(properties) {
                if let reading = try reading(properties, path: "features[\(index)].properties", namer: &namer) {
                    batch.readings.append(reading)
                } else {
                    batch.gaps += 1
                }
                if let station = observedStation(properties, feature: feature) { stations.add(station) }
            } else if isMonitoringLocation(properties) {
                if let station = station(properties, feature: feature) { stations.add(station) }
            }
        }
        batch.stations = stations.stations
        let next = page.links?.first { $0.rel == "next" }?.href.flatMap { URL(string: $0) }
        return (batch, next)
    }

    /// Continuous and daily values have a value, a parameter and a statistic; field measurements
    /// and annual peaks have no statistic and are not series Klaxon keeps.
    static func isObservation(_ p: [String: JSONValue]) -> Bool {
        p["value"] != nil && p["parameter_code"]?.string != nil && p["statistic_id"]?.string != nil
    }

    /// One Feature of `monitoring-locations` (`/items/USGS-…`): the station it describes, or nil
    /// when it is not a monitoring location.
    public static func monitoringLocation(_ data: Data) throws -> StationInfo? {
        let feature = try JSONInput.decode(Feature.self, from: data, format: format)
        return feature.properties.flatMap {
            isMonitoringLocation($0.fields) ? station($0.fields, feature: feature) : nil
        }
    }

    static func isMonitoringLocation(_ p: [String: JSONValue]) -> Bool {
        (p["monitoring_location_number"] != nil || p["monitoring_location_name"] != nil) && p["parameter_code"] == nil
    }

    /// `USGS-06904500` → `06904500`; other agencies keep their prefix.
    static func siteID(_ id: String) -> String {
        id.hasPrefix("USGS-") ? String(id.dropFirst(5)) : id
    }

    /// The reading of one observation feature, nil when its value is missing.
    static func reading(_ p: [String: JSONValue], path: String, namer: inout SeriesNamer) throws -> Reading? {
        func required(_ key: String) throws -> String {
            guard let s = p[key]?.string, !s.isEmpty else {
                throw ParseError(.missingField, format: format, "missing field '\(path).\(key)'")
            }
            return s
        }
        let location = try required("monitoring_location_id")
        let timeText = try required("time")
        let code = try required("parameter_code")
        let statistic = p["statistic_id"]?.string
        let value: Double?
        switch p["value"] {
        case .string(let s)?: value = ParserSupport.number(s)
        case .number(let d)?: value = d.isFinite ? d : nil
        default: value = nil
        }
        guard let value else { return nil }
        let daily = !(statistic == nil || statistic == "00011" || statistic == "00000")
        let parsed = daily ? ParserSupport.calendarDay(timeText.prefix(10)) : Timestamp.parse(timeText)
        guard let time = parsed else {
            throw ParseError(
                .badValue, format: format, "bad time '\(ParseError.excerpt(timeText, limit: 40))' in \(path).time")
        }
        let station = siteID(location)
        let seriesID = p["time_series_id"]?.string ?? ""
        let metric = namer.metric(
            USGSParameters.metric(forCode: code, statistic: statistic), station: station,
            discriminator: String(seriesID.prefix(8)))
        var flags: [String] = []
        if let approval = p["approval_status"]?.string, !approval.isEmpty {
            switch approval.lowercased() {
            case "provisional": flags.append("P")
            case "approved": flags.append("A")
            default: flags.append(approval)
            }
        }
        switch p["qualifier"] {
        case .array(let items)?: flags += items.compactMap(\.string).filter { !$0.isEmpty }
        case .string(let s)? where !s.isEmpty: flags.append(s)
        default: break
        }
        return Reading(
            station: station, metric: metric, time: time, value: value,
            unit: USGSParameters.unit(forCode: code, given: p["unit_of_measure"]?.string), source: source,
            quality: flags.isEmpty ? nil : flags.joined(separator: ":"))
    }

    /// The station an observation was made at, with the position the feature's geometry gives
    /// (every observation carries its monitoring location's point).
    static func observedStation(_ p: [String: JSONValue], feature: Feature) -> StationInfo? {
        guard let rawID = p["monitoring_location_id"]?.string, !rawID.isEmpty else { return nil }
        let id = siteID(rawID)
        let point = position(feature)
        return StationInfo(
            id: id, source: source, latitude: point?.latitude, longitude: point?.longitude,
            usgsID: rawID.hasPrefix("USGS-") ? id : nil)
    }

    /// A GeoJSON Point's `[longitude, latitude]`, nil when the feature has none or it is off the globe.
    static func position(_ feature: Feature) -> (latitude: Double, longitude: Double)? {
        guard case .array(let coordinates)? = feature.geometry?.coordinates, coordinates.count >= 2,
            let longitude = coordinates[0].number, let latitude = coordinates[1].number,
            (-90.0...90.0).contains(latitude), (-180.0...180.0).contains(longitude)
        else { return nil }
        return (latitude, longitude)
    }

    static func station(_ p: [String: JSONValue], feature: Feature) -> StationInfo? {
        guard let rawID = p["id"]?.string ?? feature.id?.value, !rawID.isEmpty else { return nil }
        let id = siteID(rawID)
        let point = position(feature)
        let latitude = point?.latitude
        let longitude = point?.longitude
        var timeZone: String?
        // The zone needs both: `MST` without its daylight-saving flag could be Denver or Phoenix.
        if let abbreviation = p["time_zone_abbreviation"]?.string {
            let usesDST: Bool?
            switch p["uses_daylight_savings"] {
            case .string(let s)?: usesDST = s.uppercased().hasPrefix("Y")
            case .bool(let b)?: usesDST = b
            default: usesDST = nil
            }
            timeZone = usesDST.flatMap { TimeZones.iana(abbreviation: abbreviation, usesDST: $0) }
        }
        var attributes: [String: String] = [:]
        for key in ["state_name", "site_type", "site_type_code"] {
            if let value = p[key]?.string, !value.isEmpty { attributes[key] = value }
        }
        let name = p["monitoring_location_name"]?.string?.trimmingSpaces()
        let isUSGS = rawID.hasPrefix("USGS-") || p["agency_code"]?.string == "USGS"
        return StationInfo(
            id: id, source: source, name: name?.isEmpty == false ? name : nil, latitude: latitude,
            longitude: longitude, timeZone: timeZone, usgsID: isUSGS ? id : nil, attributes: attributes)
    }

    // MARK: - GeoJSON, the parts Klaxon reads

    struct FeatureCollection: Decodable {
        var features: [Feature]
        var links: [Link]?
    }

    struct Link: Decodable {
        var rel: String?
        var href: String?
    }

    struct Feature: Decodable {
        var id: FlexibleString?
        var geometry: Geometry?
        var properties: Properties?
    }

    /// The properties Klaxon reads, by name; the others (dozens, for a monitoring location) are
    /// skipped without being decoded.
    struct Properties: Decodable {
        static let names = [
            "value", "parameter_code", "statistic_id", "time", "monitoring_location_id", "time_series_id",
            "unit_of_measure", "approval_status", "qualifier", "id", "monitoring_location_name",
            "monitoring_location_number", "time_zone_abbreviation", "uses_daylight_savings", "state_name", "site_type",
            "site_type_code", "agency_code",
        ]

        var fields: [String: JSONValue] = [:]

        init(from decoder: any Decoder) throws { fields = try JSONValue.members(Self.names, of: decoder) }

        subscript(name: String) -> JSONValue? { fields[name] }
    }

    struct Geometry: Decodable {
        var coordinates: JSONValue?
    }
}
