import Foundation
import KlaxonCore
import KlaxonSources
import Yams

/// A source as configured: the source itself, its request timeout and where it was defined.
public struct ConfiguredSource: Sendable {
    public var source: any Source
    /// Seconds per request.
    public var timeout: Double
    public var origin: String

    public init(source: any Source, timeout: Double = 30, origin: String = "") {
        self.source = source
        self.timeout = timeout
        self.origin = origin
    }
}

/// Reads `sources:` entries of `klaxon.yaml`.
extension ConfigReader {
    static let commonSourceKeys = ["name", "kind", "base_url", "every", "timeout"]
    /// One source kind as data: its name, its keys (besides `commonSourceKeys`), and its reader. The
    /// config's reading, `klaxon check`'s unknown-key and unknown-kind messages come from
    /// `sourceKinds`; a new kind producing readings is its source file, its parser, and an entry here.
    struct SourceKindSpec: Sendable {
        struct Context {
            var name: String
            var baseURL: String?
            var every: Int64?
            var what: String
        }
        var name: String
        var keys: [String]
        var read: @Sendable (ConfigReader, inout YAMLMap, Context) -> (any Source)?
    }

    static let sourceKinds: [SourceKindSpec] = [
        SourceKindSpec(
            name: USGSIVSource.kindName, keys: ["sites", "parameters", "period"],
            read: { r, m, c in r.readUSGSIV(&m, name: c.name, baseURL: c.baseURL, every: c.every, what: c.what) }),
        SourceKindSpec(
            name: USGSOGCSource.kindName, keys: ["sites", "parameters", "period", "api_key", "api_key_file"],
            read: { r, m, c in r.readUSGSOGC(&m, name: c.name, baseURL: c.baseURL, every: c.every, what: c.what) }),
        SourceKindSpec(
            name: NWPSSource.kindName, keys: ["gauges", "observed", "forecast"],
            read: { r, m, c in r.readNWPS(&m, name: c.name, baseURL: c.baseURL, every: c.every, what: c.what) }),
        SourceKindSpec(
            name: USGSQuakesSource.kindName,
            keys: [
                "feed", "starttime", "endtime", "minmagnitude", "latitude", "longitude", "maxradiuskm", "minlatitude",
                "maxlatitude", "minlongitude", "maxlongitude", "window",
            ],
            read: { r, m, c in r.readUSGSQuakes(&m, name: c.name, baseURL: c.baseURL, every: c.every, what: c.what) }),
        SourceKindSpec(
            name: AQIWebSocketSource.kindName,
            keys: ["url", "sample_every", "max_frame_bytes", "ping_every", "listen"],
            read: { r, m, c in r.readAQIWebSocket(&m, name: c.name, baseURL: c.baseURL, every: c.every, what: c.what) }),
        SourceKindSpec(
            name: AirNowSource.kindName, keys: ["api_key", "api_key_file", "locations", "forecast"],
            read: { r, m, c in r.readAirNow(&m, name: c.name, baseURL: c.baseURL, every: c.every, what: c.what) }),
        SourceKindSpec(
            name: OpenAQSource.kindName, keys: ["api_key", "api_key_file", "locations"],
            read: { r, m, c in r.readOpenAQ(&m, name: c.name, baseURL: c.baseURL, every: c.every, what: c.what) }),
        SourceKindSpec(
            name: OpenMeteoSource.kindName, keys: ["archive_url", "geocoding_url", "forecast_days"],
            read: { r, m, c in r.readOpenMeteo(&m, name: c.name, baseURL: c.baseURL, every: c.every, what: c.what) }),
        SourceKindSpec(
            name: OWMSource.kindName, keys: ["api_key", "api_key_file", "endpoint"],
            read: { r, m, c in r.readOWM(&m, name: c.name, baseURL: c.baseURL, every: c.every, what: c.what) }),
        SourceKindSpec(
            name: NWSObservationsSource.kindName, keys: ["stations", "units", "period", "latest"],
            read: { r, m, c in r.readNWSObservations(&m, name: c.name, baseURL: c.baseURL, every: c.every, what: c.what)
            }),
        SourceKindSpec(
            name: HTTPJSONSource.kindName,
            keys: ["url", "url_file", "records", "time", "station", "metrics", "headers"],
            read: { r, m, c in r.readHTTPJSON(&m, name: c.name, baseURL: c.baseURL, every: c.every, what: c.what) }),
        SourceKindSpec(
            name: NWSAlertsSource.kindName, keys: [],
            read: { r, m, c in r.readNWSAlerts(&m, name: c.name, baseURL: c.baseURL, every: c.every, what: c.what) }),
        SourceKindSpec(
            name: WAQISource.kindName, keys: ["token", "token_file", "stations"],
            read: { r, m, c in r.readWAQI(&m, name: c.name, baseURL: c.baseURL, every: c.every, what: c.what) }),
        SourceKindSpec(
            name: CWMSSource.kindName, keys: ["office", "timeseries", "unit", "period"],
            read: { r, m, c in r.readCWMS(&m, name: c.name, baseURL: c.baseURL, every: c.every, what: c.what) }),
    ]

