import Foundation

/// The chat verbs of watches (issue 43), parsed from a person's text:
///
///     watch gauge 01646500 minor          watch gauge 01646500 12.5ft
///     watch air Delhi poor                watch air "New Delhi" very poor nowcast
///     watch quakes near "Tokyo office" M5 watch quakes near "Tokyo office" felt IV
///     watching                            unwatch 2
///     quiet 22:00-07:00                   quiet 22:00-07:00 Europe/Berlin
///     quiet off
///     watch gauge 01646500 minor dm       (a direct message to the person, not the channel)
///
/// Pure: what may be watched comes in a `WatchCatalog` (the gauges, air places and quake places the
/// operator allows), and a mistake is answered with what was meant ("no gauge 0164650; did you mean
/// 01646500 Potomac River at Little Falls?", `NearNames`). The text is hostile: it is cut to
/// `maxText` characters before anything else, read after NFKC (fullwidth digits are digits) with
/// control and format characters (bidi overrides, zero-width spaces) removed, and every piece of it
/// an answer repeats goes through `WatchText.shown` (cut, mentions defused). The chat endpoints
/// escape the whole answer per platform on top.
public enum WatchCommand: Sendable, Hashable {
    /// A watch; `direct`: its alerts go to the person as direct messages (the command ended in
    /// `dm`), not to the channel it was made in.
    case watch(WatchTarget, direct: Bool = false)
    case watching
    case unwatch(Int)
    /// The person's quiet hours, in their time zone (UTC when they name none).
    case quiet(WatchQuietHours)
    case quietOff

    /// The verbs this parser takes (the first word of the text, any case).
    public static let verbs: Set<String> = ["watch", "watching", "unwatch", "quiet"]

    /// The most characters of a command read: longer text is refused, not parsed.
    public static let maxText = 500
    /// The most words a command has.
    static let maxWords = 16
    /// The largest watch number taken (`unwatch N`).
    public static let maxNumber = 1_000_000

    public static let usage = """
        Watch commands:
        • `watch gauge ID minor` (or action, moderate, major, or a stage like 12.5ft)
        • `watch air PLACE poor` (a level of the place's AQI scale; add `nowcast` for the NowCast)
        • `watch quakes near "PLACE" M5` (or `felt IV`)
        • add `dm` to any of them for direct messages to you instead of this channel
        • `watching` — your watches, numbered
        • `unwatch N` — stop watch N
        • `quiet 22:00-07:00 Europe/Berlin` (or `quiet off`) — your quiet hours (UTC unless you name a zone)
        """

    /// The command in `text`, or nil when its first word is not one of `verbs` (another command's).
    /// A watch verb with bad arguments is a `WatchProblem` whose message says what to write.
    public static func parse(_ text: String, catalog: WatchCatalog) -> Result<WatchCommand, WatchProblem>? {
        // Bytes first: a huge text is refused before it is normalised or split.
        guard text.utf8.count <= maxText * 8 else {
            return firstWordIsVerb(text)
                ? .failure(.init("That command is too long (at most \(maxText) characters).")) : nil
        }
        let clean = WatchText.clean(text)
        let words = WatchText.words(clean)
        guard let verb = words.first?.lowercased(), verbs.contains(verb) else { return nil }
        guard clean.count <= maxText else {
            return .failure(.init("That command is too long (at most \(maxText) characters)."))
        }
        guard words.count <= maxWords else { return .failure(.init("That command has too many words.\n" + usage)) }
        let args = Array(words.dropFirst())
        switch verb {
        case "watching":
            return args.isEmpty ? .success(.watching) : .failure(.init("usage: `watching` (no arguments)"))
        case "unwatch":
            guard args.count == 1, let n = number(args[0]) else {
                return .failure(.init("usage: `unwatch N` (N is a watch's number; `watching` lists them)"))
            }
            return .success(.unwatch(n))
        case "quiet":
            return quiet(args)
        default:
            // `… dm`: to the person, not the channel.
            guard args.count > 1, args.last?.lowercased() == directWord else { return watch(args, catalog: catalog) }
            return watch(Array(args.dropLast()), catalog: catalog).map {
                guard case .watch(let target, _) = $0 else { return $0 }
                return .watch(target, direct: true)
            }
        }
    }

    /// The last word of a watch that asks for direct messages.
    public static let directWord = "dm"

    static func firstWordIsVerb(_ text: String) -> Bool {
        let word = String(text.unicodeScalars.prefix(32)).split(whereSeparator: \.isWhitespace).first
        return word.map { verbs.contains($0.lowercased()) } ?? false
    }

