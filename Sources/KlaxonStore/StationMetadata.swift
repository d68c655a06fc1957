import Foundation
import KlaxonCore

/// Station metadata as the core sees it, merged the same way by every backend.
public enum StationMetadata {
    /// Stored stations with NWS gauges folded in: a gauge adds its LID and fills what the station's
    /// own source left out; a gauge with no station of its own is a station of the `nwps` source.
    public static func merge(stations: [StationRecord], gauges: [GaugeInfo]) -> [String: StationInfo] {
        var out: [String: StationInfo] = [:]
        for r in stations { out[r.id] = r.info }
        for g in gauges {
            var s = out[g.stationID] ?? StationInfo(id: g.stationID, source: "nwps")
            s.nwsLID = g.lid
            s.usgsID = s.usgsID ?? g.usgsID
            // NWS names are written for people ("Willamette R at Portland, OR"); USGS site names
            // often are not ("WILLAMETTE RIVER AT PORTLAND, OR").
            s.name = g.description ?? g.name ?? s.name
            s.timeZone = s.timeZone ?? g.timeZone
            s.latitude = s.latitude ?? g.latitude
            s.longitude = s.longitude ?? g.longitude
            out[g.stationID] = s
        }
        return out
    }

    /// NWS flood categories by station id (the gauge's USGS site when it has one, else its LID);
    /// gauges with no defined category are left out.
    public static func floodCategories(_ gauges: [GaugeInfo]) -> [String: FloodCategories] {
        var out: [String: FloodCategories] = [:]
        for g in gauges where !g.categories.isEmpty { out[g.stationID] = g.categories }
        return out
    }

    /// The station id a person typed, as stored: trimmed, without a `USGS-` prefix.
    public static func typedID(_ typed: String) -> String {
        let trimmed = typed.trimmingCharacters(in: .whitespaces)
        return trimmed.uppercased().hasPrefix("USGS-") ? String(trimmed.dropFirst(5)) : trimmed
    }
}

/// The metadata a consumer sees, derived from a backend's stations and gauges and merged here, once
/// (not requirements: no backend repeats them).
extension StationReads {
    /// Station metadata by station id, with NWS gauges folded in (a gauge's LID and name, and its zone
    /// and position where the station has none).
    public func stationInfos() async throws -> [String: StationInfo] {
        StationMetadata.merge(stations: try await stationRecords(), gauges: try await gauges())
    }

    /// Station metadata and NWS flood categories together, reading the gauges once (what an
    /// evaluation needs).
    public func stationsAndFloods() async throws -> (stations: [String: StationInfo], floods: [String: FloodCategories])
    {
        let gauges = try await gauges()
        return (
            StationMetadata.merge(stations: try await stationRecords(), gauges: gauges),
            StationMetadata.floodCategories(gauges)
        )
    }

    /// NWS flood categories by station id (`StationMetadata.floodCategories`).
    public func floodCategories() async throws -> [String: FloodCategories] {
        StationMetadata.floodCategories(try await gauges())
    }
}