    static let sourceKindsByName = Dictionary(uniqueKeysWithValues: sourceKinds.map { ($0.name, $0) })
    static var sourceKeys: [String: [String]] { sourceKindsByName.mapValues(\.keys) }

    func source(_ node: Node) -> ConfiguredSource? {
        guard var m = file.map(node, what: "a source") else { return nil }
        let before = file.diagnostics.items.count
        let name = m.required("name", what: "the source").flatMap { file.string($0, what: "name") }
        let what = name.map { "source \"\($0)\"" } ?? "the source"
        let kindNode = m.required("kind", what: what)
        let kind = kindNode.flatMap { file.string($0, what: "kind") }
        var baseURL: String? = nil
        if let n = m.value("base_url"), let s = file.string(n, what: "base_url") {
            if let u = URL(string: s), let scheme = u.scheme, ["http", "https"].contains(scheme), u.host != nil {
                baseURL = s
            } else {
                file.error(n, "base_url must be an http(s) URL, not \"\(s)\"")
            }
        }
        let every = m.value("every").flatMap { file.duration($0, what: "every") }
        if let n = m.value("every"), let e = every, e < 60 {
            file.error(n, "every must be at least 1m: the services ask clients not to poll faster")
        }
        let timeout = seconds(&m, "timeout", default: 30)
        var built: (any Source)? = nil
        var known = Self.commonSourceKeys
        if let kind, let name {
            if let spec = Self.sourceKindsByName[kind] {
                known += spec.keys
                built = spec.read(self, &m, .init(name: name, baseURL: baseURL, every: every, what: what))
            } else {
                file.error(
                    kindNode,
                    "unknown source kind \"\(kind)\" (kinds are \(Self.sourceKinds.map(\.name).sorted().joined(separator: ", ")))"
                )
                m.markAllUsed()
            }
        }
        m.rejectUnknown(known: known, what: what)
        guard let built, file.diagnostics.items.count == before else { return nil }
        let mark = node.mark
        return ConfiguredSource(
            source: built, timeout: timeout, origin: "\(file.path):\(mark?.line ?? 1):\(mark?.column ?? 1)")
    }