    /// A watch number: ASCII digits, 1…`maxNumber`.
    static func number(_ s: String) -> Int? {
        let digits = s.hasPrefix("#") ? String(s.dropFirst()) : s
        guard !digits.isEmpty, digits.utf8.count <= 7, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            let n = Int(digits), (1...maxNumber).contains(n)
        else { return nil }
        return n
    }

    static func quiet(_ args: [String]) -> Result<WatchCommand, WatchProblem> {
        let usage = WatchProblem(
            "usage: `quiet 22:00-07:00` (your quiet hours, UTC) or `quiet 22:00-07:00 Europe/Berlin` (in that time zone), or `quiet off`"
        )
        guard args.count == 1 || args.count == 2 else { return .failure(usage) }
        if args.count == 1, args[0].lowercased() == "off" { return .success(.quietOff) }
        let parts = args[0].split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let from = QuietHours.minutes(String(parts[0])),
            let to = QuietHours.minutes(String(parts[1]))
        else { return .failure(usage) }
        guard from != to else { return .failure(.init("Quiet hours need a start and an end that differ.")) }
        let zoneText = args.count == 2 ? args[1] : WatchQuietHours.defaultZone
        guard let quiet = WatchQuietHours(from: from, to: to, timeZone: zoneText) else {
            let near = WatchQuietHours.zones(near: zoneText).first
            return .failure(
                .init(
                    "I don't know the time zone \"\(WatchText.shown(zoneText))\""
                        + (near.map { "; did you mean `\($0)`?" }
                            ?? "; name one like `Europe/Berlin` or `America/New_York`.")))
        }
        return .success(.quiet(quiet))
    }

    static func watch(_ args: [String], catalog: WatchCatalog) -> Result<WatchCommand, WatchProblem> {
        guard let kindWord = args.first?.lowercased() else { return .failure(.init(usage)) }
        let kind: WatchKind
        switch kindWord {
        case "gauge", "gage", "river": kind = .gauge
        case "air", "aqi": kind = .air
        case "quakes", "quake", "earthquakes": kind = .quakes
        default:
            let near = NearNames.near(kindWord, among: WatchKind.allCases.map(\.rawValue), limit: 1)
            return .failure(
                .init(
                    "I can't watch \"\(WatchText.shown(kindWord))\""
                        + (near.first.map { "; did you mean `\($0)`?" } ?? ".") + "\n" + usage))
        }
        guard catalog.kinds.contains(kind) else {
            let allowed = WatchKind.allCases.filter { catalog.kinds.contains($0) }.map(\.rawValue)
            return .failure(
                .init(
                    "Watches of \(kind.rawValue) are not allowed here (`watches.kinds`)"
                        + (allowed.isEmpty ? "." : "; you may watch \(allowed.joined(separator: ", ")).")))
        }
        let rest = Array(args.dropFirst())
        switch kind {
        case .gauge: return gauge(rest, catalog: catalog)
        case .air: return air(rest, catalog: catalog)
        case .quakes: return quakes(rest, catalog: catalog)
        }
    }

    static func gauge(_ args: [String], catalog: WatchCatalog) -> Result<WatchCommand, WatchProblem> {
        let usage = WatchProblem(
            "usage: `watch gauge ID minor` (action, minor, moderate, major, or a stage like 12.5ft)")
        guard args.count == 2 else { return .failure(usage) }
        let id = args[0]
        guard WatchText.isStationID(id), let name = catalog.gauges[id] else {
            let near = NearNames.near(id, among: catalog.gauges.keys.sorted(), limit: 3)
            var answer = "no gauge \(WatchText.shown(id))"
            if !near.isEmpty {
                let named = near.map { n -> String in
                    guard let known = catalog.gauges[n], let name = known, !name.isEmpty else { return n }
                    return "\(n) \(name)"
                }
                answer += "; did you mean \(named.joined(separator: " or "))?"
            } else if catalog.gauges.isEmpty {
                answer += " (no gauge may be watched here)"
            }
            return .failure(.init(answer))
        }
        let word = args[1].lowercased()
        if GaugeLevel.categories.contains(word) {
            return .success(.watch(.gauge(station: id, name: name, level: .category(word))))
        }
        var number = word
        for unit in ["feet", "ft"] where number.hasSuffix(unit) {
            number = String(number.dropLast(unit.count))
            break
        }
        if let v = WatchText.decimal(number), v > -1000, v < 100_000 {
            return .success(.watch(.gauge(station: id, name: name, level: .value(v))))
        }
        let near = NearNames.near(word, among: GaugeLevel.categories, limit: 1)
        return .failure(
            .init(
                "no flood category \(WatchText.shown(word))"
                    + (near.first.map { "; did you mean \($0)?" }
                        ?? "; use action, minor, moderate, major or a stage like 12.5ft")
            ))
    }

