import Foundation
import KlaxonCore

/// Active alerts from api.weather.gov (format name `nws-alerts-json`): `/alerts/active?point=…` and
/// the other `/alerts/active…` queries answer a GeoJSON FeatureCollection; `/alerts/{id}` a single
/// Feature.
public enum NWSAlertsParser {
    static let format = "nws-alerts-json"

    /// The alerts in payload order. Per feature: the id is `properties.id` (else the feature's `id`),
    /// the url `properties.@id` (else the feature's `id`); `severity` as sent (`Unknown` when null);
    /// `headline` (else the first `parameters.NWSheadline`); `areaDesc`; the onset is `onset`, else
    /// `effective`; the end is `ends`, else `expires` (times with offsets, as UTC seconds). `geometry`
    /// is not read: zone-based alerts have none. Alerts that are not `Actual` (tests, exercises) and
    /// `Cancel` messages are left out: neither is a hazard. An api.weather.gov problem document
    /// (`{"title":…,"status":404,"detail":…}`) is a server error.
    public static func parse(_ data: Data) throws -> [WeatherAlert] {
        let document = try JSONInput.decode(Document.self, from: data, format: format)
        if document.features == nil, document.properties == nil, document.status != nil {
            let parts = [document.title, document.detail].compactMap { $0 }
            let text = parts.isEmpty ? "status \(document.status?.value ?? "")" : parts.joined(separator: ": ")
            throw ParseError(
                .serverError, format: format, "the server sent an error, not data: \(ParseError.excerpt(text))")
        }
        let features: [(Feature, String)]
        if document.type == "FeatureCollection" || (document.type == nil && document.features != nil) {
            guard let list = document.features else {
                throw ParseError(.missingField, format: format, "missing field 'features'")
            }
            features = list.enumerated().map { ($1, "features[\($0)]") }
        } else if document.type == "Feature" {
            guard document.properties?.event != nil else {
                throw ParseError(
                    .notTheFormat, format: format, "got a GeoJSON Feature that is not an alert (no 'properties.event')")
            }
            features = [(Feature(id: document.id, properties: document.properties), "")]
        } else {
            throw ParseError(.notTheFormat, format: format, "not a GeoJSON FeatureCollection or Feature of alerts")
        }
        var alerts: [WeatherAlert] = []
        for (feature, path) in features {
            let at = path.isEmpty ? "" : path + "."
            guard let p = feature.properties else {
                throw ParseError(.missingField, format: format, "missing field '\(at)properties'")
            }
            guard let event = p.event else {
                throw ParseError(.missingField, format: format, "missing field '\(at)properties.event'")
            }
            if let status = p.status, status != "Actual" { continue }
            if p.messageType == "Cancel" { continue }
            guard let id = p.id ?? feature.id ?? p.atID else {
                throw ParseError(.missingField, format: format, "missing field '\(at)properties.id'")
            }
            func time(_ text: String?, _ name: String) throws -> Int64? {
                guard let text else { return nil }
                guard let t = Timestamp.parse(text) else {
                    throw ParseError(
                        .badValue, format: format, "bad time '\(ParseError.excerpt(text))' in '\(at)properties.\(name)'"
                    )
                }
                return t
            }
            let onset = try time(p.onset, "onset") ?? time(p.effective, "effective")
            let ends = try time(p.ends, "ends") ?? time(p.expires, "expires")
            alerts.append(
                WeatherAlert(
                    id: id, event: event, severity: p.severity ?? "Unknown",
                    headline: p.headline ?? p.parameters?.nwsHeadline?.first, areaDescription: p.areaDesc,
                    onset: onset, ends: ends, url: p.atID ?? feature.id))
        }
        return alerts
    }

    /// A FeatureCollection, a single Feature, or a problem document.
    struct Document: Decodable {
        var type: String?
        var features: [Feature]?
        var id: String?
        var properties: Properties?
        // Problem documents (`application/problem+json`).
        var title: String?
        var detail: String?
        var status: FlexibleString?
    }

    struct Feature: Decodable {
        var id: String?
        var properties: Properties?
    }

    struct Properties: Decodable {
        var atID: String?
        var id: String?
        var event: String?
        var severity: String?
        var headline: String?
        var areaDesc: String?
        var onset: String?
        var ends: String?
        var effective: String?
        var expires: String?
        var status: String?
        var messageType: String?
        var parameters: Parameters?

        enum CodingKeys: String, CodingKey {
            case id, event, severity, headline, areaDesc, onset, ends, effective, expires, status, messageType
            case parameters
            case atID = "@id"
        }
    }

    struct Parameters: Decodable {
        var nwsHeadline: [String]?

        enum CodingKeys: String, CodingKey {
            case nwsHeadline = "NWSheadline"
        }
    }
}