    func quakes(_ m: inout YAMLMap, name: String, baseURL: String?, every: Int64?, what: String) -> USGSQuakesSource? {
        if let n = m.value("feed") {
            guard let feed = file.string(n, what: "feed") else { return nil }
            guard USGSQuakesSource.feeds.contains(feed) else {
                let hint = closest(feed, in: USGSQuakesSource.feeds).map { " (did you mean \($0)?)" } ?? ""
                file.error(n, "unknown feed \"\(feed)\"\(hint): significant|4.5|2.5|1.0|all _ hour|day|week|month")
                return nil
            }
            for key in ["starttime", "endtime", "minmagnitude", "latitude", "longitude", "maxradiuskm", "window"]
            where m.has(key) {
                file.error(m.value(key), "\(key) is for FDSN queries; a feed: source takes none")
            }
            return USGSQuakesSource(name: name, baseURL: baseURL, every: every ?? 60, mode: .feed(feed))
        }
        guard let startNode = m.required("starttime", what: "\(what) (give feed: or starttime:)"),
            let start = file.time(startNode, what: "starttime")
        else { return nil }
        let end = m.value("endtime").flatMap { file.time($0, what: "endtime") }
        let minMag = m.value("minmagnitude").flatMap { file.number($0, what: "minmagnitude") }
        let window = m.value("window").flatMap { file.duration($0, what: "window") } ?? 30 * 86_400
        var area: USGSQuakesSource.Area? = nil
        let circle = ["latitude", "longitude", "maxradiuskm"].map {
            m.value($0).flatMap { file.number($0, what: "a circle") }
        }
        let box = ["minlatitude", "maxlatitude", "minlongitude", "maxlongitude"].map {
            m.value($0).flatMap { file.number($0, what: "a box") }
        }
        if circle.contains(where: { $0 != nil }) {
            if let lat = circle[0], let lon = circle[1], let r = circle[2] {
                area = .circle(latitude: lat, longitude: lon, radiusKm: r)
            } else {
                file.error(m.node, "\(what): a circle needs latitude, longitude and maxradiuskm")
            }
        }
        if box.contains(where: { $0 != nil }) {
            if let a = box[0], let b = box[1], let c = box[2], let d = box[3] {
                if area != nil { file.error(m.node, "\(what): give a circle or a box, not both") }
                area = .box(minLatitude: a, maxLatitude: b, minLongitude: c, maxLongitude: d)
            } else {
                file.error(m.node, "\(what): a box needs minlatitude, maxlatitude, minlongitude and maxlongitude")
            }
        }
        return USGSQuakesSource(
            name: name, baseURL: baseURL, every: every ?? 3_600,
            mode: .fdsn(start: start, end: end, minMagnitude: minMag, area: area, window: window))
    }

    func aqiWebSocket(_ m: inout YAMLMap, name: String, what: String) -> AQIWebSocketSource? {
        guard let n = m.required("url", what: what), let url = file.string(n, what: "url") else { return nil }
        guard let u = URL(string: url), let scheme = u.scheme, ["ws", "wss"].contains(scheme), u.host != nil else {
            file.error(n, "url must be a ws:// or wss:// URL, not \"\(url)\"")
            return nil
        }
        let sample = m.value("sample_every").flatMap { file.duration($0, what: "sample_every") } ?? 30
        let maxFrame = m.value("max_frame_bytes").flatMap { file.integer($0, what: "max_frame_bytes") } ?? (1 << 20)
        let ping = seconds(&m, "ping_every", default: 20)
        let listen = seconds(&m, "listen", default: 60)
        return AQIWebSocketSource(
            name: name, url: url, sampleEvery: sample, maxFrame: maxFrame, pingEvery: ping, listen: listen)
    }

    func sites(_ m: inout YAMLMap, what: String) -> [String]? {
        guard let n = m.required("sites", what: what), let list = file.stringList(n, what: "sites") else { return nil }
        if list.isEmpty { file.error(n, "sites is empty") }
        let sites = list.map { $0.uppercased().hasPrefix("USGS-") ? String($0.dropFirst(5)) : $0 }
        for s in sites where s.count < 8 || s.count > 15 || !s.allSatisfy(\.isNumber) {
            file.error(n, "\"\(s)\" is not a USGS site number (8 to 15 digits)")
        }
        return sites
    }

    /// Parameter names (`gage_height`) or codes (`00065`); default gage height and discharge.
    func parameters(_ m: inout YAMLMap) -> [String] {
        guard let n = m.value("parameters"), let list = file.stringList(n, what: "parameters") else {
            return ["00065", "00060"]
        }
        var codes: [String] = []
        for p in list {
            if let c = USGSParameters.code(for: p) {
                codes.append(c)
            } else {
                let names = ["gage_height", "discharge", "precipitation", "water_temperature"]
                let hint = closest(p, in: names).map { " (did you mean \($0)?)" } ?? ""
                file.error(
                    n, "unknown parameter \"\(p)\"\(hint): use \(names.joined(separator: ", ")) or a 5-digit code")
            }
        }
        return codes
    }

    /// `period: 7d` or ISO 8601 `P7D`/`PT12H`; default 7 days.
    func period(_ m: inout YAMLMap, default d: Int64 = 7 * 86_400) -> Int64 {
        guard let n = m.value("period"), let s = n.scalar?.string else { return d }
        if let iso = Self.isoDuration(s) { return iso }
        return file.duration(n, what: "period") ?? d
    }

