import Foundation
import KlaxonCore

/// USGS NWIS WaterServices WaterML-as-JSON (`/nwis/iv/?format=json` and `/nwis/dv/?format=json`).
///
/// Each `value.timeSeries[]` entry is one site and parameter (and, for daily values, one statistic);
/// each of its `values[]` entries is one method (sensor). Instantaneous times carry the site's UTC
/// offset; daily times are calendar days without one and are stored at 00:00Z of that day.
public enum USGSIVParser {
    static let format = "usgs-iv-json"
    static let source = "usgs-iv"

    /// Readings and stations of one IV or DV response.
    public static func parse(_ data: Data) throws -> SourceBatch {
        let response = try JSONInput.decode(Response.self, from: data, format: format)
        var batch = SourceBatch()
        var stations = StationList()
        var namer = SeriesNamer()
        for (index, series) in response.value.timeSeries.enumerated() {
            let path = "value.timeSeries[\(index)]"
            guard let siteCode = series.sourceInfo.siteCode.first else {
                throw ParseError(.missingField, format: format, "missing field '\(path).sourceInfo.siteCode[0]'")
            }
            guard let code = series.variable.variableCode.first?.value else {
                throw ParseError(.missingField, format: format, "missing field '\(path).variable.variableCode[0]'")
            }
            let site = siteCode.value
            let seriesName = series.name ?? "\(path)"
            let statistic =
                series.variable.options?.option?.first { $0.name == "Statistic" }?.optionCode
                ?? statisticFromName(series.name)
            let isDaily = !(statistic == nil || statistic == "00000" || statistic == "00011")
            let base = USGSParameters.metric(forCode: code, statistic: statistic)
            let unit = USGSParameters.unit(forCode: code, given: series.variable.unit?.unitCode)
            let noData = series.variable.noDataValue ?? -999_999
            if !stations.contains(site) {
                stations.add(station(series.sourceInfo, site: site, agency: siteCode.agencyCode))
            }
            for (methodIndex, set) in series.values.enumerated() {
                let method = set.method?.first?.methodID?.value ?? String(methodIndex)
                let metric = namer.metric(base, station: site, discriminator: method)
                for point in set.value {
                    let qualifiers = point.qualifiers ?? []
                    guard let text = point.value?.value, let value = ParserSupport.number(text), value != noData,
                        !qualifiers.contains(where: USGSParameters.outageQualifiers.contains)
                    else {
                        batch.gaps += 1
                        continue
                    }
                    let time = try time(point.dateTime, daily: isDaily, series: seriesName)
                    batch.readings.append(
                        Reading(
                            station: site, metric: metric, time: time, value: value, unit: unit, source: source,
                            quality: qualifiers.isEmpty ? nil : qualifiers.joined(separator: ":")))
                }
            }
        }
        batch.stations = stations.stations
        return batch
    }

    /// `USGS:01491000:00060:00003` → `00003`.
    static func statisticFromName(_ name: String?) -> String? {
        guard let parts = name?.split(separator: ":"), parts.count >= 4 else { return nil }
        return String(parts[3])
    }

    static func time(_ text: String, daily: Bool, series: String) throws -> Int64 {
        if daily, let day = ParserSupport.calendarDay(text.prefix(10)) { return day }
        if !daily, let t = Timestamp.parse(text) { return t }
        throw ParseError(
            .badValue, format: format, "bad dateTime '\(ParseError.excerpt(text, limit: 40))' in series \(series)")
    }

    static func station(_ info: SourceInfo, site: String, agency: String?) -> StationInfo {
        var timeZone: String?
        // The zone needs both: `MST` without its daylight-saving flag could be Denver or Phoenix.
        if let zone = info.timeZoneInfo, let abbreviation = zone.defaultTimeZone?.zoneAbbreviation,
            let usesDST = zone.siteUsesDaylightSavingsTime
        {
            timeZone = TimeZones.iana(abbreviation: abbreviation, usesDST: usesDST)
        }
        var attributes: [String: String] = [:]
        let names = [
            "siteTypeCd": "site_type_code", "hucCd": "huc", "stateCd": "state_code", "countyCd": "county_code",
        ]
        for property in info.siteProperty ?? [] {
            if let name = property.name, let key = names[name], let value = property.value, !value.isEmpty {
                attributes[key] = value
            }
        }
        let isUSGS = agency == nil || agency == "USGS"
        return StationInfo(
            id: site, source: source, name: info.siteName, latitude: info.geoLocation?.geogLocation?.latitude,
            longitude: info.geoLocation?.geogLocation?.longitude, timeZone: timeZone, usgsID: isUSGS ? site : nil,
            attributes: attributes)
    }

    // MARK: - WaterML-as-JSON, the parts Klaxon reads

    struct Response: Decodable {
        var value: Body
    }

    struct Body: Decodable {
        var timeSeries: [TimeSeries]
    }

    struct TimeSeries: Decodable {
        var name: String?
        var sourceInfo: SourceInfo
        var variable: Variable
        var values: [ValueSet]
    }

    struct SourceInfo: Decodable {
        var siteName: String?
        var siteCode: [SiteCode]
        var timeZoneInfo: TimeZoneInfo?
        var geoLocation: GeoLocation?
        var siteProperty: [Property]?
    }

    struct SiteCode: Decodable {
        var value: String
        var agencyCode: String?
    }

    struct TimeZoneInfo: Decodable {
        struct Zone: Decodable { var zoneAbbreviation: String? }
        var defaultTimeZone: Zone?
        var siteUsesDaylightSavingsTime: Bool?
    }

    struct GeoLocation: Decodable {
        struct Point: Decodable {
            var latitude: Double?
            var longitude: Double?
        }
        var geogLocation: Point?
    }

    struct Property: Decodable {
        var name: String?
        var value: String?
    }

    struct Variable: Decodable {
        struct Code: Decodable { var value: String }
        struct Unit: Decodable { var unitCode: String? }
        struct Options: Decodable { var option: [Option]? }
        struct Option: Decodable {
            var name: String?
            var optionCode: String?
        }
        var variableCode: [Code]
        var unit: Unit?
        var options: Options?
        var noDataValue: Double?
    }

    struct ValueSet: Decodable {
        struct Method: Decodable { var methodID: FlexibleString? }
        var value: [Point]
        var method: [Method]?
    }

    struct Point: Decodable {
        var value: FlexibleString?
        var qualifiers: [String]?
        var dateTime: String
    }
}
