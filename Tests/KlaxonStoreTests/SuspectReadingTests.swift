import Foundation
import GRDB
import KlaxonCore
import Testing

@testable import KlaxonSQLite
@testable import KlaxonStore

func flow(_ time: String, _ value: Double, quality: String? = "3") -> Reading {
    Reading(
        station: "KEYS", metric: "discharge", time: t(time), value: value, unit: "ft³/s", source: "cwms",
        quality: quality)
}

@Suite struct SuspectReadingTests {
    @Test("ingest marks suspect readings, counts them, and keeps them; statistics leave them out")
    func ingestMarksAndCounts() async throws {
        let tmp = try TempDatabase()
        let store = try SQLiteStore.open(path: tmp.path)
        let ingester = try store.readingWriter()
        // Enough new readings to take the multi-row insert path, with the glitch in the middle.
        var batch = (0..<100).map { flow(Timestamp.format(t("2024-01-01T00:00:00Z") + Int64($0) * 3_600), 1_500) }
        batch[50].value = -8_455_545
        batch[50].quality = "0"  // not screened
        batch[70].quality = "17"  // screened, rejected
        var s = try await ingester.write(batch)
        #expect(s.inserted == 100 && s.suspect == 2)
        var stored = try await store.readings(station: "KEYS", metric: "discharge")
        #expect(stored.indices.filter { stored[$0].suspect } == [50, 70])

        // Written again: unchanged, nothing marked anew. A revision that fixes the glitch clears the mark;
        // one that breaks a good value sets it (one-row insert-then-update path).
        s = try await ingester.write(batch)
        #expect(s.unchanged == 100 && s.suspect == 0)
        s = try await ingester.write([
            flow(Timestamp.format(batch[50].time), 1_510), flow(Timestamp.format(batch[10].time), -9_999_999),
        ])
        #expect(s.revised == 2 && s.suspect == 1)
        stored = try await store.readings(station: "KEYS", metric: "discharge")
        #expect(stored.indices.filter { stored[$0].suspect } == [10, 70])

        let summary = try #require(
            try await store.summary(station: "KEYS", metric: "discharge", from: .min, to: .max))
        #expect(summary.count == 98 && summary.suspect == 2)
        #expect(summary.min == 1_500 && summary.max == 1_510)
        let marked = try await store.suspectReadings(
            station: "KEYS", metric: "discharge", from: .min, to: .max, limit: 1)
        #expect(marked.count == 2 && marked.newest.map(\.value) == [1_500])
        // The newest reading not suspect, unless asked.
        batch = [flow("2024-02-01T00:00:00Z", 1_450), flow("2024-02-02T00:00:00Z", -1, quality: "9")]
        _ = try await ingester.write(batch)
        #expect(try await store.latest(station: "KEYS", metric: "discharge")?.value == 1_450)
        let newest = try await store.latest(station: "KEYS", metric: "discharge", at: .max, includingSuspect: true)
        #expect(newest?.value == -1 && newest?.suspect == true)
        #expect(
            try await store.values(station: "KEYS", metric: "discharge", from: t("2024-01-31T00:00:00Z"), to: .max)
                .map(\.value) == [1_450])
        var replayed: [Double] = []
        try await store.forEachReading(from: t("2024-01-31T00:00:00Z"), to: nil) { _, _, readings in
            replayed += readings.map(\.value)
        }
        #expect(replayed == [1_450])
    }

    @Test("a suspect reading neither fires nor resolves an alert, nor counts as data for a stale check")
    func evaluationSkipsSuspect() async throws {
        let tmp = try TempDatabase()
        let engine = RuleEngine(rules: [
            Rule(name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10)),
            Rule(name: "reversed", kind: ThresholdRule(metric: "discharge", direction: .below, threshold: 0)),
            Rule(name: "quiet", kind: StaleRule(metric: "gage_height", after: 3_600), severity: .info),
        ])
        let store = try SQLiteStore.open(path: tmp.path)
        let ingester = try store.readingWriter()
        _ = try await ingester.write([
            reading("A", "2026-01-01T00:00:00Z", 11), flow("2026-01-01T00:00:00Z", -8_455_545, quality: "0"),
        ])
        var r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:05:00Z"), render: \.summary)
        #expect(r.transitions.map { "\($0.transition.rule) \($0.transition.state)" } == ["high firing"])
        #expect(r.newReadings == 1 && r.suspectReadings == 1 && r.lateReadings == 0)

        // A gauge glitch (−9,999 ft) would resolve the alert; it is suspect, so the alert stays firing.
        _ = try await ingester.write([reading("A", "2026-01-01T00:15:00Z", -9_999)])
        r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:20:00Z"), render: \.summary)
        #expect(r.transitions.isEmpty)
        #expect(r.newReadings == 0 && r.suspectReadings == 1 && r.lateReadings == 0)
        var states = try await store.alertStates()
        #expect(states[AlertKey(rule: "high", station: "A", metric: "gage_height")]?.status == .firing)
        #expect(states[AlertKey(rule: "high", station: "A", metric: "gage_height")]?.lastValue == 11)

        // Only glitches for over an hour: the gauge is stale (from its last believable reading at 00:00).
        _ = try await ingester.write([reading("A", "2026-01-01T01:10:00Z", -9_999)])
        r = try await store.evaluate(engine: engine, now: t("2026-01-01T01:15:00Z"), render: \.summary)
        #expect(r.transitions.map { "\($0.transition.rule) \($0.transition.state)" } == ["quiet firing"])
        #expect(r.transitions.first?.transition.at == t("2026-01-01T01:00:00Z"))

        // A believable reading resolves, as ever.
        _ = try await ingester.write([reading("A", "2026-01-01T01:30:00Z", 4)])
        r = try await store.evaluate(engine: engine, now: t("2026-01-01T01:35:00Z"), render: \.summary)
        #expect(
            r.transitions.map { "\($0.transition.rule) \($0.transition.state)" }.sorted() == [
                "high resolved", "quiet resolved",
            ])
        states = try await store.alertStates()
        #expect(states[AlertKey(rule: "reversed", station: "KEYS", metric: "discharge")]?.status != .firing)
    }

    @Test("the v12 migration marks readings stored before it, by range and by quality code")
    func migrationMarksOldReadings() async throws {
        let tmp = try TempDatabase()
        let queue = try DatabaseQueue(path: tmp.path)
        try SQLiteStore.migrator.migrate(queue, upTo: "v11-metric-counts")
        try await queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO stations (id, source) VALUES ('KEYS', 'cwms'), ('01646500', 'usgs-iv');
                    INSERT INTO series (id, station, metric, unit) VALUES
                        (1, 'KEYS', 'discharge', 'ft³/s'), (2, '01646500', 'gage_height', 'ft');
                    INSERT INTO readings (series_id, time, value, quality) VALUES
                        (1, 0, 1500, '3'), (1, 86400, -8455545, '0'), (1, 172800, 1510, '17'),
                        (2, 0, 4.1, 'P'), (2, 900, 4.2, 'P:Eqp'), (2, 1800, 4.3, '17');
                    """)
        }
        try queue.close()
        // Read-only, an older schema is refused with what to do, not read with a column missing.
        #expect {
            try SQLiteStore.openReadOnly(path: tmp.path)
        } throws: { error in
            "\(error)".contains("written by an older klaxon; run a command that writes to it once")
        }
        let store = try SQLiteStore.open(path: tmp.path)
        #expect(throws: Never.self) { try SQLiteStore.openReadOnly(path: tmp.path) }
        let keys = try await store.readings(station: "KEYS", metric: "discharge")
        #expect(keys.map(\.suspect) == [false, true, true])
        // `17` from USGS is not a CWMS code.
        let potomac = try await store.readings(station: "01646500", metric: "gage_height")
        #expect(potomac.map(\.suspect) == [false, true, false])
    }
}
