import Foundation
import KlaxonCore
import KlaxonSources
import PropertyBased
import Testing

@testable import KlaxonApp

/// Payloads in every `klaxon ingest --format`, mutated at random (a field dropped or nulled, a value of
/// the wrong type, a huge or impossible number, another time zone, the file cut short), hold one
/// property: the outcome is a clear error (`ParseError` or `UserError`, worded), or rows that are
/// exactly right for the mutated payload. Never a crash, never a wrong row:
/// - a dropped, nulled or wrongly typed field may leave a row without what that field said (a field
///   nil or empty), never with something else;
/// - a huge number is refused, or stored as exactly that number where the payload put it (never as
///   infinity, never wrapped or clamped into a plausible value);
/// - another time zone moves the times it governs by exactly the difference, and nothing else.
@Suite("payload properties: mutated payloads give a clear error or exactly-right rows")
struct PayloadPropertyTests {
    /// Our own payloads in each format (written in the services' formats, not recorded responses).
    static let cases: [(IngestFormat, String)] = [
        (.usgsIVJSON, "iv_two_methods_dst.json"), (.usgsIVJSON, "dv_two_sites.json"),
        (.usgsRDB, "iv_est_edt.rdb"), (.usgsRDB, "dv.rdb"),
        (.usgsOGCJSON, "ogc_continuous_page.json"), (.usgsOGCJSON, "ogc_daily_last_page.json"),
        (.usgsOGCJSON, "ogc_monitoring_locations.json"),
        (.cwmsJSON, "cwms_page_null_next.json"),
        (.usgsQuakes, "quakes_all_day.geojson"), (.usgsQuakes, "quakes_detail.geojson"),
        (.openMeteoJSON, "wx_open_meteo_forecast_denver_fahrenheit.json"),
        (.owmJSON, "wx_owm_forecast_5day_denver_standard.json"),
        (.owmJSON, "wx_owm_onecall_chicago_imperial_alerts.json"),
        (.airnowJSON, "aqi_airnow_2026.json"), (.airnowJSON, "aqi_airnow_legacy.json"),
        (.openaqJSON, "aqi_openaq_location.json"), (.waqiJSON, "aqi_waqi_ok.json"),
        (.nwsObservations, "wx_nws_observations_kmwn.json"), (.nwsObservations, "wx_nws_station_kmwn.json"),
    ]

    static func fixture(_ name: String) throws -> Data {
        try Data(contentsOf: packageRoot.appendingPathComponent("Tests/KlaxonSourcesTests/Fixtures/\(name)"))
    }

    @Test("each payload, unmutated, parses to rows", arguments: cases.indices)
    func baseline(_ index: Int) throws {
        let (format, name) = Self.cases[index]
        let batch = try format.parse(try Self.fixture(name), now: 1_767_225_600)
        #expect(!Records(batch).all.isEmpty, "\(name) as \(format.rawValue) gave no rows")
    }

    static let kinds = Gen.element(of: Mutation.Kind.allCases)
    static let picks = Gen.int(in: 0...1_000_000)

    /// The same 200 mutations of each payload every run (a fixed seed): the suite stays the same.
    @Test("mutated payloads: a clear error or exactly-right rows", arguments: cases.indices)
    func mutated(_ index: Int) throws {
        let (format, name) = Self.cases[index]
        let original = try Self.fixture(name)
        let base = Records(try format.parse(original, now: 1_767_225_600))
        var rng = Xoshiro(seed: (0x6b6c_6178_6f6e, 15, UInt64(index), 0x9e37_79b9_7f4a_7c15))
        for _ in 0..<200 {
            let kind = Self.kinds.run(using: &rng)
            let (pick, variant) = (Self.picks.run(using: &rng), Self.picks.run(using: &rng))
            if let problem = Self.check(format, name, original, base, kind, pick, variant) {
                Issue.record(Comment(rawValue: problem))
                return
            }
        }
    }

    /// New mutations each run, with swift-property-based's shrinking and seeds to replay a failure:
    /// `KLAXON_EXPLORE=1 swift test --filter PayloadPropertyTests`.
    @Test(
        "mutated payloads, explored with fresh seeds",
        .enabled(if: ProcessInfo.processInfo.environment["KLAXON_EXPLORE"] != nil),
        arguments: cases.indices)
    func explored(_ index: Int) async throws {
        let (format, name) = Self.cases[index]
        let original = try Self.fixture(name)
        let base = Records(try format.parse(original, now: 1_767_225_600))
        await propertyCheck(count: 2_000, input: Self.kinds, Self.picks, Self.picks) { kind, pick, variant in
            if let problem = Self.check(format, name, original, base, kind, pick, variant) {
                Issue.record(Comment(rawValue: problem))
            }
        }
    }

