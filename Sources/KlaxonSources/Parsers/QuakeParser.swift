import Foundation
import KlaxonCore

/// USGS earthquake GeoJSON: the summary feeds (`/earthquakes/feed/v1.0/summary/*.geojson`), FDSN
/// event queries (`/fdsnws/event/1/query?format=geojson`), both FeatureCollections, and the detail
/// of one event (`/feed/v1.0/detail/{id}.geojson`), a single Feature.
///
/// Times are milliseconds since the epoch (UTC); `geometry.coordinates` is `[lon, lat, depth_km]`;
/// `ids` is comma-wrapped (`",us6000len8,at00s28p79,"`); `status` comes in either case (`REVIEWED`);
/// `mag`, `alert`, `felt`, `cdi`, `mmi`, `tz`, `sig` may be null.
public enum QuakeParser {
    static let format = "usgs-quakes"

    /// The events of a FeatureCollection, in feed order, or the one event of a single Feature.
    public static func parse(_ data: Data) throws -> [QuakeEvent] {
        try checkNotFDSNError(data)
        let document = try JSONInput.decode(Document.self, from: data, format: format)
        if let features = document.features {
            return try features.enumerated().map { index, feature in
                try event(feature, path: "features[\(index)]")
            }
        }
        if document.type == "Feature" || document.properties != nil {
            return [
                try event(
                    Feature(id: document.id, properties: document.properties, geometry: document.geometry), path: "")
            ]
        }
        if let error = JSONInput.serverError(data, format: format) { throw error }
        throw ParseError(.missingField, format: format, "missing field 'features'")
    }

    /// FDSN answers a bad query with plain text: `Error 400: Bad Request` and the details.
    static func checkNotFDSNError(_ data: Data) throws {
        guard JSONInput.firstSignificantByte(data) == UInt8(ascii: "E") else { return }
        let head = String(decoding: data.prefix(512), as: UTF8.self).trimmingSpaces()
        guard head.hasPrefix("Error ") else { return }
        throw ParseError(
            .serverError, format: format, "the server sent an error, not data: \(ParseError.excerpt(head, limit: 120))")
    }

    static func event(_ feature: Feature, path: String) throws -> QuakeEvent {
        func field(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }
        guard let p = feature.properties else {
            throw ParseError(.missingField, format: format, "missing field '\(field("properties"))'")
        }
        let aliases = list(p.ids)
        var networkID: String?
        if let net = text(p.net), let code = text(p.code) { networkID = net + code }
        guard let id = text(feature.id?.value) ?? networkID ?? aliases.first else {
            throw ParseError(.missingField, format: format, "missing field '\(field("id"))'")
        }
        guard let time = p.time else {
            throw ParseError(.missingField, format: format, "missing field '\(field("properties.time"))'")
        }
        // USGS gives all three: a position of two could be [lon, lat] or a shifted [lat, depth].
        guard let coordinates = feature.geometry?.coordinates, coordinates.count == 3,
            let longitude = coordinates[0], let latitude = coordinates[1]
        else {
            throw ParseError(.missingField, format: format, "missing field '\(field("geometry.coordinates"))'")
        }
        guard (-90...90).contains(latitude), (-180...180).contains(longitude) else {
            let shown = "[\(formatValue(longitude)), \(formatValue(latitude))]"
            throw ParseError(.badValue, format: format, "bad coordinates \(shown) in \(field("geometry.coordinates"))")
        }
        let depth = coordinates.count >= 3 ? coordinates[2] : nil
        return QuakeEvent(
            id: id, ids: aliases, time: time, updated: p.updated ?? time, magnitude: finite(p.mag),
            magType: text(p.magType), place: text(p.place), title: text(p.title), latitude: latitude,
            longitude: longitude, depthKm: finite(depth), sig: p.sig, alert: text(p.alert),
            tsunami: p.tsunami?.value ?? false, status: text(p.status) ?? "automatic",
            type: text(p.type) ?? "earthquake", url: text(p.url), felt: p.felt, cdi: finite(p.cdi),
            mmi: finite(p.mmi), tz: p.tz)
    }

    /// `",us6000len8,at00s28p79,"` → `["us6000len8", "at00s28p79"]`, without repeats.
    static func list(_ text: String?) -> [String] {
        guard let text else { return [] }
        var out: [String] = []
        for part in text.split(separator: ",") {
            let id = part.trimmingSpaces()
            if !id.isEmpty, !out.contains(id) { out.append(id) }
        }
        return out
    }

    /// Trimmed, nil when empty.
    static func text(_ s: String?) -> String? {
        guard let t = s?.trimmingSpaces(), !t.isEmpty else { return nil }
        return t
    }

    static func finite(_ v: Double?) -> Double? {
        guard let v, v.isFinite else { return nil }
        return v
    }

    // MARK: - GeoJSON, the parts Klaxon reads

    /// A FeatureCollection (`features`) or a single Feature (`properties`, `geometry`).
    struct Document: Decodable {
        var type: String?
        var features: [Feature]?
        var id: FlexibleString?
        var properties: Properties?
        var geometry: Geometry?
    }

    struct Feature: Decodable {
        var id: FlexibleString?
        var properties: Properties?
        var geometry: Geometry?
    }

    struct Geometry: Decodable {
        var coordinates: [Double?]?
    }

    struct Properties: Decodable {
        var mag: Double?
        var place: String?
        var time: Int64?
        var updated: Int64?
        var tz: Int?
        var url: String?
        var felt: Int?
        var cdi: Double?
        var mmi: Double?
        var alert: String?
        var status: String?
        var tsunami: FlexibleBool?
        var sig: Int?
        var net: String?
        var code: String?
        var ids: String?
        var magType: String?
        var type: String?
        var title: String?
    }

    /// `0`/`1` in the feeds; `true`/`false` accepted too.
    struct FlexibleBool: Decodable {
        let value: Bool

        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let b = try? c.decode(Bool.self) {
                value = b
            } else {
                value = try c.decode(Double.self) != 0
            }
        }
    }
}
