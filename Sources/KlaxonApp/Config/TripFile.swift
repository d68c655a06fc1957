import Foundation
import KlaxonCore
import Yams

/// Trip files (`klaxon trip add FILE.yaml`), read as strictly as rule files: every problem is
/// reported as `PATH:LINE:COL: error: …` naming the field and why.
///
/// ```yaml
/// name: denver-work
/// purpose: business                # business | leisure
/// activities: [formal, hiking]
/// stops:                           # in date order
///   - {place: "Denver, Colorado", arrive: 2026-12-01, nights: 3}
///   - {place: Boulder, latitude: 40.01, longitude: -105.27, arrive: 2026-12-04, nights: 0}
/// preferences: {laundry: false, laundry_every: 4, rewear_bottoms: true, feels: runs-cold, units: imperial}
/// overrides:
///   - {add: umbrella}
///   - {remove: sunglasses}
///   - {item: t-shirt, quantity: 3}
/// ```
public enum TripFile {
    public static func load(path: String, owner: String) throws -> Trip {
        switch YAMLLimits.read(path: path) {
        case .success(let text): return try load(text: text, origin: path, owner: owner)
        case .failure(let problem): throw UserError("\(path): \(problem.message)")
        }
    }

    /// A trip from YAML text; problems are reported against `origin`.
    public static func load(text: String, origin: String, owner: String) throws -> Trip {
        let path = origin
        let diagnostics = Diagnostics()
        let trip = parse(text, path: path, owner: owner, diagnostics: diagnostics)
        guard diagnostics.isEmpty, let trip else { throw DiagnosticsError(diagnostics: diagnostics.items) }
        return trip
    }