    /// What is wrong with the outcome of one mutation, or nil.
    static func check(
        _ format: IngestFormat, _ name: String, _ original: Data, _ base: Records, _ kind: Mutation.Kind?, _ pick: Int,
        _ variant: Int
    ) -> String? {
        let isJSON = (try? JSONSerialization.jsonObject(with: original)) != nil
        guard let kind, let mutation = Mutation.make(kind, of: original, json: isJSON, pick: pick, variant: variant)
        else {
            return nil
        }
        let context = "\(name) as \(format.rawValue), \(mutation.summary)"
        switch Result(catching: { try format.parse(mutation.data, now: 1_767_225_600) }) {
        case .failure(let error):
            let clear = (error as? ParseError).map { "\($0)" } ?? (error as? UserError)?.message
            return clear?.isEmpty == false ? nil : "\(context): an unclear error \(type(of: error)): \(error)"
        case .success(let batch):
            for row in Records(batch).all {
                if let problem = Records.problem(of: row, against: base, mutation: mutation) {
                    return "\(context): \(problem)"
                }
            }
            return nil
        }
    }
}

/// One random change to a payload, and what it lets a row differ by.
struct Mutation {
    enum Kind: CaseIterable {
        case drop, null, wrongType, huge, timeZone, truncate, garbleField
    }

    var kind: Kind
    var data: Data
    var summary: String
    /// `.huge`: the number that went in (as a Double), if finite.
    var injected: Double?
    /// `.huge`: the token that went in.
    var token: String? = nil
    /// `.timeZone`: seconds the times it governs move by.
    var shift: Int64 = 0

    static let hugeTokens = [
        "1e400", "-1e400", "1e308", "-1e308", "9223372036854775808", "-9223372036854775809", "1e19",
        "123456789012345678901234567890",
    ]
    static let zones: [(String, Int64)] = [
        ("Z", 0), ("+14:00", 50_400), ("-12:00", -43_200), ("+05:45", 20_700), ("-09:30", -34_200),
    ]
    static let placeholder = "\u{1}MUTATION\u{1}"

    static func make(_ kind: Kind, of data: Data, json: Bool, pick: Int, variant: Int) -> Mutation? {
        if kind == .truncate {
            guard data.count > 1 else { return nil }
            let cut = 1 + variant % (data.count - 1)
            return Mutation(kind: kind, data: data.prefix(cut), summary: "cut at byte \(cut) of \(data.count)")
        }
        return json
            ? jsonMutation(kind, of: data, pick: pick, variant: variant)
            : textMutation(kind, of: data, pick: pick, variant: variant)
    }

    // MARK: JSON

