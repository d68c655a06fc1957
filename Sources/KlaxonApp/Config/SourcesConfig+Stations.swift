import Foundation
import KlaxonCore
import KlaxonSources
import Yams

/// Reads the weather-station sources of `klaxon.yaml`: `nws-observations` and `http-json`.
extension ConfigReader {
    static let stationKeys = ["id", "name", "latitude", "longitude", "time_zone"]
    static let timeKeys = ["pointer", "format", "zone"]
    static let metricKeys = ["pointer", "unit", "scale", "offset"]

    func nwsObservations(_ m: inout YAMLMap, name: String, baseURL: String?, every: Int64?, what: String)
        -> NWSObservationsSource?
    {
        var units = StationUnits.metric
        if let n = m.value("units"), let s = file.string(n, what: "units") {
            if let u = StationUnits(rawValue: s) {
                units = u
            } else {
                file.error(n, "units must be metric (°C, km/h, hPa) or us (°F, mph, inHg), not \"\(s)\"")
            }
        }
        let latest = m.value("latest").flatMap { file.bool($0, what: "latest") } ?? false
        let hasPeriod = m.has("period")
        let period = period(&m, default: 2 * 86_400)
        if hasPeriod, period < 3_600 || period > 7 * 86_400 {
            file.error(m.value("period"), "period must be from 1h to 7d: NWS keeps about seven days of observations")
        }
        guard let n = m.required("stations", what: what), let list = file.stringList(n, what: "stations") else {
            return nil
        }
        if list.isEmpty { file.error(n, "stations is empty") }
        var stations: [String] = []
        for s in list {
            let id = s.uppercased()
            if id.isEmpty || id.utf8.count > 16 || !id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) {
                file.error(n, "\"\(s)\" is not an NWS station id (letters and digits, like KMWN)")
            } else if stations.contains(id) {
                file.error(n, "station \(id) is listed twice")
            } else {
                stations.append(id)
            }
        }
        return NWSObservationsSource(
            name: name, baseURL: baseURL ?? NWSObservationsSource.defaultBaseURL, every: every ?? 600,
            stations: stations, units: units, period: period, latest: latest)
    }

    func httpJSON(_ m: inout YAMLMap, name: String, every: Int64?, what: String) -> HTTPJSONSource? {
        if let n = m.value("base_url") { file.error(n, "\(what): an http-json source takes url:, not base_url:") }
        let urlNode = m.value("url") ?? m.value("url_file")
        let urlIsSecret =
            m.value("url_file") != nil || (m.value("url").flatMap { $0.scalar?.string.contains("${") } ?? false)
        let url = secret(&m, "url", required: true, what: what)
        if let url {
            let u = URL(string: url.value)
            if u?.host == nil || !["http", "https"].contains(u?.scheme ?? "") {
                file.error(urlNode, "\(what): url must be an http:// or https:// URL")
            }
        }
        let records = m.value("records").flatMap { pointer($0, what: "records") } ?? JSONPointer("")!

        // The station.
        var station: StationInfo? = nil
        if let n = m.required("station", what: what), var sm = file.map(n, what: "station") {
            let id = sm.required("id", what: "station").flatMap { file.string($0, what: "station.id") }
            if let id, let node = sm.value("id"), id.isEmpty || id.utf8.count > 128 || id.contains(where: \.isNewline) {
                file.error(node, "station.id must be 1 to 128 bytes on one line")
            }
            let stationName = sm.value("name").flatMap { file.string($0, what: "station.name") }
            let latitude = sm.value("latitude").flatMap { coordinate($0, what: "station.latitude", limit: 90) }
            let longitude = sm.value("longitude").flatMap { coordinate($0, what: "station.longitude", limit: 180) }
            if (sm.has("latitude")) != (sm.has("longitude")) {
                file.error(n, "station: give latitude and longitude together")
            }
            let stationZone = sm.value("time_zone").flatMap { self.zone($0, what: "station.time_zone") }
            sm.rejectUnknown(known: Self.stationKeys, what: "station")
            if let id {
                station = StationInfo(
                    id: id, source: HTTPJSONSource.kindName, name: stationName, latitude: latitude,
                    longitude: longitude, timeZone: stationZone)
            }
        }

        // The time of each record.
        var time: (JSONPointer, StationTimeFormat, String?)? = nil
        if let n = m.required("time", what: what) {
            if n.scalar != nil {
                // `time: /obsTime`: an ISO 8601 time at that pointer.
                if let p = pointer(n, what: "time") { time = (p, .iso8601, nil) }
            } else if var tm = file.map(n, what: "time") {
                let p = tm.required("pointer", what: "time").flatMap { pointer($0, what: "time.pointer") }
                var format = StationTimeFormat.iso8601
                if let fn = tm.value("format"), let f = file.string(fn, what: "time.format") {
                    switch StationTimeFormat.read(f) {
                    case .success(let v): format = v
                    case .failure(let problem): file.error(fn, "time.format \"\(f)\": \(problem)")
                    }
                }
                let timeZone = tm.value("zone").flatMap { self.zone($0, what: "time.zone") }
                tm.rejectUnknown(known: Self.timeKeys, what: "time")
                if let p { time = (p, format, timeZone) }
            }
        }
        if case (_, let format, let zone)? = time, zone == nil, station?.timeZone == nil, !format.mayCarryOffset {
            file.error(
                m.value("time"),
                "time.format \"\(format)\" has no offset (%z): give time.zone or station.time_zone, "
                    + "the IANA zone its times are in")
        }

        // The metrics.
        var metrics: [HTTPJSONLayout.Metric] = []
        if let n = m.required("metrics", what: what), var mm = file.map(n, what: "metrics") {
            if mm.entries.isEmpty { file.error(n, "metrics is empty") }
            for (metric, node) in mm.entries {
                if metric.isEmpty || metric.utf8.count > 128 || metric.contains(where: { $0.isWhitespace || $0 == "," })
                {
                    file.error(node, "metric name \"\(metric)\" must be 1 to 128 bytes without spaces or commas")
                    continue
                }
                guard var em = file.map(node, what: "metrics.\(metric)") else { continue }
                let p = em.required("pointer", what: "metrics.\(metric)").flatMap {
                    pointer($0, what: "metrics.\(metric).pointer")
                }
                let unit = em.value("unit").flatMap { file.string($0, what: "metrics.\(metric).unit") }
                if let unit, unit.utf8.count > 32 || unit.contains(where: \.isNewline) {
                    file.error(em.value("unit"), "metrics.\(metric).unit must be at most 32 bytes on one line")
                }
                let scale = em.value("scale").flatMap { file.number($0, what: "metrics.\(metric).scale") } ?? 1
                let offset = em.value("offset").flatMap { file.number($0, what: "metrics.\(metric).offset") } ?? 0
                if scale == 0 || abs(scale) > 1e9 {
                    file.error(em.value("scale"), "metrics.\(metric).scale must be non-zero and at most 1e9")
                }
                if abs(offset) > 1e9 { file.error(em.value("offset"), "metrics.\(metric).offset must be at most 1e9") }
                em.rejectUnknown(known: Self.metricKeys, what: "metrics.\(metric)")
                if let p {
                    metrics.append(
                        .init(
                            name: metric, pointer: p, unit: unit?.isEmpty == true ? nil : unit, scale: scale,
                            offset: offset))
                }
            }
            mm.markAllUsed()
        }

        // Headers, whose values may be secrets: `Name: "Bearer ${TOKEN}"` or `Name: {file: PATH}`.
        var headers: [(String, String)] = []
        if let n = m.value("headers"), var hm = file.map(n, what: "headers") {
            for (header, node) in hm.entries {
                guard header.utf8.count <= 128,
                    header.utf8.allSatisfy({ $0 > 32 && $0 < 127 && $0 != UInt8(ascii: ":") })
                else {
                    file.error(node, "header name \"\(header)\" is not a valid HTTP header name")
                    continue
                }
                if node.scalar != nil {
                    if let v = file.string(node, what: "headers.\(header)").flatMap({
                        expand($0, node: node, what: "headers.\(header)")
                    }) {
                        headers.append((header, v))
                    }
                } else if var fm = file.map(node, what: "headers.\(header) (a value or {file: PATH})") {
                    if let v = secret(&fm, "value", required: true, what: "headers.\(header)") {
                        headers.append((header, v.value))
                    }
                    fm.rejectUnknown(known: ConfigKeys.httpJSONHeader, what: "headers.\(header)")
                }
            }
            for (header, value) in headers where value.contains(where: { $0 == "\r" || $0 == "\n" }) {
                file.error(n, "headers.\(header): the value holds a line break")
            }
            hm.markAllUsed()
        }

        guard let url, let station, let time else { return nil }
        let layout = HTTPJSONLayout(
            records: records, time: time.0, timeFormat: time.1, timeZone: time.2 ?? station.timeZone,
            station: station, metrics: metrics)
        return HTTPJSONSource(
            name: name, url: url.value, every: every ?? 600, layout: layout, headers: headers,
            urlIsSecret: urlIsSecret)
    }

    func pointer(_ node: Node, what: String) -> JSONPointer? {
        guard let text = file.string(node, what: what) else { return nil }
        switch JSONPointer.read(text) {
        case .success(let p): return p
        case .failure(let problem):
            file.error(node, "\(what) \"\(ParseErrorText.excerpt(text))\" is not a JSON pointer: it \(problem)")
            return nil
        }
    }

    func coordinate(_ node: Node, what: String, limit: Double) -> Double? {
        guard let v = file.number(node, what: what) else { return nil }
        guard abs(v) <= limit else {
            file.error(node, "\(what) must be from -\(Int(limit)) to \(Int(limit)), not \(formatValue(v))")
            return nil
        }
        return v
    }

    func zone(_ node: Node, what: String) -> String? {
        guard let s = file.string(node, what: what) else { return nil }
        guard s.utf8.count <= 64, TimeZone(identifier: s) != nil else {
            file.error(node, "\(what) \"\(s)\" is not an IANA time zone (like America/New_York)")
            return nil
        }
        return s
    }
}

/// Short excerpts of user text for messages.
enum ParseErrorText {
    static func excerpt(_ text: String) -> String { text.count > 60 ? String(text.prefix(60)) + "…" : text }
}
