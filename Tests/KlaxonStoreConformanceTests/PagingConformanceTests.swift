import Foundation
import KlaxonCore
import KlaxonStore
import Testing

/// The bounded reads behind every list (the status site, the API, chat): pages of firing alerts
/// and silences in a stable order, counts from aggregates, acks joined per page. The same on every
/// backend.
@Suite(.timeLimit(.minutes(10))) struct PagingConformanceTests {
    /// `high` (warning) fires above 10 and `very-high` (critical) above 40, at every station.
    let rules = [
        Rule(name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10)),
        Rule(
            name: "very-high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 40),
            severity: .critical),
    ]

    /// 120 stations: 40 read 50 (both rules fire), 60 read 20 (only `high`), 20 read 1 (nothing);
    /// readings spread over minutes, several at the same second (ties broken by id).
    func fill(_ store: any Store) async throws {
        var readings: [Reading] = []
        for i in 0..<120 {
            let value: Double = i < 40 ? 50 : i < 100 ? 20 : 1
            let time = t("2026-01-01T00:00:00Z") + Int64(i / 3) * 60
            readings.append(Reading(station: "S\(i)", metric: "gage_height", time: time, value: value, unit: "ft"))
        }
        _ = try await store.readingWriter().write(readings)
        _ = try await store.evaluate(engine: RuleEngine(rules: rules), now: t("2026-01-01T03:00:00Z"))
    }

    @Test("firing alerts page by page: each once, most severe then newest first", arguments: Backend.allCases)
    func firingPages(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            try await fill(store)
            let counts = try await store.firingAlertCounts()
            #expect(counts.bySeverity == [.critical: 40, .warning: 100])
            #expect(counts.total == 140)
            let everything = try await store.firingAlerts()
            #expect(everything.count == 140)

            for size in [1, 7, 140, 500] {
                var seen: [FiringAlert] = []
                var after: FiringCursor? = nil
                var pages = 0
                repeat {
                    let page = try await store.firingAlerts(limit: size, after: after)
                    #expect(page.alerts.count <= size)
                    seen += page.alerts
                    after = page.next
                    pages += 1
                    // A cursor survives its text form (it travels in links and `next` fields).
                    if let next = page.next { #expect(FiringCursor(next.description) == next) }
                } while after != nil && pages < 1_000
                #expect(seen.count == 140, "size \(size)")
                #expect(Set(seen.map(\.transitionID)).count == 140, "no alert twice (size \(size))")
                #expect(Set(seen.map(\.transitionID)) == Set(everything.map(\.transitionID)))
                #expect(pages == (140 + size - 1) / size, "the last full page says there is no next")
                let order = seen.map { ($0.transition.severity.pagingRank, $0.transition.at, $0.transitionID) }
                #expect(zip(order, order.dropFirst()).allSatisfy { $0 > $1 }, "a strict order (size \(size))")
            }
            let first = try await store.firingAlerts(limit: 50, after: nil)
            #expect(first.alerts.prefix(40).allSatisfy { $0.transition.severity == .critical })
            #expect(first.alerts.dropFirst(40).allSatisfy { $0.transition.severity == .warning })
        }
    }

    @Test("hostile page sizes and cursors are clamped, never unbounded", arguments: Backend.allCases)
    func hostileLimits(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            try await fill(store)
            for limit in [0, -1, Int.min] {
                #expect(try await store.firingAlerts(limit: limit, after: nil).alerts.count == 1, "limit \(limit)")
            }
            #expect(try await store.firingAlerts(limit: .max, after: nil).alerts.count == 140)
            #expect(try await store.firingAlerts(limit: .max, after: nil).next == nil)
            // A cursor past either end: an empty page, or all of it.
            let end = FiringCursor(severity: .info, at: .min, transitionID: 0)
            #expect(try await store.firingAlerts(limit: 10, after: end).alerts.isEmpty)
            let top = FiringCursor(severity: .critical, at: .max, transitionID: .max)
            #expect(try await store.firingAlerts(limit: 500, after: top).alerts.count == 140)
            for text in [
                "", "x", "2_1_", "_1_2", "3_1_1", "-1_1_1", "2_1_-1", "2_1_1_1", "2_ 1_1", "2_+1_1", "2_0x10_1",
                "2_99999999999999999999_1", String(repeating: "9", count: 10_000), "2_1_1\u{0}",
            ] {
                #expect(FiringCursor(text) == nil, "\(text.prefix(30))")
            }
            for text in [
                "", "x", "_a", "1_", "+1_a", "1_" + String(repeating: "a", count: 300), "99999999999999999999_a",
            ] {
                #expect(SilenceCursor(text) == nil, "\(text.prefix(30))")
            }
        }
    }

    @Test("acks come with their page; ack probes one alert", arguments: Backend.allCases)
    func acksPerPage(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            try await fill(store)
            let page = try await store.firingAlerts(limit: 3, after: nil)
            #expect(page.alerts.allSatisfy { $0.ack == nil })
            let target = page.alerts[1]
            let acked = try await store.ack(transitionID: target.transitionID, by: "ops:ann", at: 77)
            #expect(acked?.key == target.key)
            // Not a firing alert's current transition: nothing.
            #expect(try await store.ack(transitionID: 0, by: "x", at: 1) == nil)
            #expect(try await store.ack(transitionID: -1, by: "x", at: 1) == nil)
            #expect(try await store.ack(transitionID: .max, by: "x", at: 1) == nil)
            let again = try await store.firingAlerts(limit: 3, after: nil)
            #expect(again.alerts.map(\.transitionID) == page.alerts.map(\.transitionID))
            #expect(again.alerts[1].ack == Ack(transitionID: target.transitionID, by: "ops:ann", at: 77))
            #expect(again.alerts[0].ack == nil && again.alerts[2].ack == nil)
            #expect(
                try await store.acks() == [target.key: Ack(transitionID: target.transitionID, by: "ops:ann", at: 77)])
            // The alert resolves: the ack no longer holds, on the page or in `acks()`.
            _ = try await store.readingWriter().write([
                Reading(
                    station: target.key.station, metric: "gage_height", time: t("2026-01-01T02:00:00Z"), value: 1,
                    unit: "ft")
            ])
            _ = try await store.evaluate(engine: RuleEngine(rules: rules), now: t("2026-01-01T03:00:00Z"))
            #expect(try await store.acks().isEmpty)
            let after = try await store.firingAlerts(limit: 500, after: nil)
            #expect(!after.alerts.contains { $0.key == target.key })
            #expect(after.alerts.allSatisfy { $0.ack == nil })
        }
    }

    @Test("silences page by page with a total", arguments: Backend.allCases)
    func silencePages(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let matcher = try Matcher.parse("station=A")
            // 30 silences, several starting at the same second (ties broken by id); 5 already ended.
            for i in 0..<30 {
                let ends: Int64 = i < 5 ? 50 : 10_000
                try await store.addSilence(
                    Silence(
                        id: String(format: "s-%02d", 29 - i), matchers: [matcher], starts: Int64(i / 4),
                        ends: ends, comment: "c", createdBy: "me"), now: 0)
            }
            let active = try await store.silences(now: 100).sorted { ($0.starts, $0.id) < ($1.starts, $1.id) }.map(\.id)
            #expect(active.count == 25)
            for size in [1, 4, 25, 100] {
                var seen: [String] = []
                var after: SilenceCursor? = nil
                var pages = 0
                repeat {
                    let page = try await store.silences(now: 100, includeExpired: false, limit: size, after: after)
                    #expect(page.total == 25)
                    #expect(page.silences.count <= size)
                    seen += page.silences.map(\.id)
                    after = page.next
                    if let next = page.next { #expect(SilenceCursor(next.description) == next) }
                    pages += 1
                } while after != nil && pages < 100
                #expect(seen == active, "size \(size)")
            }
            let all = try await store.silences(now: 100, includeExpired: true, limit: 1_000, after: nil)
            #expect(all.total == 30 && all.silences.count == 30 && all.next == nil)
            #expect(
                try await store.silences(now: 100, includeExpired: false, limit: -3, after: nil).silences.count == 1)
        }
    }

    @Test("quakes: the newest of a span, their count and revisions, bounded", arguments: Backend.allCases)
    func quakePages(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            // 40 events a minute apart, magnitudes 0.5 to 4.4 (one with none); the newest revised twice.
            let base: Int64 = 1_767_225_600_000
            let events = (0..<40).map { i in
                QuakeEvent(
                    id: "us\(i)", time: base + Int64(i) * 60_000, updated: base + Int64(i) * 60_000,
                    magnitude: i == 39 ? nil : 0.5 + Double(i) / 10, latitude: 1, longitude: 2)
            }
            _ = try await store.write(quakes: events, at: base)
            for n in 1...2 {
                var e = events[38]
                e.updated += Int64(n) * 1_000
                _ = try await store.write(quakes: [e], at: base + Int64(n))
            }
            let page = try await store.quakes(from: .min, to: .max, minMagnitude: nil, limit: 10)
            #expect(page.total == 40)
            #expect(page.quakes.map(\.key) == (30..<40).reversed().map { "us\($0)" })
            #expect(page.revisions["us38"] == 3)
            #expect(page.revisions.keys.allSatisfy { key in page.quakes.contains { $0.key == key } })
            let strong = try await store.quakes(from: .min, to: .max, minMagnitude: 4, limit: 100)
            #expect(strong.total == 4 && strong.quakes.map(\.key) == ["us38", "us37", "us36", "us35"])
            let span = try await store.quakes(
                from: base + 10 * 60_000, to: base + 19 * 60_000, minMagnitude: nil, limit: .max)
            #expect(span.total == 10 && span.quakes.count == 10)
            #expect(try await store.quakes(from: .min, to: .max, minMagnitude: nil, limit: -1).quakes.count == 1)
            #expect(try await store.quakes(from: 1, to: 0, minMagnitude: nil, limit: 5).total == 0)
        }
    }
}