    static func parse(_ text: String, path: String, owner: String, diagnostics: Diagnostics) -> Trip? {
        let file = YAMLFile(path: path, diagnostics: diagnostics)
        guard let root = file.compose(text), var m = file.map(root, what: "a trip") else {
            if diagnostics.isEmpty {
                diagnostics.add(Diagnostic(path: path, line: 1, column: 1, message: "the file holds no trip"))
            }
            return nil
        }
        let name = m.required("name", what: "the trip").flatMap { file.string($0, what: "name") }
        if let name, name.isEmpty || name.contains("/") || name.contains(where: \.isNewline) {
            file.error(m.value("name"), "name must be a non-empty single line without \"/\"")
        }
        var purpose = Trip.Purpose.leisure
        if let n = m.value("purpose"), let p = file.string(n, what: "purpose") {
            if let v = Trip.Purpose(rawValue: p) {
                purpose = v
            } else {
                file.error(n, "purpose must be business or leisure, not \"\(p)\"")
            }
        }
        let activities = (m.value("activities").flatMap { file.stringList($0, what: "activities") } ?? []).map {
            $0.lowercased()
        }
        var stops: [Trip.Stop] = []
        if let n = m.required("stops", what: "the trip"), let items = file.list(n, what: "stops") {
            if items.isEmpty { file.error(n, "stops is empty: a trip needs at least one stop") }
            for item in items {
                guard var sm = file.map(item, what: "a stop") else { continue }
                let place = sm.required("place", what: "the stop").flatMap { file.string($0, what: "place") }
                let latNode = sm.value("latitude")
                let lonNode = sm.value("longitude")
                let lat = latNode.flatMap { file.number($0, what: "latitude") }
                let lon = lonNode.flatMap { file.number($0, what: "longitude") }
                if (latNode == nil) != (lonNode == nil) {
                    file.error(
                        latNode ?? lonNode, "give both latitude and longitude, or neither (the place is then looked up)"
                    )
                }
                if let lat, !(-90...90).contains(lat) { file.error(latNode, "latitude must be between -90 and 90") }
                if let lon, !(-180...180).contains(lon) {
                    file.error(lonNode, "longitude must be between -180 and 180")
                }
                let arriveNode = sm.required("arrive", what: "the stop")
                var arrive: String? = nil
                if let arriveNode, let a = arriveNode.scalar?.string {
                    if Timestamp.parse(a + "T00:00:00Z") != nil, a.count == 10 {
                        arrive = a
                    } else {
                        file.error(arriveNode, "arrive must be a date like 2026-12-01, not \"\(a)\"")
                    }
                }
                let nightsNode = sm.required("nights", what: "the stop")
                let nights = nightsNode.flatMap { file.integer($0, what: "nights") }
                if let nights, nights < 0 { file.error(nightsNode, "nights must be 0 or more, not \(nights)") }
                if let nights, nights > 366 { file.error(nightsNode, "nights must be at most 366") }
                sm.rejectUnknown(known: ["place", "latitude", "longitude", "arrive", "nights"], what: "a stop")
                if let place, let arrive, let nights {
                    if let previous = stops.last, arrive < previous.arrive {
                        file.error(
                            arriveNode,
                            "stops must be in date order: \(place) arrives \(arrive), before \(previous.place) (\(previous.arrive))"
                        )
                    }
                    stops.append(
                        Trip.Stop(place: place, latitude: lat, longitude: lon, arrive: arrive, nights: max(0, nights)))
                }
            }
        }
        var prefs = PackingPreferences()
        if let n = m.value("preferences"), var pm = file.map(n, what: "preferences") {
            if let v = pm.value("laundry").flatMap({ file.bool($0, what: "laundry") }) { prefs.laundry = v }
            if let v = pm.value("laundry_every").flatMap({ file.integer($0, what: "laundry_every") }) {
                if v < 1 {
                    file.error(pm.value("laundry_every"), "laundry_every must be at least 1")
                } else {
                    prefs.laundryEvery = v
                }
            }
            if let v = pm.value("rewear_bottoms").flatMap({ file.bool($0, what: "rewear_bottoms") }) {
                prefs.rewearBottoms = v
            }
            if let fn = pm.value("feels"), let f = file.string(fn, what: "feels") {
                if let v = PackingPreferences.Feels(rawValue: f) {
                    prefs.feels = v
                } else {
                    file.error(
                        fn,
                        "feels must be one of \(PackingPreferences.Feels.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(f)\""
                    )
                }
            }
            if let un = pm.value("units"), let u = file.string(un, what: "units") {
                if let v = PackingPreferences.Units(rawValue: u) {
                    prefs.units = v
                } else {
                    file.error(un, "units must be metric or imperial, not \"\(u)\"")
                }
            }
            pm.rejectUnknown(
                known: ["laundry", "laundry_every", "rewear_bottoms", "feels", "units"], what: "preferences")
        }
        var overrides: [PackingOverride] = []
        if let n = m.value("overrides"), let items = file.list(n, what: "overrides") {
            for item in items {
                guard var om = file.map(item, what: "an override") else { continue }
                if let a = om.value("add").flatMap({ file.string($0, what: "add") }) {
                    let q = om.value("quantity").flatMap { file.integer($0, what: "quantity") }
                    overrides.append(PackingOverride(item: a, action: .add, quantity: q))
                    om.rejectUnknown(known: ["add", "quantity"], what: "an add override")
                } else if let r = om.value("remove").flatMap({ file.string($0, what: "remove") }) {
                    overrides.append(PackingOverride(item: r, action: .remove))
                    om.rejectUnknown(known: ["remove"], what: "a remove override")
                } else if let i = om.value("item").flatMap({ file.string($0, what: "item") }) {
                    let qn = om.required("quantity", what: "a quantity override")
                    if let q = qn.flatMap({ file.integer($0, what: "quantity") }) {
                        if q < 0 { file.error(qn, "quantity must be 0 or more") }
                        overrides.append(PackingOverride(item: i, action: .quantity, quantity: max(0, q)))
                    }
                    om.rejectUnknown(known: ["item", "quantity"], what: "a quantity override")
                } else {
                    file.error(item, "an override is {add: ITEM}, {remove: ITEM} or {item: ITEM, quantity: N}")
                    om.markAllUsed()
                }
            }
        }
        m.rejectUnknown(
            known: ["name", "purpose", "activities", "stops", "preferences", "overrides"], what: "a trip")
        guard let name, !stops.isEmpty else { return nil }
        return Trip(
            name: name, owner: owner, stops: stops, purpose: purpose, activities: activities, preferences: prefs,
            overrides: overrides)
    }
}
