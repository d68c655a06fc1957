import Foundation
import KlaxonCore
import Testing

/// 2023-10-07T06:41:00Z in epoch milliseconds.
private let origin: Int64 = 1_696_660_860_000

private let kabul = QuakeRule.Place(name: "Kabul", latitude: 34.5553, longitude: 69.2075, radiusKm: 1000)
private let herat = QuakeRule.Place(name: "Herat", latitude: 34.3482, longitude: 62.1997, radiusKm: 100)

/// An M6.3 near Herat, as a later version of the feed reports it.
private func herat(
    magnitude: Double? = 6.3, depthKm: Double? = 14, sig: Int? = 1786, alert: String? = "orange", tsunami: Bool = true,
    status: String = "reviewed", type: String = "earthquake", tz: Int? = nil, updatedMinutes: Int64 = 60
) -> QuakeEvent {
    QuakeEvent(
        id: "us6000ldpm", ids: ["us6000ldpm"], time: origin, updated: origin + updatedMinutes * 60_000,
        magnitude: magnitude, magType: "mww", place: "35 km SSW of Herat, Afghanistan",
        title: "M 6.3 - 35 km SSW of Herat, Afghanistan", latitude: 34.07, longitude: 61.9, depthKm: depthKm, sig: sig,
        alert: alert, tsunami: tsunami, status: status, type: type,
        url: "https://earthquake.usgs.gov/earthquakes/eventpage/us6000ldpm", tz: tz)
}

/// A small Californian event, revised over time.
private func california(
    magnitude: Double?, status: String = "automatic", alert: String? = nil, updatedMinutes: Int64
) -> QuakeEvent {
    QuakeEvent(
        id: "ci40000001", ids: ["ci40000001", "us7000zzzz"], time: origin, updated: origin + updatedMinutes * 60_000,
        magnitude: magnitude, magType: "ml", place: "12 km NNE of Ridgecrest, CA", latitude: 35.73,
        longitude: -117.61, depthKm: 8.2, sig: 350, alert: alert, status: status,
        url: "https://earthquake.usgs.gov/earthquakes/eventpage/ci40000001", tz: nil)
}

@Suite("quake rule")
struct QuakeRuleTests {
    // MARK: - Geometry and PAGER

    @Test("great-circle distances")
    func distances() {
        let paris = Geo.distanceKm(lat1: 48.8566, lon1: 2.3522, lat2: 51.5074, lon2: -0.1278)
        #expect(abs(paris - 343.5565) < 0.001)
        #expect(abs(Geo.distanceKm(lat1: 0, lon1: 0, lat2: 0, lon2: 1) - 111.1951) < 0.001)
        #expect(abs(Geo.distanceKm(lat1: 90, lon1: 0, lat2: -90, lon2: 0) - 20015.1144) < 0.001)
        #expect(abs(Geo.distanceKm(lat1: 0, lon1: 179.5, lat2: 0, lon2: -179.5) - 111.1951) < 0.001)
        #expect(Geo.distanceKm(lat1: 12, lon1: 34, lat2: 12, lon2: 34) == 0)
        #expect(abs(kabul.distanceKm(to: herat()) - 673.1686) < 0.001)
    }

    @Test("PAGER levels by name, in order")
    func pagerLevels() {
        #expect(PagerLevel("green") == .green)
        #expect(PagerLevel("ORANGE") == .orange)
        #expect(PagerLevel("red") == .red)
        #expect(PagerLevel(nil) == nil)
        #expect(PagerLevel("") == nil)
        #expect(PagerLevel("purple") == nil)
        #expect(PagerLevel.green < .yellow && PagerLevel.yellow < .orange && PagerLevel.orange < .red)
        #expect(PagerLevel.red.name == "red")
    }