    static func jsonMutation(_ kind: Kind, of data: Data, pick: Int, variant: Int) -> Mutation? {
        guard let root = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else { return nil }
        var paths: [[PathStep]] = []
        collect(root, at: [], into: &paths)
        let eligible = paths.filter { path in
            guard !path.isEmpty, let node = value(in: root, at: path) else { return false }
            switch kind {
            // Numbers, and numbers written as text where a value is (NWIS `"value": "4.10"`).
            case .huge:
                if isNumber(node) { return true }
                guard path.contains(where: { if case .key("values") = $0 { true } else { false } }),
                    let text = node as? String
                else { return false }
                return Double(text) != nil
            case .timeZone: return (node as? String).map { zoneRange(in: $0) != nil } == true
            case .garbleField: return node is String
            case .wrongType: return !(node is NSNull)
            default: return true
            }
        }
        guard !eligible.isEmpty else { return nil }
        let path = eligible[pick % eligible.count]
        let node = value(in: root, at: path)!
        var raw: String? = nil
        var garbled: String? = nil
        var injected: Double? = nil
        var shift: Int64 = 0
        let replacement: Any?
        switch kind {
        case .drop:
            replacement = nil
        case .null:
            replacement = NSNull()
        case .wrongType:
            let choices: [Any] =
                node is String ? [[String: Any](), [Any]()] : isNumber(node) ? ["12abc", [Any]()] : ["x"]
            replacement = choices[variant % choices.count]
            if let text = replacement as? String { raw = "\"\(text)\"" }
        case .huge:
            let token = hugeTokens[variant % hugeTokens.count]
            let number = Double(token)
            injected = number.flatMap { $0.isFinite ? $0 : nil }
            raw = node is String ? "\"\(token)\"" : token
            replacement = placeholder
        case .timeZone:
            let text = node as! String
            let range = zoneRange(in: text)!
            let old = zoneSeconds(String(text[range]))
            let (zone, seconds) = zones[variant % zones.count]
            shift = old - seconds
            replacement = text.replacingCharacters(in: range, with: zone)
        case .garbleField:
            let choices = ["\u{0}", String(repeating: "x", count: 5000)]
            replacement = choices[variant % choices.count]
            garbled = replacement as? String
        case .truncate:
            return nil
        }
        let mutated = set(root, at: path, to: replacement)
        guard var text = try? JSONSerialization.data(withJSONObject: mutated, options: [.fragmentsAllowed]) else {
            return nil
        }
        if let raw, kind == .huge {
            let s = String(decoding: text, as: UTF8.self)
                .replacingOccurrences(of: "\"\(jsonEscaped(placeholder))\"", with: raw)
            text = Data(s.utf8)
        }
        let where_ = path.map(\.description).joined()
        return Mutation(
            kind: kind, data: text, summary: "\(kind) at \(where_)\(raw.map { " → \($0)" } ?? "")", injected: injected,
            token: garbled ?? raw.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }, shift: shift)
    }

    enum PathStep: CustomStringConvertible {
        case key(String)
        case index(Int)
        var description: String {
            switch self {
            case .key(let k): ".\(k)"
            case .index(let i): "[\(i)]"
            }
        }
    }

    static func collect(_ node: Any, at path: [PathStep], into paths: inout [[PathStep]]) {
        paths.append(path)
        if let object = node as? [String: Any] {
            for key in object.keys.sorted() { collect(object[key]!, at: path + [.key(key)], into: &paths) }
        } else if let array = node as? [Any] {
            for (i, element) in array.enumerated() { collect(element, at: path + [.index(i)], into: &paths) }
        }
    }

    static func value(in node: Any, at path: [PathStep]) -> Any? {
        var current: Any = node
        for step in path {
            switch step {
            case .key(let k):
                guard let next = (current as? [String: Any])?[k] else { return nil }
                current = next
            case .index(let i):
                guard let array = current as? [Any], i < array.count else { return nil }
                current = array[i]
            }
        }
        return current
    }

    /// `root` with the node at `path` replaced (nil: removed).
    static func set(_ node: Any, at path: [PathStep], to replacement: Any?) -> Any {
        guard let step = path.first else { return replacement ?? NSNull() }
        let rest = Array(path.dropFirst())
        switch step {
        case .key(let k):
            var object = node as! [String: Any]
            if rest.isEmpty, replacement == nil {
                object.removeValue(forKey: k)
            } else {
                object[k] = set(object[k]!, at: rest, to: replacement)
            }
            return object
        case .index(let i):
            var array = node as! [Any]
            if rest.isEmpty, replacement == nil {
                array.remove(at: i)
            } else {
                array[i] = set(array[i], at: rest, to: replacement)
            }
            return array
        }
    }

    static func isNumber(_ node: Any) -> Bool {
        guard let n = node as? NSNumber else { return false }
        return String(cString: n.objCType) != "c"  // not a Bool
    }

    static func jsonEscaped(_ s: String) -> String {
        let data = try! JSONSerialization.data(withJSONObject: [s], options: [.fragmentsAllowed])
        let text = String(decoding: data, as: UTF8.self)
        return String(text.dropFirst(2).dropLast(2))
    }

    /// Where an ISO 8601 time with a zone keeps its zone (`Z` or `±hh:mm`).
    static func zoneRange(in text: String) -> Range<String.Index>? {
        let iso = #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$"#
        guard text.count >= 17, text.count <= 40, text.range(of: iso, options: .regularExpression) != nil else {
            return nil
        }
        if text.hasSuffix("Z") { return text.index(before: text.endIndex)..<text.endIndex }
        return text.index(text.endIndex, offsetBy: -6)..<text.endIndex
    }

    static func zoneSeconds(_ zone: String) -> Int64 {
        guard zone != "Z" else { return 0 }
        let sign: Int64 = zone.hasPrefix("-") ? -1 : 1
        let parts = zone.dropFirst().split(separator: ":").compactMap { Int64($0) }
        return sign * (parts[0] * 3600 + parts[1] * 60)
    }

    // MARK: text (RDB)

    static func textMutation(_ kind: Kind, of data: Data, pick: Int, variant: Int) -> Mutation? {
        var lines = String(decoding: data, as: UTF8.self).components(separatedBy: "\n")
        let dataLines = lines.indices.filter { !lines[$0].hasPrefix("#") && lines[$0].contains("\t") }
        guard !dataLines.isEmpty else { return nil }
        let line = dataLines[pick % dataLines.count]
        var fields = lines[line].components(separatedBy: "\t")
        let column = (pick / dataLines.count) % fields.count
        var injected: Double? = nil
        var token: String? = nil
        switch kind {
        case .drop:
            fields.remove(at: column)
        case .null:
            fields[column] = ""
        case .wrongType, .garbleField:
            let choices = ["abc", "-", "NaN", "inf", "12abc", "\u{0}", String(repeating: "9", count: 400), "２"]
            fields[column] = choices[variant % choices.count]
            token = fields[column]
        case .huge:
            let hugeToken = hugeTokens[variant % hugeTokens.count]
            injected = Double(hugeToken).flatMap { $0.isFinite ? $0 : nil }
            fields[column] = hugeToken
            token = hugeToken
        case .timeZone:
            fields[column] = ["XYZ", "UTC+99", "+25:00", ""][variant % 4]
            token = fields[column]
        case .truncate:
            return nil
        }
        lines[line] = fields.joined(separator: "\t")
        return Mutation(
            kind: kind == .timeZone ? .garbleField : kind, data: Data(lines.joined(separator: "\n").utf8),
            summary: "\(kind) at line \(line + 1) column \(column + 1): \(lines[line].prefix(120))", injected: injected,
            token: token)
    }
}