    static func isoDuration(_ s: String) -> Int64? {
        let u = s.uppercased()
        // Bounded like every duration (DurationText.maximum), so `h * 3_600` cannot overflow.
        if u.hasPrefix("PT"), let h = Int64(u.dropFirst(2).dropLast()), u.hasSuffix("H"),
            (0...DurationText.maximum / 3_600).contains(h)
        {
            return h * 3_600
        }
        if u.hasPrefix("P"), u.hasSuffix("D"), let d = Int64(u.dropFirst().dropLast()),
            (0...DurationText.maximum / 86_400).contains(d)
        {
            return d * 86_400
        }
        return nil
    }
}

/// Each source kind's reader (`sourceKinds`).
extension ConfigReader {
    func readUSGSIV(_ m: inout YAMLMap, name: String, baseURL: String?, every: Int64?, what: String) -> (any Source)? {
        var built: (any Source)? = nil
        // WaterServices (the IV service) is decommissioned in Q1 2027; a base_url of one's own (a mirror, a
        // stand-in) is not USGS's and keeps working, so only the real service is warned about.
        if baseURL.map({ $0.contains(USGSIVSource.retiringHost) }) ?? true {
            file.warn(m.keyed.first { $0.key == "kind" }?.value ?? m.node, USGSIVSource.retirementNotice)
        }
        if let sites = sites(&m, what: what) {
            built = USGSIVSource(
                name: name, baseURL: baseURL ?? USGSIVSource.defaultBaseURL, every: every ?? 900,
                sites: sites, parameters: parameters(&m), period: period(&m))
        }
        return built
    }

    func readUSGSOGC(_ m: inout YAMLMap, name: String, baseURL: String?, every: Int64?, what: String) -> (any Source)? {
        var built: (any Source)? = nil
        let key = secret(&m, "api_key", required: false, what: what)
        if let sites = sites(&m, what: what) {
            built = USGSOGCSource(
                name: name, baseURL: baseURL ?? USGSOGCSource.defaultBaseURL, every: every ?? 900,
                sites: sites, parameters: parameters(&m), period: period(&m), apiKey: key?.value)
        }
        return built
    }

    func readNWPS(_ m: inout YAMLMap, name: String, baseURL: String?, every: Int64?, what: String) -> (any Source)? {
        var built: (any Source)? = nil
        let observed = m.value("observed").flatMap { file.bool($0, what: "observed") } ?? false
        let forecast = m.value("forecast").flatMap { file.bool($0, what: "forecast") } ?? false
        if let n = m.required("gauges", what: what), let gauges = file.stringList(n, what: "gauges") {
            if gauges.isEmpty { file.error(n, "gauges is empty") }
            built = NWPSSource(
                name: name, baseURL: baseURL ?? NWPSSource.defaultBaseURL, every: every ?? 86_400,
                gauges: gauges, observed: observed, forecast: forecast)
        }
        return built
    }

    func readUSGSQuakes(_ m: inout YAMLMap, name: String, baseURL: String?, every: Int64?, what: String) -> (
        any Source
    )? {
        var built: (any Source)? = nil
        built = quakes(&m, name: name, baseURL: baseURL, every: every, what: what)
        return built
    }

    func readAQIWebSocket(_ m: inout YAMLMap, name: String, baseURL: String?, every: Int64?, what: String) -> (
        any Source
    )? {
        var built: (any Source)? = nil
        built = aqiWebSocket(&m, name: name, what: what)
        return built
    }