    @Test("the event normalises its fields")
    func eventNormalises() {
        let e = QuakeEvent(
            id: "x1", ids: ["x2"], time: -1500, updated: 0, magnitude: 4.4000000000000004, latitude: 0, longitude: 0,
            alert: "RED", status: "REVIEWED", type: "Quarry Blast")
        #expect(e.ids == ["x1", "x2"])
        #expect(e.magnitude == 4.4)
        #expect(e.alert == "red" && e.status == "reviewed" && e.type == "quarry blast")
        #expect(e.timeSeconds == -2)
        #expect(QuakeEvent(id: "d", time: 0, updated: 0, latitude: 0, longitude: 0, status: "DELETED").isDeleted)
    }

    @Test("the rule is of the quake family, not a series rule: readings never reach it")
    func ruleKind() throws {
        let kind = QuakeRule(minMagnitude: 5)
        #expect(QuakeRule.kindName == "quake")
        #expect(kind.metric == "quake")
        #expect(kind.types == ["earthquake"])
        let rule = Rule(name: "big-quakes", kind: kind)
        #expect(rule.kind.kindName == "quake")
        guard case .quake = rule.kind.family else {
            Issue.record("a quake rule is of the quake family")
            return
        }
        #expect(rule.kind.series == nil)
        #expect(QuakeRunner(rules: [rule]).ruleNames == ["big-quakes"])
        #expect(TripRunner(rules: [rule]).isEmpty)
        // A reading that happens to use the metric `quake` opens no session (and no alert state).
        #expect(RuleEngine(rules: [rule]).session(for: SeriesKey(station: "s", metric: "quake")) == nil)
    }

    // MARK: - Matching

    @Test("magnitude: at the minimum matches, below does not, none never")
    func magnitudeBoundary() {
        let rule = QuakeRule(minMagnitude: 4.5)
        #expect(rule.matches(herat(magnitude: 4.5)) != nil)
        #expect(rule.matches(herat(magnitude: 4.4999999999)) != nil)  // rounded to 4.5
        #expect(rule.matches(herat(magnitude: 4.499)) == nil)
        #expect(rule.matches(herat(magnitude: nil)) == nil)
        #expect(QuakeRule(minMagnitude: -1).matches(herat(magnitude: -0.38)) != nil)
        // Without `near` there is no place.
        let match = rule.matches(herat())
        #expect(match?.place == nil && match?.distanceKm == nil)
    }

    @Test("max depth, min sig")
    func depthAndSig() {
        let deep = QuakeRule(minMagnitude: 4, maxDepthKm: 70)
        #expect(deep.matches(herat(depthKm: 70)) != nil)
        #expect(deep.matches(herat(depthKm: 70.1)) == nil)
        #expect(deep.matches(herat(depthKm: nil)) == nil)
        let sig = QuakeRule(minMagnitude: 4, minSig: 600)
        #expect(sig.matches(herat(sig: 600)) != nil)
        #expect(sig.matches(herat(sig: 599)) == nil)
        #expect(sig.matches(herat(sig: nil)) == nil)
    }

    @Test("alert_at_least and tsunami")
    func alertAndTsunami() {
        let orange = QuakeRule(minMagnitude: 4, alertAtLeast: .orange)
        #expect(orange.matches(herat(alert: "red")) != nil)
        #expect(orange.matches(herat(alert: "orange")) != nil)
        #expect(orange.matches(herat(alert: "yellow")) == nil)
        #expect(orange.matches(herat(alert: nil)) == nil)
        let tsunami = QuakeRule(minMagnitude: 4, tsunamiOnly: true)
        #expect(tsunami.matches(herat(tsunami: true)) != nil)
        #expect(tsunami.matches(herat(tsunami: false)) == nil)
        #expect(QuakeRule(minMagnitude: 4).matches(herat(tsunami: false)) != nil)
    }