/// Every row a batch holds, each as its fields (path → value as text), by kind.
struct Records {
    struct Row {
        var kind: String
        var fields: [String: String]
    }

    var all: [Row] = []

    init(_ batch: SourceBatch) {
        func add(_ kind: String, _ values: [Any]) {
            for v in values { all.append(Row(kind: kind, fields: Self.flatten(v))) }
        }
        add("reading", batch.readings)
        add("station", batch.stations)
        add("gauge", batch.gauges)
        add("quake", batch.quakes)
        add("weather", batch.weather)
        add("alert", batch.weatherAlerts)
    }

    static func flatten(_ value: Any, prefix: String = "", into fields: inout [String: String]) {
        let mirror = Mirror(reflecting: value)
        switch mirror.displayStyle {
        case .optional:
            if let wrapped = mirror.children.first?.value {
                flatten(wrapped, prefix: prefix, into: &fields)
            } else {
                fields[prefix] = "nil"
            }
        case .struct, .class:
            for child in mirror.children {
                flatten(child.value, prefix: prefix + "." + (child.label ?? "?"), into: &fields)
            }
        case .dictionary, .collection, .set:
            // Order-free, and each element as text: "[a|b|c]" with the elements sorted.
            fields[prefix] = "[" + mirror.children.map { "\($0.value)" }.sorted().joined(separator: "|") + "]"
        default:
            fields[prefix] = "\(value)"
        }
    }

    static func flatten(_ value: Any) -> [String: String] {
        var fields: [String: String] = [:]
        flatten(value, into: &fields)
        return fields
    }

    static let absent: Set<String> = ["nil", "", "[]", "[:]"]

    /// Fields a parser fills with a documented default when the payload leaves them out.
    static let defaults: [String: Set<String>] = [
        ".status": ["automatic"], ".tsunami": ["false"], ".type": ["earthquake"],
    ]

    /// Whether `now` is `was` with something lost: absent, a documented default, fewer elements of a
    /// collection, or fewer parts of a quality code (`P:ESTIMATED` → `P`).
    static func lost(_ key: String, _ was: String?, _ now: String?) -> Bool {
        guard let now, !absent.contains(now) else { return true }
        if defaults[key]?.contains(now) == true { return true }
        guard let was else { return false }
        if was.hasPrefix(now) { return true }  // a suffix lost: `gage_height.d00dfeed` → `gage_height`
        if was.hasPrefix("["), now.hasPrefix("[") {
            let parts = { (s: String) in Set(s.dropFirst().dropLast().split(separator: "|").map(String.init)) }
            return parts(now).isSubset(of: parts(was))
        }
        if key.hasSuffix(".quality") {
            let parts = { (s: String) in Set(s.split(whereSeparator: { $0 == ":" || $0 == "," }).map(String.init)) }
            return parts(now).isSubset(of: parts(was))
        }
        return false
    }

