import Foundation
import KlaxonCore
import KlaxonDelivery
import Yams

/// Loads rule files: YAML, one rule per file or a list under `rules:`. Strict: unknown keys, wrong
/// types, missing fields and bad durations are reported as `PATH:LINE:COL: error: message`, and every
/// problem in every file is reported, not just the first.
public enum RuleLoader {
    static let commonKeys = ["name", "kind", "severity", "labels", "notify", "message", "runbook_url", "annotations"]

    /// Annotation names Klaxon sets itself in the generic payload: a rule's own may not shadow them.
    static let reservedAnnotations: Set<String> = [
        "alert_id", "data_time", "description", "late", "level", "path", "previous_level", "summary", "value",
        "runbook_url",
    ]

    /// One rule kind as data: its name, its keys (besides `commonKeys`), what it does, and how its
    /// keys are read. Config reading, `klaxon check`'s messages and the list of kinds all come from
    /// `ruleKinds`; a new kind is one entry here and its reader.
    struct RuleKindSpec: Sendable {
        var name: String
        var keys: [String]
        var help: String
        var read: @Sendable (_ m: inout YAMLMap, _ file: YAMLFile, _ what: String) -> (any RuleKind)?
    }

    static let ruleKinds: [RuleKindSpec] = [
        RuleKindSpec(
            name: ThresholdRule.kindName, keys: ["metric", "stations", "above", "below", "clear", "for"],
            help: "a value above or below a threshold, for a while", read: { threshold(&$0, file: $1, what: $2) }),
        RuleKindSpec(
            name: LevelsRule.kindName,
            keys: ["metric", "stations", "levels", "scale", "direction", "deadband", "min_dwell", "forecast"],
            help: "named levels (flood stages, AQI categories)", read: { levels(&$0, file: $1, what: $2) }),
        RuleKindSpec(
            name: StaleRule.kindName, keys: ["metric", "stations", "after"],
            help: "a series with no reading for too long", read: { stale(&$0, file: $1, what: $2) }),
        RuleKindSpec(
            name: RateRule.kindName,
            keys: ["metric", "stations", "rising", "falling", "per", "window", "clear", "for"],
            help: "a value rising or falling fast", read: { rate(&$0, file: $1, what: $2) }),
        RuleKindSpec(
            name: TripPackingRule.kindName, keys: ["trips", "alert_severities"],
            help: "a trip's packing list, from its forecasts", read: { tripPacking(&$0, file: $1, what: $2) }),
        RuleKindSpec(
            name: AirForecastRule.kindName, keys: ["trips", "areas", "min_category", "action_day"],
            help: "a bad-air day (AirNow forecast category or Action Day) at a trip's stops or a watched area",
            read: { airForecast(&$0, file: $1, what: $2) }),
        RuleKindSpec(
            name: QuakeRule.kindName,
            keys: [
                "min_magnitude", "max_depth_km", "min_sig", "alert_at_least", "tsunami", "near", "types",
                "reviewed_only",
            ],
            help: "a significant earthquake", read: { quake(&$0, file: $1, what: $2) }),
    ]

    /// The kinds by name, and each kind's keys (for messages and docs).
    static let kindsByName = Dictionary(uniqueKeysWithValues: ruleKinds.map { ($0.name, $0) })
    static var kindKeys: [String: [String]] { kindsByName.mapValues(\.keys) }