    static func air(_ args: [String], catalog: WatchCatalog) -> Result<WatchCommand, WatchProblem> {
        let usage = WatchProblem(
            "usage: `watch air PLACE LEVEL` (like `watch air Delhi poor`; add `nowcast` for the NowCast)")
        var words = args
        var series = AirSeries.observed
        if words.last?.lowercased() == "nowcast" {
            series = .nowcast
            words.removeLast()
        }
        guard words.count >= 2 else { return .failure(usage) }
        // The level is the longest run of last words that names one (`very poor`); the place is the rest.
        let allLevels = AQIScale.all.flatMap { $0.levels.map(\.name) }
        var split: Int? = nil
        for take in stride(from: min(4, words.count - 1), through: 1, by: -1) {
            let candidate = words.suffix(take).joined(separator: " ").lowercased()
            if allLevels.contains(where: { $0.lowercased() == candidate }) {
                split = words.count - take
                break
            }
        }
        let placeWords = split.map { Array(words.prefix($0)) } ?? Array(words.dropLast())
        let levelText = split.map { words[$0...].joined(separator: " ") } ?? words.last!
        let placeText = placeWords.joined(separator: " ")
        guard let place = catalog.airPlace(placeText) else {
            let near = NearNames.near(placeText, among: catalog.airPlaces.map(\.name), limit: 3)
            return .failure(
                .init(
                    "no air place \(WatchText.shown(placeText))"
                        + (near.isEmpty
                            ? (catalog.airPlaces.isEmpty ? " (no place's air may be watched here)" : "")
                            : "; did you mean \(near.joined(separator: " or "))?")))
        }
        let scales = place.scale.flatMap(AQIScale.named).map { [$0] } ?? AQIScale.all
        for scale in scales {
            guard let i = scale.levels.firstIndex(where: { $0.name.lowercased() == levelText.lowercased() }) else {
                continue
            }
            guard i > 0 else {
                return .failure(
                    .init(
                        "\(scale.levels[0].name) is the clean level: watch a worse one, like \(scale.levels[1].name)."))
            }
            return .success(
                .watch(
                    .air(
                        place: place.name, stations: place.stations, scale: scale.id, level: scale.levels[i].name,
                        series: series)))
        }
        let names = scales.flatMap { $0.levels.dropFirst().map(\.name) }
        let near = NearNames.near(levelText, among: names, limit: 2)
        return .failure(
            .init(
                "no air level \(WatchText.shown(levelText))"
                    + (near.isEmpty
                        ? "; the levels are \(Array(Set(names)).sorted().joined(separator: ", "))"
                        : "; did you mean \(near.joined(separator: " or "))?")))
    }

    static func quakes(_ args: [String], catalog: WatchCatalog) -> Result<WatchCommand, WatchProblem> {
        let usage = WatchProblem("usage: `watch quakes near \"PLACE\" M5` (or `felt IV`)")
        guard args.count >= 3, args[0].lowercased() == "near" else { return .failure(usage) }
        var words = Array(args.dropFirst())
        let threshold: QuakeThreshold
        if words.count >= 3, words[words.count - 2].lowercased() == "felt" {
            guard let mmi = FeltIntensity.parse(words.last!), mmi >= 2 else {
                return .failure(.init("felt takes an intensity from II to XII, like `felt IV`"))
            }
            threshold = .felt(mmi)
            words.removeLast(2)
        } else {
            let m = words.last!
            guard m.lowercased().hasPrefix("m"), let v = WatchText.decimal(String(m.dropFirst())), (0...10).contains(v)
            else { return .failure(.init("a quake watch takes a magnitude like `M5` or an intensity like `felt IV`")) }
            threshold = .magnitude(v)
            words.removeLast()
        }
        let placeText = words.joined(separator: " ")
        guard let place = catalog.quakePlace(placeText) else {
            let near = NearNames.near(placeText, among: catalog.quakePlaces.map(\.name), limit: 3)
            return .failure(
                .init(
                    "no place \(WatchText.shown(placeText))"
                        + (near.isEmpty
                            ? (catalog.quakePlaces.isEmpty
                                ? " (no place may be watched for quakes here)"
                                : "; the places are \(catalog.quakePlaces.prefix(10).map(\.name).joined(separator: ", "))")
                            : "; did you mean \(near.joined(separator: " or "))?")))
        }
        return .success(.watch(.quakes(place: place, threshold: threshold)))
    }
}

/// A watch command that cannot be taken, with what to write instead.
public struct WatchProblem: Error, Sendable, Hashable {
    public var message: String
    public init(_ message: String) { self.message = message }
}

