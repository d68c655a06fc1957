import Foundation
import KlaxonCore

/// River forecasts (issue 42, item 1): each issuance of a gauge's forecast hydrograph as a
/// `FloodForecast`, apart from its observations, from the three ways the NWS publishes it.
///
/// - NWPS (`https://api.water.noaa.gov/nwps/v1`, its OpenAPI): `/gauges/{lid}/stageflow` is
///   `{observed: S, forecast: S}`, `/gauges/{lid}/stageflow/forecast` is `S` alone, where `S` is
///   `{pedts, issuedTime, primaryName, primaryUnits, secondaryName, secondaryUnits, data: [{validTime,
///   generatedTime, primary, secondary}]}`; `-999` is an unavailable value, `-9999` an undefined one.
///   The body does not name its gauge: the caller says which it asked for.
/// - The HML product (`HMLxxx`, hydrometeorological XML): many `<site id="LID">` per product, each
///   with `<observed>` and `<forecast issued="…">` holding `<datum><valid timezone="UTC">…</valid>
///   <primary name="Stage" units="ft">…</primary><secondary name="Flow" units="kcfs">…</secondary>
///   </datum>`; as distributed it may be wrapped in the text product's WMO header, with control
///   characters and `\r\r\n` line ends.
/// - AHPS `hydrograph.php?output=xml`: one `<site>` root of the same shape.
///
/// Units: stage in ft (m converted), flow in ft³/s (kcfs ×1000, m³/s converted). A value at or below
/// −999 is missing (a gap). Each item that cannot be stored — a series in an unknown unit or of an
/// unknown kind, a forecast without an issue time or without points, a site without an id — is a
/// `ForecastSkip` with its reason, never a guess.
public enum FloodForecastParser {
    public static let nwpsFormat = "nwps-json"
    public static let hmlFormat = "hml"
    public static let ahpsFormat = "ahps-xml"

    /// The most sites one HML product is read for (a product holds tens to a few hundred).
    public static let maxSites = 5_000

    // MARK: - NWPS

    /// Whether an NWPS stageflow body carries a forecast (`forecast`, or a series whose `pedts`
    /// type is forecast, `HGIFF`): cheap, for callers deciding how to read a body.
    public static func isNWPSForecast(_ object: [String: JSONValue]) -> Bool {
        if object["forecast"]?.object != nil { return true }
        if object["data"]?.array != nil, let pedts = object["pedts"]?.string { return isForecastPEDTS(pedts) }
        return false
    }

    /// SHEF PEDTS: physical element (2), duration (1), type (1: F forecast, R reading), source (1).
    static func isForecastPEDTS(_ pedts: String) -> Bool {
        let c = Array(pedts.utf8)
        return c.count >= 4 && (c[3] == UInt8(ascii: "F") || c[3] == UInt8(ascii: "f"))
    }

    /// A stageflow body's forecast issuance (stage and flow) and its observed readings, stored under
    /// `station`; `site` names the gauge in skips (its LID).
    public static func nwps(_ data: Data, station: String, site: String? = nil) throws -> SourceBatch {
        let body = try JSONInput.decode(NWPSBody.self, from: data, format: nwpsFormat)
        let site = site ?? station
        var batch = SourceBatch()
        if let observed = body.observed {
            batch.append(try observedNWPS(observed, station: station))
        }
        if let forecast = body.forecast {
            forecasts(from: forecast, station: station, site: site, into: &batch)
        }
        if body.observed == nil && body.forecast == nil {
            throw ParseError(.missingField, format: nwpsFormat, "missing field 'forecast' (or 'observed')")
        }
        return batch
    }

    static func observedNWPS(_ s: NWPSSeries, station: String) throws -> SourceBatch {
        let encoded = try JSONEncoder().encode(s.observedShape)
        return try NWPSParser.stageflow(encoded, station: station)
    }

