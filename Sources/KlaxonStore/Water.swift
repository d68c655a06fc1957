import Foundation
import KlaxonCore

/// A row of `source_state`: one configured source's cursor and health.
public struct SourceStateRecord: Codable, Sendable, Equatable {
    public var source: String
    public var cursor: String?
    public var lastAttempt: Int64?
    public var lastSuccess: Int64?
    public var lastError: String?
    public var failures: Int
    public var notBefore: Int64?

    enum CodingKeys: String, CodingKey {
        case source, cursor
        case lastAttempt = "last_attempt"
        case lastSuccess = "last_success"
        case lastError = "last_error"
        case failures
        case notBefore = "not_before"
    }
}

/// Summary statistics of one series over a time range: of its readings not suspect.
public struct SeriesSummary: Sendable, Equatable {
    public var count: Int
    public var min: Double
    public var mean: Double
    public var max: Double
    public var sum: Double
    public var first: Int64
    public var last: Int64
    /// Suspect readings in the range, left out of the figures.
    public var suspect = 0

    public init(
        count: Int, min: Double, mean: Double, max: Double, sum: Double, first: Int64, last: Int64, suspect: Int = 0
    ) {
        self.count = count
        self.min = min
        self.mean = mean
        self.max = max
        self.sum = sum
        self.first = first
        self.last = last
        self.suspect = suspect
    }
}

extension StationRecord {
    /// The station as the core sees it (ids of other agencies come from the attributes).
    public var info: StationInfo {
        // Written from `[String: String]` (`StationInfo.attributes`); a value of another kind (a row
        // edited by hand) reads as its JSON text.
        let data = Data(attributes.utf8)
        var attrs =
            (try? JSONDecoder().decode([String: String].self, from: data))?.mapValues(JSONValue.string)
            ?? JSONValue.parse(data)?.object ?? [:]
        let usgs = attrs.removeValue(forKey: "usgs_id")?.string
        let lid = attrs.removeValue(forKey: "nws_lid")?.string
        let strings = attrs.mapValues { $0.string ?? JSONText.encode($0) }
        return StationInfo(
            id: id, source: source, name: name, latitude: latitude, longitude: longitude, timeZone: timeZone,
            usgsID: usgs, nwsLID: lid, attributes: strings)
    }
}