    /// Why `row` is not exactly right for the mutated payload, or nil if it is.
    static func problem(of row: Row, against base: Records, mutation: Mutation) -> String? {
        for (path, value) in row.fields
        where ["nan", "inf", "-inf", "-nan"].contains(value.lowercased()) && value != mutation.token {
            return "a \(row.kind) holds \(value) at \(path): \(row.fields)"
        }
        // A value an outage qualifier (`Ice`, `Eqp`) had withheld is a reading once the qualifier is gone.
        if mutation.summary.contains("qualifiers"), mutation.kind == .drop || mutation.kind == .null {
            return nil
        }
        // Likewise a value equal to the old `noDataValue`, once that marker says something else.
        if mutation.summary.contains("noDataValue") { return nil }
        // A huge number where the payload had none (a missing value) is a new row holding exactly it.
        if mutation.kind == .huge, let injected = mutation.injected,
            row.fields[".value"].flatMap(Double.init) == injected
        {
            return nil
        }
        let candidates = base.all.filter { $0.kind == row.kind }
        for original in candidates where allowed(row.fields, from: original.fields, kind: row.kind, mutation: mutation)
        { return nil }
        let nearest = candidates.min { differences(row.fields, $0.fields) < differences(row.fields, $1.fields) }
        let diff = nearest.map { n in
            Set(row.fields.keys).union(n.fields.keys).sorted().compactMap { k -> String? in
                row.fields[k] == n.fields[k] ? nil : "\(k): \(n.fields[k] ?? "—") → \(row.fields[k] ?? "—")"
            }
        }
        return "a \(row.kind) the payload does not say: \(diff.map { $0.joined(separator: "; ") } ?? "\(row.fields)")"
    }

    static func differences(_ a: [String: String], _ b: [String: String]) -> Int {
        Set(a.keys).union(b.keys).filter { a[$0] != b[$0] }.count
    }

    /// Whether `row` is `original` as the mutation may have left it.
    static func allowed(
        _ row: [String: String], from original: [String: String], kind: String, mutation: Mutation
    ) -> Bool {
        var changed: [(String, String?, String?)] = []
        for key in Set(row.keys).union(original.keys) where row[key] != original[key] {
            changed.append((key, original[key], row[key]))
        }
        if changed.isEmpty { return true }
        // A benign token the mutation wrote is what the payload now says (`abc` as a qualifier).
        if let token = mutation.token, ReadingsParser.textProblem("", token, limit: 128) == nil {
            changed.removeAll { key, _, now in
                now.map {
                    $0 == token || $0.contains(":\(token)") || (key.hasSuffix("attributes") && $0.contains(token))
                }
                    ?? false
            }
        }
        // A station's descriptive attributes merge what its records say (WAQI attributions, AirNow
        // site details): losing or changing one record changes them.
        if kind == "station", mutation.kind != .huge { changed.removeAll { key, _, _ in key == ".attributes" } }
        // A quake's `updated` falls back to its `time`.
        changed.removeAll { key, _, now in key == ".updated" && now == row[".time"] }
        // A day's weather is an aggregate of the payload's slots, and an AirNow AQI falls back from
        // NowCast to the hour's AQI: losing or changing one moves it.
        if kind == "weather" || (kind == "reading" && row[".metric"]?.hasPrefix("aqi") == true) {
            changed.removeAll { key, _, now in
                key != ".time" && key != ".issued" && (now.map { Double($0)?.isFinite ?? false } ?? true)
            }
        }
        if changed.isEmpty { return true }
        switch mutation.kind {
        case .drop, .null, .wrongType, .garbleField, .truncate:
            // Only lost: a field now absent (nil or empty), or a path under an optional now nil. A
            // series named after a field that is gone falls back to its position (`.69930` → `.1`).
            return changed.allSatisfy { key, was, now in
                lost(key, was, now)
                    || (key == ".metric" && was?.split(separator: ".").first == now?.split(separator: ".").first)
            }
        case .huge:
            changed.removeAll { key, was, now in lost(key, was, now) || key == ".tsunami" }
            if changed.isEmpty { return true }
            guard changed.count == 1, let now = changed[0].2 else { return false }
            // Stored as exactly that number, or as text that carries the token as it was.
            if let injected = mutation.injected, let value = Double(now), value == injected { return true }
            // A series named after the number (a method id): `gage_height.1e+308`.
            if let injected = mutation.injected, changed[0].0 == ".metric",
                now.split(separator: ".", maxSplits: 1).last.flatMap({ Double($0) }) == injected
            {
                return true
            }
            return mutation.token.map { now.contains($0) } ?? false
        case .timeZone:
            return changed.allSatisfy { _, was, now in
                guard let was, let now, let a = Int64(was), let b = Int64(now) else {
                    return now == nil || absent.contains(now!)
                }
                return b - a == mutation.shift || b - a == mutation.shift * 1000
            }
        }
    }
}