    static func forecasts(from s: NWPSSeries, station: String, site: String, into batch: inout SourceBatch) {
        var issued = NWPSParser.time(s.issuedTime)
        if issued == nil {
            issued = s.data.compactMap { NWPSParser.time($0.generatedTime) }.max()
        }
        guard let issued else {
            batch.forecastSkips.append(ForecastSkip(site: site, reason: "the forecast has no issuedTime"))
            return
        }
        var series: [(name: String?, unit: String?, values: [(Int64, Double?)])] = [
            (s.primaryName ?? "Stage", s.primaryUnits, []), (s.secondaryName ?? "Flow", s.secondaryUnits, []),
        ]
        for (index, p) in s.data.enumerated() {
            guard let t = Timestamp.parse(p.validTime) else {
                batch.forecastSkips.append(
                    ForecastSkip(
                        site: site,
                        reason: "bad time '\(ParseError.excerpt(p.validTime, limit: 40))' in forecast data[\(index)]"))
                continue
            }
            series[0].values.append((t, p.primary))
            series[1].values.append((t, p.secondary))
        }
        for (i, one) in series.enumerated() {
            // A series entirely missing is not published (NWPS sends -999 for a flow it does not forecast).
            if i == 1, !one.values.contains(where: { NWPSParser.defined($0.1) != nil }) { continue }
            add(
                name: one.name, unit: one.unit, values: one.values, station: station, site: site, issued: issued,
                source: "nwps", into: &batch)
        }
    }

    /// One forecast series into the batch: converted, or skipped with its reason.
    static func add(
        name: String?, unit: String?, values: [(Int64, Double?)], station: String, site: String, issued: Int64,
        source: String, into batch: inout SourceBatch
    ) {
        guard let (metric, convert, unitName) = kind(name: name, unit: unit) else {
            batch.forecastSkips.append(
                ForecastSkip(
                    site: site,
                    reason:
                        "a forecast of \(ParseError.excerpt(name ?? "?", limit: 20)) in \(ParseError.excerpt(unit ?? "no unit", limit: 20)): not a stage or flow unit Klaxon reads"
                ))
            return
        }
        var points: [FloodForecast.Point] = []
        for (t, v) in values {
            guard let v, v.isFinite, v > -999 else {
                batch.gaps += 1
                continue
            }
            points.append(FloodForecast.Point(time: t, value: convert(v)))
        }
        guard !points.isEmpty else {
            batch.forecastSkips.append(ForecastSkip(site: site, reason: "a \(metric) forecast without values"))
            return
        }
        var f = FloodForecast(
            station: station, metric: metric, issued: issued, unit: unitName, source: source, points: points)
        let cut = f.normalize()
        if cut > 0 {
            batch.forecastSkips.append(
                ForecastSkip(site: site, reason: "\(cut) forecast points past the first \(FloodForecast.maxPoints)"))
        }
        batch.forecasts.append(f)
    }

    /// The metric, the conversion to Klaxon's unit and that unit, for a series' name and unit.
    static func kind(name: String?, unit: String?) -> (String, (Double) -> Double, String)? {
        let n = (name ?? "").lowercased().trimmingCharacters(in: .whitespaces)
        let u = (unit ?? "").lowercased().trimmingCharacters(in: .whitespaces)
        func r(_ v: Double) -> Double { (v * 1000).rounded() / 1000 }
        switch u {
        case "ft", "feet", "foot": return n == "flow" ? nil : ("gage_height", { $0 }, "ft")
        case "m", "meters", "metres", "meter":
            return n == "flow" ? nil : ("gage_height", { r($0 * 3.280_839_895) }, "ft")
        case "kcfs": return n == "stage" ? nil : ("discharge", { r($0 * 1000) }, "ft³/s")
        case "cfs", "ft3/s", "ft^3/s", "ft³/s": return n == "stage" ? nil : ("discharge", { $0 }, "ft³/s")
        case "cms", "m3/s", "m^3/s", "m³/s":
            return n == "stage" ? nil : ("discharge", { r($0 * 35.314_666_72) }, "ft³/s")
        case "kcms": return n == "stage" ? nil : ("discharge", { r($0 * 35_314.666_72) }, "ft³/s")
        default: return nil
        }
    }