    @Test("near: the nearest watched place within its radius, by great-circle distance")
    func near() throws {
        let both = QuakeRule(minMagnitude: 4, near: [kabul, herat])
        let match = try #require(both.matches(herat()))
        #expect(match.place == herat)
        #expect(abs((match.distanceKm ?? 0) - 41.4303) < 0.001)

        let kabulOnly = QuakeRule(minMagnitude: 4, near: [kabul])
        #expect(kabulOnly.matches(herat())?.place == kabul)
        var tight = kabul
        tight.radiusKm = 673
        #expect(QuakeRule(minMagnitude: 4, near: [tight]).matches(herat()) == nil)
        tight.radiusKm = 674
        #expect(QuakeRule(minMagnitude: 4, near: [tight]).matches(herat()) != nil)

        // A nearer place whose radius is too small does not hide a farther one that covers the event.
        var smallHerat = herat
        smallHerat.radiusKm = 10
        #expect(QuakeRule(minMagnitude: 4, near: [smallHerat, kabul]).matches(herat())?.place == kabul)
    }

    @Test("types: quarry blasts are left out by default")
    func types() {
        let rule = QuakeRule(minMagnitude: 1)
        #expect(rule.matches(herat(type: "earthquake")) != nil)
        #expect(rule.matches(herat(type: "quarry blast")) == nil)
        #expect(rule.matches(herat(type: "explosion")) == nil)
        let blasts = QuakeRule(minMagnitude: 1, types: ["Quarry Blast"])
        #expect(blasts.matches(herat(type: "quarry blast")) != nil)
        #expect(blasts.matches(herat(type: "earthquake")) == nil)
        #expect(QuakeRule(minMagnitude: 1, types: []).matches(herat(type: "explosion")) != nil)
    }

    @Test("reviewed_only, and deleted events never match")
    func reviewedAndDeleted() {
        let reviewed = QuakeRule(minMagnitude: 4, reviewedOnly: true)
        #expect(reviewed.matches(herat(status: "reviewed")) != nil)
        #expect(reviewed.matches(herat(status: "automatic")) == nil)
        #expect(QuakeRule(minMagnitude: 4).matches(herat(status: "automatic")) != nil)
        #expect(QuakeRule(minMagnitude: 4).matches(herat(status: "deleted")) == nil)
    }

    // MARK: - Announcing