    /// The rule files under the given paths: files as given, folders' `*.yaml`/`*.yml` (not recursive,
    /// so `Rules/tests/` holds tests, not rules), sorted for a stable order.
    public static func ruleFiles(_ paths: [String]) throws -> [String] {
        var out: [String] = []
        let fm = FileManager.default
        for path in paths {
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: path, isDirectory: &isDir) else {
                throw UserError("\(path): no such file or folder")
            }
            if isDir.boolValue {
                let names = try fm.contentsOfDirectory(atPath: path).filter {
                    $0.hasSuffix(".yaml") || $0.hasSuffix(".yml")
                }.sorted()
                out += names.map { (path as NSString).appendingPathComponent($0) }
            } else {
                out.append(path)
            }
        }
        return out
    }

    /// Loads every rule under `paths`; throws `DiagnosticsError` listing every problem.
    public static func load(paths: [String]) throws -> [Rule] {
        let diagnostics = Diagnostics()
        let rules = try load(paths: paths, diagnostics: diagnostics)
        guard diagnostics.isEmpty else { throw DiagnosticsError(diagnostics: diagnostics.items) }
        return rules
    }

    /// Loads what it can, reporting problems into `diagnostics`.
    public static func load(paths: [String], diagnostics: Diagnostics) throws -> [Rule] {
        var rules: [Rule] = []
        var names: [String: String] = [:]
        for file in try ruleFiles(paths) {
            guard let text = YAMLFile(path: file, diagnostics: diagnostics).read() else { continue }
            for (rule, node) in parse(text, path: file, diagnostics: diagnostics) {
                if let first = names[rule.name] {
                    let mark = node.mark
                    diagnostics.add(
                        Diagnostic(
                            path: file, line: mark?.line ?? 1, column: mark?.column ?? 1,
                            message: "rule name \"\(rule.name)\" is already used at \(first)"))
                    continue
                }
                names[rule.name] = rule.origin
                rules.append(rule)
            }
        }
        return rules
    }

    /// Parses one file's text.
    static func parse(_ text: String, path: String, diagnostics: Diagnostics) -> [(Rule, Node)] {
        let file = YAMLFile(path: path, diagnostics: diagnostics)
        guard let root = file.compose(text) else {
            if diagnostics.items.last?.path != path {
                diagnostics.add(Diagnostic(path: path, line: 1, column: 1, message: "the file holds no rule"))
            }
            return []
        }
        var ruleNodes: [Node] = []
        if let m = root.mapping, m.keys.contains(where: { $0.string == "rules" }) {
            guard var top = file.map(root, what: "a rule file") else { return [] }
            if let list = top.required("rules", what: "the file"), let items = file.list(list, what: "rules") {
                ruleNodes = items
            }
            top.rejectUnknown(known: ConfigKeys.ruleFile, what: "a file with a rules: list")
        } else {
            ruleNodes = [root]
        }
        return ruleNodes.compactMap { node in rule(node, file: file).map { ($0, node) } }
    }

    static func rule(_ node: Node, file: YAMLFile) -> Rule? {
        guard var m = file.map(node, what: "a rule") else { return nil }
        let before = file.diagnostics.items.count
        let name = m.required("name", what: "the rule").flatMap { file.string($0, what: "name") }
        let what = name.map { "rule \"\($0)\"" } ?? "the rule"
        if let name, name.isEmpty || name.contains(where: { $0.isNewline }) {
            file.error(m.value("name"), "name must be a non-empty single line")
        }
        let kindNode = m.required("kind", what: what)
        let kindName = kindNode.flatMap { file.string($0, what: "kind") }
        var severity = Severity.warning
        if let n = m.value("severity"), let s = file.string(n, what: "severity") {
            if let v = Severity(rawValue: s) {
                severity = v
            } else {
                file.error(n, "severity must be info, warning or critical, not \"\(s)\"")
            }
        }
        let labels = m.value("labels").flatMap { file.stringMap($0, what: "labels") } ?? [:]
        let notify = m.value("notify").flatMap { file.stringList($0, what: "notify") } ?? []
        var message: String? = nil
        if let n = m.value("message"), let s = file.string(n, what: "message") {
            do {
                _ = try MessageRenderer.compile(s, origin: "message")
                let problems = TemplateCheck.checkMessage(s)
                for p in problems { file.error(n, "message: template \(p)") }
                if problems.isEmpty { message = s }
            } catch {
                file.error(n, "\(error)")
            }
        }
        // `runbook_url` and `annotations`: mustache templates like `message`, rendered per transition.
        func template(_ n: Node, _ s: String, what: String) -> Bool {
            do {
                _ = try MessageRenderer.compile(s, origin: what)
            } catch {
                file.error(n, "\(error)")
                return false
            }
            let problems = TemplateCheck.checkMessage(s)
            for p in problems { file.error(n, "\(what): template \(p)") }
            return problems.isEmpty
        }
        var runbook: String? = nil
        if let n = m.value("runbook_url"), let s = file.string(n, what: "runbook_url") {
            let lower = s.lowercased()
            if !(lower.hasPrefix("https://") || lower.hasPrefix("http://")) {
                file.error(n, "runbook_url must start with https:// or http://")
            } else if template(n, s, what: "runbook_url") {
                runbook = s
            }
        }
        var annotations: [String: String] = [:]
        if let n = m.value("annotations"), let given = file.stringMap(n, what: "annotations") {
            for (key, text) in given.sorted(by: { $0.key < $1.key }) {
                if key.range(of: "^[A-Za-z_][A-Za-z0-9_]{0,63}$", options: .regularExpression) == nil {
                    file.error(n, "annotations: \"\(key)\" is not a name (letters, digits and _, not first a digit)")
                } else if reservedAnnotations.contains(key) {
                    file.error(
                        n,
                        "annotations: \"\(key)\" is set by Klaxon itself"
                            + (key == "runbook_url" ? "; use the rule's runbook_url" : ""))
                } else if template(n, text, what: "annotations.\(key)") {
                    annotations[key] = text
                }
            }
        }
        var kind: (any RuleKind)? = nil
        var known = commonKeys
        if let kindName {
            if let spec = kindsByName[kindName] {
                known += spec.keys
                kind = spec.read(&m, file, what)
            } else {
                file.error(
                    kindNode,
                    "unknown kind \"\(kindName)\" (kinds are \(ruleKinds.map(\.name).sorted().joined(separator: ", ")))"
                )
                m.markAllUsed()
            }
        }
        m.rejectUnknown(known: known, what: what)
        guard let name, let kind, file.diagnostics.items.count == before else { return nil }
        let mark = node.mark
        return Rule(
            name: name, kind: kind, severity: severity, labels: labels, notify: notify, message: message,
            origin: "\(file.path):\(mark?.line ?? 1):\(mark?.column ?? 1)", runbookURL: runbook,
            annotations: annotations)
    }

    static func metricAndStations(_ m: inout YAMLMap, file: YAMLFile, what: String) -> (String, Set<String>?)? {
        let metric = m.required("metric", what: what).flatMap { file.string($0, what: "metric") }
        var stations: Set<String>? = nil
        if let n = m.value("stations"), let list = file.stringList(n, what: "stations") {
            if list.isEmpty { file.error(n, "stations is empty: leave it out to watch every station") }
            stations = Set(list)
        }
        guard let metric else { return nil }
        if metric.isEmpty { file.error(m.value("metric"), "metric is empty") }
        return (metric, stations)
    }

    static func threshold(_ m: inout YAMLMap, file: YAMLFile, what: String) -> ThresholdRule? {
        let ms = metricAndStations(&m, file: file, what: what)
        let aboveNode = m.value("above")
        let belowNode = m.value("below")
        let above = aboveNode.flatMap { file.number($0, what: "above") }
        let below = belowNode.flatMap { file.number($0, what: "below") }
        let clearNode = m.value("clear")
        let clear = clearNode.flatMap { file.number($0, what: "clear") }
        let holdFor = m.value("for").flatMap { file.duration($0, what: "for") } ?? 0
        switch (aboveNode, belowNode) {
        case (nil, nil):
            file.error(m.node, "\(what) needs exactly one of above: or below:")
            return nil
        case (.some, .some):
            file.error(belowNode, "\(what) has both above: and below:; use one (two rules for a band)")
            return nil
        default: break
        }
        guard let ms else { return nil }
        if let above, let clear, clear > above {
            file.error(
                clearNode,
                "clear (\(formatValue(clear))) must be at or below above (\(formatValue(above))): an above alert resolves when the value drops below clear"
            )
            return nil
        }
        if let below, let clear, clear < below {
            file.error(
                clearNode,
                "clear (\(formatValue(clear))) must be at or above below (\(formatValue(below))): a below alert resolves when the value rises above clear"
            )
            return nil
        }
        if let above {
            return ThresholdRule(
                metric: ms.0, stations: ms.1, direction: .above, threshold: above, clear: clear, holdFor: holdFor)
        }
        if let below {
            return ThresholdRule(
                metric: ms.0, stations: ms.1, direction: .below, threshold: below, clear: clear, holdFor: holdFor)
        }
        return nil
    }

    static func levels(_ m: inout YAMLMap, file: YAMLFile, what: String) -> LevelsRule? {
        let ms = metricAndStations(&m, file: file, what: what)
        var ladder: [LevelsRule.Level] = []
        var nws = false
        var scale: AQIScale? = nil
        if let n = m.value("scale") {
            if let id = file.string(n, what: "scale") {
                if let s = AQIScale.named(id) {
                    scale = s
                } else {
                    file.error(n, "unknown scale \"\(id)\" (scales are us-epa, india-naqi)")
                }
            }
            if m.has("levels") { file.error(m.value("levels"), "give levels or scale, not both") }
        } else if let n = m.required("levels", what: "\(what) (or scale:)"), n.scalar != nil {
            // `levels: nws`: each station's NWS flood categories.
            if n.string == "nws" {
                nws = true
                if let metric = m.value("metric")?.string,
                    FloodCategories(stage: ["minor": 1], flow: ["minor": 1]).ladder(forMetric: metric) == nil
                {
                    file.error(
                        m.value("metric"),
                        "levels: nws needs a stage or flow metric (gage_height, stage, discharge, flow), not \"\(metric)\""
                    )
                }
            } else {
                file.error(n, "levels must be a list of {name, at}, or nws (the station's NWS flood categories)")
            }
        } else if let n = m.value("levels"), let items = file.list(n, what: "levels") {
            if items.isEmpty { file.error(n, "levels is empty: list at least one {name, at}") }
            for item in items {
                guard var lm = file.map(item, what: "a level") else { continue }
                let name = lm.required("name", what: "the level").flatMap { file.string($0, what: "level name") }
                let atNode = lm.required("at", what: "the level")
                let at = atNode.flatMap { file.number($0, what: "at") }
                lm.rejectUnknown(known: ConfigKeys.ruleLevel, what: "a level")
                guard let name, let at else { continue }
                if name.isEmpty { file.error(item, "a level name is empty") }
                if ladder.contains(where: { $0.name == name }) {
                    file.error(item, "level \"\(name)\" appears twice")
                } else if let last = ladder.last, at <= last.at {
                    file.error(
                        atNode,
                        "levels must ascend: \"\(name)\" at \(formatValue(at)) is not above \"\(last.name)\" at \(formatValue(last.at))"
                    )
                }
                ladder.append(.init(name: name, at: at))
            }
        }
        var deadband = 0.0
        if let n = m.value("deadband"), let d = file.number(n, what: "deadband") {
            if d < 0 { file.error(n, "deadband must not be negative") } else { deadband = d }
        }
        // AQI scales wobble: by default a level must hold 10 minutes before it is announced.
        let dwell = m.value("min_dwell").flatMap { file.duration($0, what: "min_dwell") } ?? (scale == nil ? 0 : 600)
        var direction: LevelsRule.Direction = scale == nil ? .both : .worse
        if let n = m.value("direction"), let d = file.string(n, what: "direction") {
            if let v = LevelsRule.Direction(rawValue: d) {
                direction = v
            } else {
                file.error(n, "direction must be worse, better or both, not \"\(d)\"")
            }
        }
        var forecast: ForecastOption? = nil
        if let n = m.value("forecast") {
            if !nws { file.error(n, "forecast: needs levels: nws (it watches the gauge's NWS forecast)") }
            if var fm = file.map(n, what: "forecast") {
                var option = ForecastOption()
                if let h = fm.value("horizon").flatMap({ file.duration($0, what: "horizon") }) {
                    if h <= 0 {
                        file.error(fm.value("horizon"), "horizon must be longer than 0s")
                    } else {
                        option.horizon = h
                    }
                }
                if let s = fm.value("stale_after").flatMap({ file.duration($0, what: "stale_after") }) {
                    if s <= 0 {
                        file.error(fm.value("stale_after"), "stale_after must be longer than 0s")
                    } else {
                        option.staleAfter = s
                    }
                }
                fm.rejectUnknown(known: ConfigKeys.ruleForecast, what: "forecast")
                forecast = option
            }
        }
        guard let ms, nws || scale != nil || !ladder.isEmpty else { return nil }
        return LevelsRule(
            metric: ms.0, stations: ms.1, levels: ladder, deadband: deadband, minDwell: dwell, nws: nws, scale: scale,
            direction: direction, forecast: forecast)
    }

    static func tripPacking(_ m: inout YAMLMap, file: YAMLFile, what: String) -> TripPackingRule? {
        let trips = m.value("trips").flatMap { file.stringList($0, what: "trips") }.map(Set.init)
        var severities: Set<String> = ["Extreme", "Severe"]
        if let n = m.value("alert_severities"), let list = file.stringList(n, what: "alert_severities") {
            let known = ["Extreme", "Severe", "Moderate", "Minor"]
            for v in list where !known.contains(v) {
                file.error(n, "alert severity \"\(v)\" is not one of \(known.joined(separator: ", "))")
            }
            severities = Set(list)
        }
        return TripPackingRule(trips: trips, alertSeverities: severities)
    }

    static func airForecast(_ m: inout YAMLMap, file: YAMLFile, what: String) -> AirForecastRule? {
        let trips = m.value("trips").flatMap { file.stringList($0, what: "trips") }.map(Set.init)
        let areas = m.value("areas").flatMap { file.stringList($0, what: "areas") } ?? []
        var minCategory = 3
        if let n = m.value("min_category"), let text = file.string(n, what: "min_category") {
            if let c = AirForecast.category(named: text) {
                minCategory = c
            } else {
                file.error(
                    n,
                    "min_category must be 1–6 or a category name (good, moderate, unhealthy-for-sensitive-groups, "
                        + "unhealthy, very-unhealthy, hazardous), not \"\(text)\"")
            }
        }
        let actionDay = m.value("action_day").flatMap { file.bool($0, what: "action_day") } ?? true
        return AirForecastRule(trips: trips, areas: areas, minCategory: minCategory, actionDay: actionDay)
    }

    static func quake(_ m: inout YAMLMap, file: YAMLFile, what: String) -> QuakeRule? {
        let minMag = m.required("min_magnitude", what: what).flatMap { file.number($0, what: "min_magnitude") }
        let maxDepth = m.value("max_depth_km").flatMap { file.number($0, what: "max_depth_km") }
        let minSig = m.value("min_sig").flatMap { file.integer($0, what: "min_sig") }
        var alert: PagerLevel? = nil
        if let n = m.value("alert_at_least"), let a = file.string(n, what: "alert_at_least") {
            alert = PagerLevel(a)
            if alert == nil { file.error(n, "alert_at_least must be green, yellow, orange or red, not \"\(a)\"") }
        }
        let tsunami = m.value("tsunami").flatMap { file.bool($0, what: "tsunami") } ?? false
        let reviewed = m.value("reviewed_only").flatMap { file.bool($0, what: "reviewed_only") } ?? false
        let types = m.value("types").flatMap { file.stringList($0, what: "types") }.map {
            Set($0.map { $0.lowercased() })
        }
        var near: [QuakeRule.Place] = []
        if let n = m.value("near"), let items = file.list(n, what: "near") {
            for item in items {
                guard var pm = file.map(item, what: "a place") else { continue }
                let name = pm.required("name", what: "the place").flatMap { file.string($0, what: "name") }
                let latNode = pm.required("latitude", what: "the place")
                let lonNode = pm.required("longitude", what: "the place")
                let lat = latNode.flatMap { file.number($0, what: "latitude") }
                let lon = lonNode.flatMap { file.number($0, what: "longitude") }
                // `min_intensity: IV` (or 4.5): the place counts when the estimated felt intensity there
                // (Atkinson & Wald 2007) is at least this; radius_km is then optional (no limit).
                let intensityNode = pm.value("min_intensity")
                var minIntensity: Double?
                if let intensityNode {
                    if let text = file.string(intensityNode, what: "min_intensity") {
                        minIntensity = FeltIntensity.parse(text)
                        if minIntensity == nil {
                            file.error(intensityNode, "min_intensity must be I to XII or a number from 1 to 12")
                        }
                    }
                }
                let radiusNode =
                    intensityNode == nil ? pm.required("radius_km", what: "the place") : pm.value("radius_km")
                let radius =
                    radiusNode.flatMap { file.number($0, what: "radius_km") }
                    ?? (intensityNode == nil ? nil : .infinity)
                pm.rejectUnknown(known: ConfigKeys.quakePlace, what: "a place")
                if let lat, !(-90...90).contains(lat) { file.error(latNode, "latitude must be between -90 and 90") }
                if let lon, !(-180...180).contains(lon) {
                    file.error(lonNode, "longitude must be between -180 and 180")
                }
                if let radius, radius <= 0 { file.error(radiusNode, "radius_km must be positive") }
                if let name, let lat, let lon, let radius {
                    near.append(
                        .init(name: name, latitude: lat, longitude: lon, radiusKm: radius, minIntensity: minIntensity))
                }
            }
        }
        guard let minMag else { return nil }
        return QuakeRule(
            minMagnitude: minMag, maxDepthKm: maxDepth, minSig: minSig, alertAtLeast: alert, tsunamiOnly: tsunami,
            near: near, types: types ?? ["earthquake"], reviewedOnly: reviewed)
    }

    static func rate(_ m: inout YAMLMap, file: YAMLFile, what: String) -> RateRule? {
        let ms = metricAndStations(&m, file: file, what: what)
        let risingNode = m.value("rising")
        let fallingNode = m.value("falling")
        let rising = risingNode.flatMap { file.number($0, what: "rising") }
        let falling = fallingNode.flatMap { file.number($0, what: "falling") }
        let window = m.value("window").flatMap { file.duration($0, what: "window") } ?? 3_600
        if let n = m.value("window"), window <= 0 { file.error(n, "window must be longer than 0s") }
        // `per: 1h` (default) or `per: window` (the change over the whole window).
        var per: Int64 = 3_600
        if let n = m.value("per") {
            if n.string == "window" {
                per = window
            } else if let d = file.duration(n, what: "per") {
                if d <= 0 { file.error(n, "per must be longer than 0s, or window") } else { per = d }
            }
        }
        let clearNode = m.value("clear")
        let clear = clearNode.flatMap { file.number($0, what: "clear") }
        let holdFor = m.value("for").flatMap { file.duration($0, what: "for") } ?? 0
        let direction: RateRule.Direction
        let threshold: Double
        switch (rising, falling) {
        case (let r?, nil):
            direction = .rising
            threshold = r
        case (nil, let f?):
            direction = .falling
            threshold = f
        case (.some, .some):
            file.error(fallingNode, "\(what) has both rising: and falling:; use one (two rules for both)")
            return nil
        case (nil, nil):
            if risingNode == nil && fallingNode == nil {
                file.error(m.node, "\(what) needs exactly one of rising: or falling: (a rate per hour)")
            }
            return nil
        }
        let thresholdNode = direction == .rising ? risingNode : fallingNode
        if threshold <= 0 {
            file.error(
                thresholdNode,
                "\(direction.rawValue) must be a positive rate (units per \(DurationText.format(per))); use falling: for a drop"
            )
            return nil
        }
        if let clear, clear > threshold || clear < 0 {
            file.error(
                clearNode,
                "clear (\(formatValue(clear))) must be between 0 and \(direction.rawValue) (\(formatValue(threshold))): the alert resolves when the rate drops below clear"
            )
            return nil
        }
        guard let ms else { return nil }
        return RateRule(
            metric: ms.0, stations: ms.1, direction: direction, threshold: threshold, clear: clear, window: window,
            per: per, holdFor: holdFor)
    }

    static func stale(_ m: inout YAMLMap, file: YAMLFile, what: String) -> StaleRule? {
        let ms = metricAndStations(&m, file: file, what: what)
        let after = m.required("after", what: what).flatMap { file.duration($0, what: "after") }
        guard let ms, let after else { return nil }
        if after <= 0 { file.error(m.value("after"), "after must be longer than 0s") }
        return StaleRule(metric: ms.0, stations: ms.1, after: after)
    }
}