    struct NWPSSeries: Codable {
        struct Point: Codable {
            var validTime: String
            var generatedTime: String?
            var primary: Double?
            var secondary: Double?
        }
        var pedts: String?
        var issuedTime: String?
        var primaryName: String?
        var primaryUnits: String?
        var secondaryName: String?
        var secondaryUnits: String?
        var data: [Point]

        /// As `NWPSParser.stageflow` reads an observed series.
        var observedShape: [String: JSONValue] {
            var o: [String: JSONValue] = [:]
            if let primaryUnits { o["primaryUnits"] = .string(primaryUnits) }
            if let secondaryUnits { o["secondaryUnits"] = .string(secondaryUnits) }
            o["data"] = .array(
                data.map { p in
                    var d: [String: JSONValue] = ["validTime": .string(p.validTime)]
                    if let v = p.primary { d["primary"] = .number(v) }
                    if let v = p.secondary { d["secondary"] = .number(v) }
                    return .object(d)
                })
            return o
        }
    }

    /// `{observed, forecast}`, or one series whose `pedts` says which it is (a forecast's type is `F`).
    struct NWPSBody: Decodable {
        var observed: NWPSSeries?
        var forecast: NWPSSeries?

        enum Keys: String, CodingKey { case observed, forecast, data, pedts }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            if c.contains(.observed) || c.contains(.forecast) {
                observed = try c.decodeIfPresent(NWPSSeries.self, forKey: .observed)
                forecast = try c.decodeIfPresent(NWPSSeries.self, forKey: .forecast)
            } else if c.contains(.data) {
                let series = try NWPSSeries(from: decoder)
                if FloodForecastParser.isForecastPEDTS(series.pedts ?? "") {
                    forecast = series
                } else {
                    observed = series
                }
            }
        }
    }

    /// The NWS LID a saved NWPS body was asked for, from its file's name: a part of the last path
    /// component (split at anything not a letter or digit) shaped like a LID — 3 or 4 letters and a
    /// digit (`PRTO3`, `stageflow_PRTO3.json`, `gauges-prto3-stageflow-forecast.json`), uppercased.
    /// Nil when the name holds none, or two different ones.
    public static func gaugeID(fileName path: String) -> String? {
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        var found: String?
        for part in name.split(whereSeparator: { !($0.isASCII && ($0.isLetter || $0.isNumber)) }) {
            let chars = Array(part)
            guard chars.count == 4 || chars.count == 5, chars.last!.isNumber,
                chars.dropLast().allSatisfy({ $0.isLetter })
            else { continue }
            let id = part.uppercased()
            if let found, found != id { return nil }
            found = id
        }
        return found
    }

    // MARK: - HML and AHPS XML

    /// Every site of an HML product: its observed readings (source `hml`) and its forecast issuance,
    /// stored under the site's id (its LID).
    public static func hml(_ data: Data) throws -> SourceBatch {
        let root = try document(data, format: hmlFormat)
        let sites = root.name == "site" ? [root] : root.descendants("site")
        guard !sites.isEmpty else {
            throw ParseError(.missingField, format: hmlFormat, "no <site> in the product")
        }
        var batch = SourceBatch()
        for (index, site) in sites.enumerated() {
            guard index < maxSites else {
                batch.forecastSkips.append(
                    ForecastSkip(site: "?", reason: "\(sites.count - maxSites) sites past the first \(maxSites)"))
                break
            }
            read(site: site, source: "hml", into: &batch)
        }
        return batch
    }

    /// An AHPS `hydrograph.php?output=xml` document: one `<site>` root.
    public static func ahps(_ data: Data) throws -> SourceBatch {
        let root = try document(data, format: ahpsFormat)
        guard root.name == "site" else {
            throw ParseError(
                .notTheFormat, format: ahpsFormat,
                "the root element is <\(ParseError.excerpt(root.name, limit: 40))>, not <site>")
        }
        var batch = SourceBatch()
        read(site: root, source: "ahps", into: &batch)
        return batch
    }

    static func document(_ data: Data, format: String) throws -> HydroXML.Element {
        guard data.contains(UInt8(ascii: "<")) else {
            throw ParseError(.notTheFormat, format: format, "not XML: no element at all")
        }
        do {
            return try HydroXML.parse(data)
        } catch let e as HydroXML.Failure {
            throw ParseError(.malformed, format: format, "not well-formed XML at byte \(e.offset): \(e.message)")
        }
    }

    static func read(site: HydroXML.Element, source: String, into batch: inout SourceBatch) {
        let raw = (site.attributes["id"] ?? site.attributes["lid"] ?? "").trimmingCharacters(in: .whitespaces)
        guard !raw.isEmpty, raw.utf8.count <= 32, raw.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
        else {
            batch.forecastSkips.append(
                ForecastSkip(site: "?", reason: "a <site> without a usable id '\(ParseError.excerpt(raw, limit: 20))'"))
            return
        }
        let id = raw.uppercased()
        for observed in site.children("observed") {
            for datum in observed.children("datum") {
                guard let t = validTime(datum, zone: observed.attributes["timezone"]) else {
                    batch.forecastSkips.append(
                        ForecastSkip(site: id, reason: "an observed <datum> without a valid time"))
                    continue
                }
                for element in [datum.child("primary"), datum.child("secondary")].compactMap({ $0 }) {
                    guard let v = Double(element.trimmedText), v.isFinite, v > -999 else {
                        batch.gaps += 1
                        continue
                    }
                    guard
                        let (metric, convert, unit) = kind(
                            name: element.attributes["name"], unit: element.attributes["units"])
                    else {
                        batch.gaps += 1
                        continue
                    }
                    batch.readings.append(
                        Reading(station: id, metric: metric, time: t, value: convert(v), unit: unit, source: source))
                }
            }
        }
        for forecast in site.children("forecast") {
            let zone = forecast.attributes["timezone"]
            guard let issuedText = forecast.attributes["issued"], let issued = time(issuedText, zone: zone) else {
                batch.forecastSkips.append(
                    ForecastSkip(site: id, reason: "a <forecast> without a readable issued time"))
                continue
            }
            var byName: [String: (unit: String?, values: [(Int64, Double?)])] = [:]
            var order: [String] = []
            for datum in forecast.children("datum") {
                guard let t = validTime(datum, zone: zone) else {
                    batch.forecastSkips.append(
                        ForecastSkip(site: id, reason: "a forecast <datum> without a valid time"))
                    continue
                }
                for element in [datum.child("primary"), datum.child("secondary")].compactMap({ $0 }) {
                    let name = element.attributes["name"] ?? ""
                    if byName[name] == nil {
                        order.append(name)
                        byName[name] = (element.attributes["units"], [])
                    }
                    byName[name]!.values.append((t, Double(element.trimmedText)))
                }
            }
            if order.isEmpty {
                batch.forecastSkips.append(ForecastSkip(site: id, reason: "a <forecast> without values"))
            }
            for name in order {
                let s = byName[name]!
                // A flow the office does not forecast comes as all -999: not a series.
                if name.lowercased() == "flow", !s.values.contains(where: { ($0.1 ?? -999) > -999 }) { continue }
                add(
                    name: name, unit: s.unit, values: s.values, station: id, site: id, issued: issued, source: source,
                    into: &batch)
            }
        }
    }

    static func validTime(_ datum: HydroXML.Element, zone: String?) -> Int64? {
        guard let valid = datum.child("valid") else { return nil }
        return time(valid.trimmedText, zone: valid.attributes["timezone"] ?? zone)
    }

    /// An ISO 8601 time; one without an offset only when its zone is UTC (`timezone="UTC"`, `GMT`, `Z`).
    static func time(_ text: String, zone: String?) -> Int64? {
        let text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if let t = Timestamp.parse(text) { return t }
        switch zone?.uppercased() {
        case "UTC", "GMT", "Z": return Timestamp.parse(text + "Z")
        default: return nil
        }
    }
}