/// What may be watched: the operator's bounds (`watches:` in the config) applied to what the store
/// knows. Built by the app; the parser only reads it.
public struct WatchCatalog: Sendable {
    /// Gauges by id, with their names when known.
    public var gauges: [String: String?]
    public var airPlaces: [AirPlace]
    public var quakePlaces: [WatchPlace]
    public var kinds: Set<WatchKind>

    /// A place whose air may be watched: the stations reporting its AQI, and its scale when it has one.
    public struct AirPlace: Sendable, Hashable {
        public var name: String
        public var stations: [String]
        public var scale: String?

        public init(name: String, stations: [String], scale: String? = nil) {
            self.name = name
            self.stations = stations
            self.scale = scale
        }
    }

    public init(
        gauges: [String: String?] = [:], airPlaces: [AirPlace] = [], quakePlaces: [WatchPlace] = [],
        kinds: Set<WatchKind> = Set(WatchKind.allCases)
    ) {
        self.gauges = gauges
        self.airPlaces = airPlaces
        self.quakePlaces = quakePlaces
        self.kinds = kinds
    }

    /// The air place named `text` (any case, NFKC), or the one with a station of that id.
    public func airPlace(_ text: String) -> AirPlace? {
        let key = WatchText.key(text)
        return airPlaces.first { WatchText.key($0.name) == key } ?? airPlaces.first { $0.stations.contains(text) }
    }

    /// The quake place named `text` (any case, NFKC).
    public func quakePlace(_ text: String) -> WatchPlace? {
        let key = WatchText.key(text)
        return quakePlaces.first { WatchText.key($0.name) == key }
    }
}

/// How watch commands read and repeat hostile text.
public enum WatchText {
    /// The most characters of a person's text an answer repeats.
    public static let shownLimit = 64

    /// NFKC, without control and format characters (a tab or line break becomes a space).
    public static func clean(_ text: String) -> String {
        let nfkc = text.precomposedStringWithCompatibilityMapping
        var out = String.UnicodeScalarView()
        for s in nfkc.unicodeScalars {
            switch s.properties.generalCategory {
            case .control: out.append(s.properties.isWhitespace ? " " : "\u{FFFD}")
            case .format, .lineSeparator, .paragraphSeparator: continue
            default: out.append(s)
            }
        }
        return String(out)
    }

    /// Text of the person's, as an answer repeats it: cleaned, cut to `shownLimit` characters, and
    /// each `@` followed by a word joiner so `@everyone` or `@here` is never a mention (the platform's
    /// own escaping of `<`, `>` and `&` comes on top).
    public static func shown(_ text: String) -> String {
        var s = clean(text)
        if s.count > shownLimit { s = String(s.prefix(shownLimit - 1)) + "…" }
        return s.replacingOccurrences(of: "@", with: "@\u{2060}")
    }

    /// The words of a command: split at white space, a quoted run (`"Tokyo office"`, `“Tokyo office”`)
    /// one word without its quotes.
    public static func words(_ text: String) -> [String] {
        var out: [String] = []
        var current = ""
        var quoted = false
        var hadQuote = false
        for c in text {
            if c == "\"" || c == "“" || c == "”" || c == "„" {
                if quoted {
                    out.append(current)
                    current = ""
                    hadQuote = false
                } else {
                    if !current.isEmpty { out.append(current) }
                    current = ""
                    hadQuote = true
                }
                quoted.toggle()
            } else if c.isWhitespace && !quoted {
                if !current.isEmpty { out.append(current) }
                current = ""
            } else {
                current.append(c)
            }
        }
        if !current.isEmpty || (quoted && hadQuote) { out.append(current) }
        return out.filter { !$0.isEmpty }
    }

    /// A station id as typed: ASCII letters, digits, `-`, `_`, `.`, 1…32 of them.
    public static func isStationID(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 32
            && s.utf8.allSatisfy {
                ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 45 || $0 == 95
                    || $0 == 46
            }
    }

    /// A plain decimal number (`12`, `12.5`, `-3`): ASCII only, no exponent, at most 12 characters.
    public static func decimal(_ s: String) -> Double? {
        guard !s.isEmpty, s.utf8.count <= 12,
            s.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || $0 == 46 || $0 == 45 }),
            let v = Double(s), v.isFinite
        else { return nil }
        return v
    }

    /// A name as compared: NFKC, cleaned, lower-cased, white space collapsed.
    static func key(_ s: String) -> String {
        clean(s).lowercased().split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }
}

extension AQIScale {
    /// The scales a watch's level may name, in the order they are searched.
    static let all = [usEPA, indiaNAQI]
}
