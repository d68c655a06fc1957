import Foundation
import KlaxonCore

/// What a saved file looks like, judged from its shape: which `klaxon ingest --format` reads it.
/// `klaxon ingest FILE` without `--format` reads each file as the format it looks like (readings when
/// it looks like none); it also words messages when a file yields nothing, does not parse as the
/// format given, or floods the readings parser with rejected lines. Never a reason to parse
/// something as another format than the one `--format` asks for.
public struct PayloadLook: Sendable, Equatable {
    /// The format the file looks like; nil when it looks like none that `ingest` reads.
    public var format: IngestFormat?
    /// For people: `a USGS earthquake GeoJSON feed (features with mag and ids)`.
    public var description: String
    /// The payload holds no items at all (no features, no time series, no values): an empty answer
    /// is a valid answer of any format it is the container of.
    public var empty = false

    public init(format: IngestFormat?, description: String, empty: Bool = false) {
        self.format = format
        self.description = description
        self.empty = empty
    }

    /// The most of a file the sniffer reads.
    public static let headBytes = 4 << 20

    /// How a file looks (its first `headBytes`); nil when it cannot be read.
    public static func of(path: String) -> PayloadLook? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: headBytes) else { return nil }
        return of(head, complete: head.count < headBytes)
    }

    /// How a payload looks. `complete`: `data` is the whole file, not its head.
    public static func of(_ data: Data, complete: Bool = true) -> PayloadLook {
        var body = data[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        guard let first = body.first(where: { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) }) else {
            return PayloadLook(format: nil, description: "an empty file", empty: true)
        }
        switch first {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            if complete, let object = JSONValue.parse(body) {
                return json(object)
            }
            return jsonText(String(decoding: body.prefix(1 << 20), as: UTF8.self))
        case UInt8(ascii: "<"):
            return xml(String(decoding: body.prefix(1 << 20), as: UTF8.self))
                ?? PayloadLook(format: nil, description: "an HTML or XML page")
        default:
            let head = String(decoding: body.prefix(1 << 20), as: UTF8.self)
            // An HML product as distributed: the text product's WMO header before its XML.
            if let look = xml(head) { return look }
            return text(head)
        }
    }

    /// For a message about a file read as `given`: what it looks like and what to try instead; nil
    /// when it looks like `given` or like nothing in particular.
    public func hint(given: IngestFormat) -> String? {
        guard let format, format != given else { return nil }
        if format == .readings { return "it looks like \(description): try it without --format" }
        return "it looks like \(description): try --format \(format.rawValue)"
    }

    /// Whether an empty result of `format` is a valid answer for this payload (an empty feed).
    public func fits(_ format: IngestFormat) -> Bool {
        self.format == format || (self.format == nil && empty)
    }

    // MARK: - Parsed JSON

    static func json(_ object: JSONValue) -> PayloadLook {
        guard let o = object.object else {
            if let array = object.array {
                // AirNow answers with an array of observations, in its legacy or its 2026 field set.
                if let first = array.first?.object,
                    first["ReportingArea"] != nil || first["reportingAreaName"] != nil,
                    first["DateObserved"] != nil || first["dateObserved"] != nil
                {
                    return PayloadLook(
                        format: .airnowJSON, description: "AirNow observations (ReportingArea, DateObserved)")
                }
                // AirNow forecasts: the same areas, with DateIssue and DateForecast.
                if let first = array.first?.object,
                    first["ReportingArea"] != nil || first["reportingAreaName"] != nil
                        || first["reportingArea"] != nil,
                    first["DateForecast"] != nil || first["dateForecast"] != nil
                {
                    return PayloadLook(
                        format: .airnowForecast, description: "AirNow forecasts (ReportingArea, DateForecast)")
                }
                return PayloadLook(format: nil, description: "a JSON array", empty: array.isEmpty)
            }
            return PayloadLook(format: nil, description: "a JSON value that is not an object")
        }
        if o["type"]?.string == "FeatureCollection" || o["features"]?.array != nil {
            return featureCollection(o)
        }
        if o["type"]?.string == "Feature", let p = o["properties"]?.object {
            if isQuake(p) { return PayloadLook(format: .usgsQuakes, description: "a USGS earthquake GeoJSON event") }
            if isOGC(p) {
                return PayloadLook(format: .usgsOGCJSON, description: "a USGS Water Data OGC API feature")
            }
            if isNWSObservation(p) {
                return PayloadLook(
                    format: .nwsObservations, description: "an NWS station observation (timestamp, station)")
            }
            if p["stationIdentifier"] != nil {
                return PayloadLook(
                    format: .nwsObservations, description: "an NWS observation station (stationIdentifier)")
            }
        }
        if let series = o["value"]?["timeSeries"]?.array {
            return PayloadLook(
                format: .usgsIVJSON, description: "an NWIS WaterServices JSON response (value.timeSeries)",
                empty: series.isEmpty)
        }
        if o["name"]?.string != nil, o["values"]?.array != nil || o["value-columns"] != nil {
            return PayloadLook(
                format: .cwmsJSON, description: "a CWMS Data API time series (name, values)",
                empty: o["values"]?.array?.isEmpty ?? true)
        }
        if o["lid"] == nil,
            o["observed"]?["data"]?.array != nil || o["forecast"]?["data"]?.array != nil
                || (o["data"]?.array != nil && o["pedts"]?.string != nil)
        {
            return PayloadLook(format: .nwpsJSON, description: "an NWPS stageflow body (observed/forecast data)")
        }
        if o["lid"] != nil, o["flood"] != nil {
            return PayloadLook(format: .nwpsJSON, description: "an NWPS gauge (lid, flood)")
        }
        if (o["list"] != nil && o["city"] != nil) || (o["daily"] != nil && o["timezone_offset"] != nil) {
            return PayloadLook(format: .owmJSON, description: "an OpenWeatherMap response (list and city, or daily)")
        }
        if o["latitude"] != nil, o["daily"] != nil || o["hourly"] != nil {
            return PayloadLook(format: .openMeteoJSON, description: "an Open-Meteo response (latitude, daily/hourly)")
        }
        if o["station"] != nil, o["metric"] != nil {
            return PayloadLook(format: .readings, description: "a Klaxon readings file (JSON Lines)")
        }
        if let results = o["results"]?.array, o["meta"]?.object != nil {
            return PayloadLook(
                format: .openaqJSON, description: "an OpenAQ API response (meta, results)", empty: results.isEmpty)
        }
        if o["status"]?.string != nil, let data = o["data"]?.object, data["aqi"] != nil {
            return PayloadLook(format: .waqiJSON, description: "a WAQI feed (status, data.aqi)")
        }
        return PayloadLook(format: nil, description: "a JSON object none of the ingest formats describes")
    }

    static func featureCollection(_ o: [String: JSONValue]) -> PayloadLook {
        let features = o["features"]?.array ?? []
        let properties = features.prefix(50).compactMap { $0["properties"]?.object }
        if properties.contains(where: isQuake) {
            return PayloadLook(
                format: .usgsQuakes, description: "a USGS earthquake GeoJSON feed (features with mag and ids)")
        }
        if properties.contains(where: isOGC) {
            return PayloadLook(
                format: .usgsOGCJSON,
                description: "a USGS Water Data OGC API page (features with monitoring_location_id)")
        }
        if properties.contains(where: isNWSObservation) {
            return PayloadLook(
                format: .nwsObservations, description: "NWS station observations (features with timestamp and station)")
        }
        if properties.contains(where: { $0["stationIdentifier"] != nil }) {
            return PayloadLook(
                format: .nwsObservations, description: "NWS observation stations (features with stationIdentifier)")
        }
        guard features.isEmpty else {
            return PayloadLook(
                format: nil,
                description: "a GeoJSON FeatureCollection of neither earthquakes, USGS water data nor NWS observations")
        }
        // No feature to judge by: the collection's own fields tell the two services apart.
        let metadata = o["metadata"]?.object
        if metadata?["api"] != nil || metadata?["title"]?.string?.contains("Earthquake") == true {
            return PayloadLook(
                format: .usgsQuakes, description: "a USGS earthquake GeoJSON feed with no events", empty: true)
        }
        if o["numberReturned"] != nil || o["links"] != nil {
            return PayloadLook(
                format: .usgsOGCJSON, description: "a USGS Water Data OGC API page with no features", empty: true)
        }
        return PayloadLook(format: nil, description: "an empty GeoJSON FeatureCollection", empty: true)
    }

    static func isQuake(_ p: [String: JSONValue]) -> Bool {
        p["mag"] != nil && (p["ids"] != nil || p["magType"] != nil)
    }

    static func isNWSObservation(_ p: [String: JSONValue]) -> Bool {
        p["timestamp"] != nil && (p["station"] != nil || p["stationId"] != nil)
            && (p["temperature"] != nil || p["windSpeed"] != nil || p["textDescription"] != nil)
    }

    static func isOGC(_ p: [String: JSONValue]) -> Bool {
        p["monitoring_location_id"] != nil || p["time_series_id"] != nil || p["monitoring_location_number"] != nil
    }

    // MARK: - JSON that did not parse whole (a file's head, JSON Lines)

    static func jsonText(_ head: String) -> PayloadLook {
        // JSON Lines: the first line is an object of its own.
        if let line = head.split(separator: "\n", maxSplits: 1).first,
            let o = JSONValue.parse(line.utf8)?.object, o["station"] != nil, o["metric"] != nil
        {
            return PayloadLook(format: .readings, description: "a Klaxon readings file (JSON Lines)")
        }
        func has(_ keys: String...) -> Bool { keys.allSatisfy { head.contains("\"\($0)\"") } }
        if has("FeatureCollection", "mag", "ids") {
            return PayloadLook(
                format: .usgsQuakes, description: "a USGS earthquake GeoJSON feed (features with mag and ids)")
        }
        if has("monitoring_location_id") || has("time_series_id") {
            return PayloadLook(
                format: .usgsOGCJSON,
                description: "a USGS Water Data OGC API page (features with monitoring_location_id)")
        }
        if has("timestamp", "windSpeed", "barometricPressure") {
            return PayloadLook(
                format: .nwsObservations, description: "NWS station observations (features with timestamp and station)")
        }
        if has("timeSeries", "sourceInfo") {
            return PayloadLook(
                format: .usgsIVJSON, description: "an NWIS WaterServices JSON response (value.timeSeries)")
        }
        if has("name", "value-columns") {
            return PayloadLook(format: .cwmsJSON, description: "a CWMS Data API time series (name, values)")
        }
        if has("lid", "flood") { return PayloadLook(format: .nwpsJSON, description: "an NWPS gauge (lid, flood)") }
        if has("list", "city") || has("daily", "timezone_offset") {
            return PayloadLook(format: .owmJSON, description: "an OpenWeatherMap response (list and city, or daily)")
        }
        if has("latitude", "daily") || has("latitude", "hourly") {
            return PayloadLook(format: .openMeteoJSON, description: "an Open-Meteo response (latitude, daily/hourly)")
        }
        return PayloadLook(format: nil, description: "JSON none of the ingest formats describes")
    }

    // MARK: - XML

    /// The NWS hydrograph documents: an HML product (sites under a product root, maybe after a WMO
    /// header) or an AHPS `hydrograph.php?output=xml` document (one `<site>` root); nil for other text.
    static func xml(_ head: String) -> PayloadLook? {
        guard head.contains("<site"), head.contains("<observed") || head.contains("<forecast") else { return nil }
        // The root element: the first tag that is not a declaration, a comment or an instruction.
        var rest = Substring(head)
        while let open = rest.firstIndex(of: "<") {
            let tag = rest[rest.index(after: open)...]
            if tag.hasPrefix("?") || tag.hasPrefix("!") {
                rest = tag.drop { $0 != ">" }
                continue
            }
            if tag.hasPrefix("site") {
                return PayloadLook(format: .ahpsXML, description: "an AHPS hydrograph XML document (one <site>)")
            }
            return PayloadLook(format: .hml, description: "an NWS HML product (<site>s with observed and forecast)")
        }
        return nil
    }

    // MARK: - Text

    static func text(_ head: String) -> PayloadLook {
        var sawComment = false
        for raw in lines(of: head, upTo: 2000) {
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw
            if line.hasPrefix("#") {
                sawComment = true
                continue
            }
            if line.allSatisfy({ $0 == " " || $0 == "\t" }) { continue }
            let tabbed = line.split(separator: "\t", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            if tabbed.first == "agency_cd" {
                if tabbed.contains("dv_dt") && tabbed.contains("dv_va") {
                    return PayloadLook(
                        format: .usgsRDB,
                        description: "an NWIS RDB daily-values file in the pre-2005 layout (dv_dt, dv_va)")
                }
                if tabbed.contains("station_nm") && !tabbed.contains("datetime") {
                    return PayloadLook(format: .usgsRDB, description: "an NWIS RDB site file (agency_cd, station_nm)")
                }
                return PayloadLook(
                    format: .usgsRDB, description: "an NWIS RDB file ('#' comment header, tab-separated agency_cd …)")
            }
            let names = line.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: CharacterSet(charactersIn: " \t\"")).lowercased()
            }
            if ["station", "metric", "time", "value"].allSatisfy(names.contains) {
                return PayloadLook(format: .readings, description: "a Klaxon readings file (CSV)")
            }
            if sawComment && tabbed.count > 1 {
                return PayloadLook(format: nil, description: "a tab-separated file with a '#' comment header")
            }
            break
        }
        return PayloadLook(format: nil, description: "text none of the ingest formats describes")
    }

    /// The first `limit` non-empty lines of `text`, found one at a time as the loop asks for them:
    /// the sniffer usually decides on the first line, and splitting the whole megabyte head into
    /// Characters first cost `klaxon ingest` a sixth of its time on a 100,000-line file.
    static func lines(of text: String, upTo limit: Int) -> some Sequence<Substring> {
        sequence(state: (rest: text[...], count: 0)) { state -> Substring? in
            while state.count < limit, !state.rest.isEmpty {
                let rest = state.rest
                let end = rest.utf8.firstIndex(of: UInt8(ascii: "\n")) ?? rest.endIndex
                state.rest = end == rest.endIndex ? rest[end...] : rest[rest.utf8.index(after: end)...]
                let line = rest[..<end]
                if !line.isEmpty {
                    state.count += 1
                    return line
                }
            }
            return nil
        }
    }
}