    func readAirNow(_ m: inout YAMLMap, name: String, baseURL: String?, every: Int64?, what: String) -> (any Source)? {
        var built: (any Source)? = nil
        let key = secret(&m, "api_key", required: true, what: what)
        var locations: [AirNowSource.Location] = []
        if let n = m.required("locations", what: what), let items = file.list(n, what: "locations") {
            for item in items {
                guard var lm = file.map(item, what: "a location") else { continue }
                if let z = lm.value("zip_code") {
                    // By ZIP code instead of a point.
                    let d = lm.value("distance").flatMap { file.number($0, what: "distance") } ?? 25
                    for k in ["latitude", "longitude"] {
                        if let n = lm.value(k) {
                            file.error(n, "a location has zip_code or latitude/longitude, not both")
                        }
                    }
                    lm.rejectUnknown(known: ConfigKeys.airNowLocation, what: "a location")
                    guard let zip = file.string(z, what: "zip_code") else { continue }
                    guard zip.utf8.count == 5, zip.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                        file.error(z, "zip_code must be a 5-digit US ZIP code (quote it: \"02134\")")
                        continue
                    }
                    locations.append(.init(zipCode: zip, distance: d))
                    continue
                }
                let lat = lm.required("latitude", what: "the location").flatMap {
                    file.number($0, what: "latitude")
                }
                let lon = lm.required("longitude", what: "the location").flatMap {
                    file.number($0, what: "longitude")
                }
                let d = lm.value("distance").flatMap { file.number($0, what: "distance") } ?? 25
                lm.rejectUnknown(known: ConfigKeys.airNowLocation, what: "a location")
                if let lat, let lon { locations.append(.init(latitude: lat, longitude: lon, distance: d)) }
            }
        }
        let forecast = m.value("forecast").flatMap { file.bool($0, what: "forecast") } ?? false
        if let key {
            built = AirNowSource(
                name: name, baseURL: baseURL ?? AirNowSource.defaultBaseURL, every: every ?? 3_600,
                apiKey: key.value, locations: locations, forecast: forecast)
        }
        return built
    }

    func readOpenAQ(_ m: inout YAMLMap, name: String, baseURL: String?, every: Int64?, what: String) -> (any Source)? {
        var built: (any Source)? = nil
        let key = secret(&m, "api_key", required: true, what: what)
        var ids: [Int] = []
        if let n = m.required("locations", what: what), let items = file.list(n, what: "locations") {
            ids = items.compactMap { file.integer($0, what: "an OpenAQ location id") }
        }
        if let key {
            built = OpenAQSource(
                name: name, baseURL: baseURL ?? OpenAQSource.defaultBaseURL, every: every ?? 3_600,
                apiKey: key.value, locations: ids)
        }
        return built
    }

    func readOpenMeteo(_ m: inout YAMLMap, name: String, baseURL: String?, every: Int64?, what: String) -> (any Source)?
    {
        var built: (any Source)? = nil
        func url(_ key: String) -> String? {
            guard let n = m.value(key), let v = file.string(n, what: key) else { return nil }
            guard let u = URL(string: v), u.scheme == "http" || u.scheme == "https", u.host != nil else {
                file.error(n, "\(key) must be an http(s) URL, not \"\(v)\"")
                return nil
            }
            return v
        }
        var days = 16
        if let n = m.value("forecast_days"), let d = file.integer(n, what: "forecast_days") {
            if (1...16).contains(d) { days = d } else { file.error(n, "forecast_days must be 1 to 16") }
        }
        built = OpenMeteoSource(
            name: name, baseURL: baseURL ?? OpenMeteoSource.defaultBaseURL,
            archiveURL: url("archive_url") ?? OpenMeteoSource.defaultArchiveURL,
            geocodingURL: url("geocoding_url") ?? OpenMeteoSource.defaultGeocodingURL,
            every: every ?? 3 * 3_600, forecastDays: days)
        return built
    }

    func readOWM(_ m: inout YAMLMap, name: String, baseURL: String?, every: Int64?, what: String) -> (any Source)? {
        var built: (any Source)? = nil
        let key = secret(&m, "api_key", required: true, what: what)
        var endpoint = OWMSource.Endpoint.forecast
        if let n = m.value("endpoint"), let e = file.string(n, what: "endpoint") {
            if let v = OWMSource.Endpoint(rawValue: e) {
                endpoint = v
            } else {
                file.error(n, "endpoint must be forecast (5 day / 3 hour) or onecall, not \"\(e)\"")
            }
        }
        if let key {
            built = OWMSource(
                name: name, baseURL: baseURL ?? OWMSource.defaultBaseURL, every: every ?? 3 * 3_600,
                apiKey: key.value, endpoint: endpoint)
        }
        return built
    }

    func readNWSObservations(_ m: inout YAMLMap, name: String, baseURL: String?, every: Int64?, what: String) -> (
        any Source
    )? {
        var built: (any Source)? = nil
        built = nwsObservations(&m, name: name, baseURL: baseURL, every: every, what: what)
        return built
    }

    func readHTTPJSON(_ m: inout YAMLMap, name: String, baseURL: String?, every: Int64?, what: String) -> (any Source)?
    {
        var built: (any Source)? = nil
        built = httpJSON(&m, name: name, every: every, what: what)
        return built
    }

    func readNWSAlerts(_ m: inout YAMLMap, name: String, baseURL: String?, every: Int64?, what: String) -> (any Source)?
    {
        var built: (any Source)? = nil
        built = NWSAlertsSource(
            name: name, baseURL: baseURL ?? NWSAlertsSource.defaultBaseURL, every: every ?? 900)
        return built
    }

    func readWAQI(_ m: inout YAMLMap, name: String, baseURL: String?, every: Int64?, what: String) -> (any Source)? {
        var built: (any Source)? = nil
        let token = secret(&m, "token", required: true, what: what)
        let stations =
            m.required("stations", what: what).flatMap { file.stringList($0, what: "stations") } ?? []
        if let token {
            built = WAQISource(
                name: name, baseURL: baseURL ?? WAQISource.defaultBaseURL, every: every ?? 3_600,
                token: token.value, stations: stations)
        }
        return built
    }

    func readCWMS(_ m: inout YAMLMap, name: String, baseURL: String?, every: Int64?, what: String) -> (any Source)? {
        var built: (any Source)? = nil
        let office = m.required("office", what: what).flatMap { file.string($0, what: "office") }
        var unit = "EN"
        if let n = m.value("unit"), let u = file.string(n, what: "unit") {
            if ["EN", "SI"].contains(u.uppercased()) {
                unit = u.uppercased()
            } else {
                file.error(n, "unit must be EN or SI, not \"\(u)\"")
            }
        }
        var series: [CWMSSource.Series] = []
        if let n = m.required("timeseries", what: what), let items = file.list(n, what: "timeseries") {
            if items.isEmpty { file.error(n, "timeseries is empty") }
            for item in items {
                if item.scalar != nil, let s = file.string(item, what: "a time series name") {
                    series.append(.init(name: s))
                } else if var tm = file.map(item, what: "a time series") {
                    let ts = tm.required("name", what: "the time series").flatMap {
                        file.string($0, what: "name")
                    }
                    let metricNode = tm.value("metric")
                    let metric = metricNode.flatMap { file.string($0, what: "metric") }
                    if let metric, metric.isEmpty || metric.utf8.count > 128 {
                        file.error(metricNode, "metric must be 1 to 128 bytes")
                    }
                    tm.rejectUnknown(known: ConfigKeys.cwmsTimeSeries, what: "a time series")
                    if let ts { series.append(.init(name: ts, metric: metric)) }
                }
            }
            for (i, s) in series.enumerated() where s.name.split(separator: ".").count != 6 {
                file.error(
                    items[min(i, items.count - 1)],
                    "time series \"\(s.name)\" must be Location.Parameter.Type.Interval.Duration.Version")
            }
            // Two series given one metric at one location would overwrite each other.
            var named: [SeriesKey: String] = [:]
            for (i, s) in series.enumerated() {
                guard let metric = s.metric, let location = s.name.split(separator: ".").first else {
                    continue
                }
                let key = SeriesKey(station: String(location), metric: metric)
                if let other = named[key], other.lowercased() != s.name.lowercased() {
                    file.error(
                        items[min(i, items.count - 1)],
                        "time series \"\(s.name)\" and \"\(other)\" are both given metric \"\(metric)\": "
                            + "each series of a location needs a metric of its own")
                }
                named[key] = named[key] ?? s.name
            }
        }
        if let office {
            built = CWMSSource(
                name: name, baseURL: baseURL ?? CWMSSource.defaultBaseURL, every: every ?? 3_600,
                office: office, timeseries: series, unitSystem: unit, period: period(&m))
        }
        return built
    }
}