    @Test("a new quake fires with the whole story in one line")
    func firingMessage() throws {
        let rule = QuakeRule(minMagnitude: 6, near: [kabul])
        let (change, announced) = try #require(rule.assess(herat(), announced: nil))
        #expect(change.state == .firing)
        #expect(change.at == origin / 1000)
        #expect(change.value == 6.3)
        #expect(change.level == "orange")
        #expect(change.fromLevel == nil)
        #expect(
            change.summary
                == "M6.3 earthquake 35 km SSW of Herat, Afghanistan — depth 14 km, 673 km from Kabul; PAGER orange; tsunami flag; 2023-10-07 10:41 local (UTC+04:00 approx.); https://earthquake.usgs.gov/earthquakes/eventpage/us6000ldpm"
        )
        #expect(change.explanation.contains("magnitude 6.3 mww ≥ 6"))
        #expect(change.explanation.contains("type earthquake"))
        #expect(change.explanation.contains("673 km from Kabul ≤ 1000 km"))
        #expect(
            announced
                == QuakeRule.Announced(
                    magnitude: 6.3, alert: "orange", status: "reviewed", updated: origin + 3_600_000, withdrawn: false))
    }

    @Test("the explanation names every condition that matched")
    func explanation() throws {
        let rule = QuakeRule(
            minMagnitude: 6, maxDepthKm: 70, minSig: 600, alertAtLeast: .yellow, tsunamiOnly: true, near: [herat],
            reviewedOnly: true)
        let change = try #require(rule.assess(herat(), announced: nil)).change
        for part in [
            "magnitude 6.3 mww ≥ 6", "depth 14 km ≤ 70 km", "sig 1786 ≥ 600", "PAGER orange ≥ yellow",
            "tsunami flag set",
            "type earthquake", "41 km from Herat ≤ 100 km", "status reviewed",
        ] {
            #expect(change.explanation.contains(part), "\(part)")
        }
    }

    @Test("local time from the feed's tz, else estimated from the longitude")
    func localTime() throws {
        let rule = QuakeRule(minMagnitude: 1)
        let exact = try #require(rule.assess(herat(alert: nil, tsunami: false, tz: 270), announced: nil)).change
        #expect(exact.summary.contains("; 2023-10-07 11:11 local (UTC+04:30); "))
        #expect(!exact.summary.contains("PAGER"))
        #expect(!exact.summary.contains("tsunami"))
        let west = try #require(rule.assess(california(magnitude: 3.1, updatedMinutes: 1), announced: nil)).change
        // -117.61 / 15 = -7.8 → UTC-08:00.
        #expect(
            west.summary
                == "M3.1 earthquake 12 km NNE of Ridgecrest, CA — depth 8.2 km; 2023-10-06 22:41 local (UTC-08:00 approx.); https://earthquake.usgs.gov/earthquakes/eventpage/ci40000001"
        )
        var region = herat(tz: -60)
        region.place = "Mid-Atlantic Ridge"
        #expect(
            try #require(rule.assess(region, announced: nil)).change.summary.hasPrefix(
                "M6.3 earthquake, Mid-Atlantic Ridge — depth 14 km; PAGER orange; tsunami flag; 2023-10-07 05:41 local (UTC-01:00);"
            ))
    }

    @Test("an event that does not match, or is deleted, is not announced")
    func notAnnounced() {
        let rule = QuakeRule(minMagnitude: 5)
        #expect(rule.assess(california(magnitude: 4.9, updatedMinutes: 1), announced: nil) == nil)
        #expect(rule.assess(herat(status: "deleted"), announced: nil) == nil)
    }

    @Test("revisions: one firing, updates only for changes that matter, one withdrawal")
    func revisionSequence() throws {
        let rule = QuakeRule(minMagnitude: 4.5)
        var announced: QuakeRule.Announced?
        var states: [TransitionState] = []
        func assess(_ e: QuakeEvent) -> Change? {
            guard let result = rule.assess(e, announced: announced) else { return nil }
            announced = result.announced
            states.append(result.change.state)
            return result.change
        }

        // v1: automatic M4.9 → firing.
        let v1 = try #require(assess(california(magnitude: 4.9, updatedMinutes: 2)))
        #expect(v1.state == .firing)
        #expect(v1.summary.hasPrefix("M4.9 earthquake 12 km NNE of Ridgecrest, CA — depth 8.2 km; "))
        #expect(announced?.updated == origin + 120_000)

        // v2: later, nothing that matters changed (Δ0.05) → nothing.
        #expect(assess(california(magnitude: 4.9, updatedMinutes: 5)) == nil)
        #expect(assess(california(magnitude: 4.95, updatedMinutes: 6)) == nil)
        #expect(announced?.updated == origin + 120_000)

        // v3: M5.0 (Δ0.1 from what was announced) → changed.
        let v3 = try #require(assess(california(magnitude: 5.0, updatedMinutes: 10)))
        #expect(v3.state == .changed)
        #expect(v3.value == 5.0)
        #expect(v3.summary.hasPrefix("Update: M4.9 → M5.0 — M5.0 earthquake 12 km NNE of Ridgecrest, CA"))
        #expect(v3.details.contains("magnitude M4.9 → M5.0 (Δ0.1 ≥ 0.1)"))

        // v4: reviewed, same magnitude → changed.
        let v4 = try #require(assess(california(magnitude: 5.0, status: "reviewed", updatedMinutes: 30)))
        #expect(v4.state == .changed)
        #expect(v4.summary.hasPrefix("Update: now reviewed — M5.0 earthquake"))
        #expect(announced?.status == "reviewed")

        // A stale copy (older `updated`) differing in everything → nothing.
        #expect(assess(california(magnitude: 4.6, status: "automatic", alert: "red", updatedMinutes: 20)) == nil)
        // The same version again → nothing.
        #expect(assess(california(magnitude: 5.0, status: "reviewed", updatedMinutes: 30)) == nil)

        // Deleted → resolved, "Withdrawn".
        let deleted = try #require(assess(california(magnitude: 5.0, status: "deleted", updatedMinutes: 40)))
        #expect(deleted.state == .resolved)
        #expect(
            deleted.summary
                == "Withdrawn: the M5.0 event 12 km NNE of Ridgecrest, CA (2023-10-07 06:41 UTC) was deleted by USGS")
        #expect(announced?.withdrawn == true)

        // Deleted again, or even revived → nothing more.
        #expect(assess(california(magnitude: 5.0, status: "deleted", updatedMinutes: 50)) == nil)
        #expect(assess(california(magnitude: 5.5, status: "reviewed", updatedMinutes: 60)) == nil)

        #expect(states == [.firing, .changed, .changed, .resolved])
        #expect(states.filter { $0 == .firing }.count == 1)
    }

    @Test("a revision below the rule is still an update, and says so")
    func revisedBelow() throws {
        let rule = QuakeRule(minMagnitude: 4.5)
        let first = try #require(rule.assess(california(magnitude: 4.6, updatedMinutes: 1), announced: nil))
        let lower = try #require(rule.assess(california(magnitude: 4.4, updatedMinutes: 2), announced: first.announced))
        #expect(lower.change.state == .changed)
        #expect(
            lower.change.summary.hasPrefix(
                "Update: M4.6 → M4.4, revised below the rule's threshold (M4.5) — M4.4 earthquake 12 km NNE of Ridgecrest, CA"
            ))
        #expect(lower.change.details.contains("no longer meets the rule: magnitude 4.4 ml < 4.5"))
        #expect(lower.announced.magnitude == 4.4)
        // Back up again: another update, never a second firing.
        let again = try #require(rule.assess(california(magnitude: 4.6, updatedMinutes: 3), announced: lower.announced))
        #expect(again.change.state == .changed)
        #expect(again.change.summary.hasPrefix("Update: M4.4 → M4.6 — "))
    }

    @Test("PAGER changes are updates with the level they left")
    func pagerUpdate() throws {
        let rule = QuakeRule(minMagnitude: 6, alertAtLeast: .orange)
        let first = try #require(rule.assess(herat(magnitude: 6.3, status: "automatic"), announced: nil))
        let revised = try #require(
            rule.assess(
                herat(magnitude: 6.1, alert: "yellow", status: "reviewed", updatedMinutes: 120),
                announced: first.announced))
        #expect(revised.change.state == .changed)
        #expect(revised.change.level == "yellow")
        #expect(revised.change.fromLevel == "orange")
        #expect(
            revised.change.summary.hasPrefix(
                "Update: M6.3 → M6.1, PAGER orange → yellow, now reviewed, no longer meets the rule (PAGER yellow < orange) — M6.1 earthquake"
            ))
        // A level appearing where there was none.
        let none = QuakeRule.Announced(magnitude: 6.3, alert: nil, status: "reviewed", updated: origin)
        let green = try #require(QuakeRule(minMagnitude: 6).assess(herat(alert: "green"), announced: none)).change
        #expect(green.summary.hasPrefix("Update: PAGER none → green — "))
        #expect(green.fromLevel == nil)
    }

    @Test("what was announced survives a JSON round trip")
    func announcedCodable() throws {
        let announced = QuakeRule.Announced(
            magnitude: 4.9, alert: "green", status: "automatic", updated: 1_700_000_000_123, withdrawn: false)
        let data = try JSONEncoder().encode(announced)
        #expect(try JSONDecoder().decode(QuakeRule.Announced.self, from: data) == announced)
        let event = herat()
        #expect(try JSONDecoder().decode(QuakeEvent.self, from: JSONEncoder().encode(event)) == event)
    }
}
