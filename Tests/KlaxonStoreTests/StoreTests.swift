import Foundation
import GRDB
import KlaxonCore
import Testing

@testable import KlaxonSQLite
@testable import KlaxonStore

/// A fresh database file in a temporary folder, removed afterwards.
final class TempDatabase {
    let dir: URL
    let path: String

    init() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        path = dir.appendingPathComponent("test.sqlite").path
    }

    deinit { try? FileManager.default.removeItem(at: dir) }
}

func t(_ s: String) -> Int64 { Timestamp.parse(s)! }

func reading(_ station: String, _ time: String, _ value: Double, metric: String = "gage_height", quality: String? = nil)
    -> Reading
{
    Reading(station: station, metric: metric, time: t(time), value: value, unit: "ft", quality: quality)
}

@Suite struct StoreTests {
    @Test func opensInWALModeWithNamedMigrations() async throws {
        let tmp = try TempDatabase()
        let store = try SQLiteStore.open(path: tmp.path)
        let mode = try await store.reader.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        #expect(mode == "wal")
        let applied = try await store.reader.read { db in
            try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier")
        }
        #expect(
            applied == [
                "v1-alerts", "v1-readings", "v10-retention", "v11-metric-counts", "v12-reading-quality",
                "v13-outbox-open", "v14-episodes", "v15-transition-extra", "v16-readings-by-source",
                "v17-silence-matchers", "v18-chat-seen", "v19-living-messages",
                "v2-outbox", "v20-notification-history", "v21-forecast-issuances", "v22-air-forecasts",
                "v23-watches", "v25-receiver-budgets", "v26-watch-quiet-hours",
                "v3-water", "v4-quakes", "v5-trips", "v6-acks", "v7-ingest-source", "v8-instances",
                "v9-alert-states-by-series",
            ])
    }

    @Test func ingestIsIdempotentAndMarksRevisions() async throws {
        let tmp = try TempDatabase()
        let store = try SQLiteStore.open(path: tmp.path)
        let ingester = try store.readingWriter()
        let batch = [
            reading("A", "2026-01-01T00:00:00Z", 1), reading("A", "2026-01-01T00:15:00Z", 2),
            reading("B", "2026-01-01T00:00:00+01:00", 3),
        ]
        var s = try await ingester.write(batch)
        #expect(
            s
                == {
                    var e = IngestStats()
                    e.inserted = 3
                    return e
                }())
        s = try await ingester.write(batch)
        #expect(s.inserted == 0 && s.revised == 0 && s.unchanged == 3)
        await #expect(try store.readingCount() == 3)

        // A changed value for the same key updates the row and marks it revised.
        s = try await ingester.write([reading("A", "2026-01-01T00:15:00Z", 2.5)])
        #expect(s.revised == 1 && s.inserted == 0)
        let a = try await store.readings(station: "A", metric: "gage_height")
        #expect(a.map(\.value) == [1, 2.5])
        #expect(a.map(\.revised) == [false, true])
        // Stored as UTC: +01:00 midnight is 23:00 the day before.
        let b = try await store.readings(station: "B", metric: "gage_height")
        #expect(b.first?.time == t("2025-12-31T23:00:00Z"))
        #expect(b.first?.unit == "ft")
        // A quality change alone is a revision too.
        s = try await ingester.write([reading("B", "2025-12-31T23:00:00Z", 3, quality: "A")])
        #expect(s.revised == 1)
        await #expect(try store.station(id: "A") != nil)
    }

    @Test("a mixed batch: interleaved series, readings older and newer than what is stored, repeats in the batch")
    func mixedBatchCountsEveryReadingRight() async throws {
        let tmp = try TempDatabase()
        let store = try SQLiteStore.open(path: tmp.path)
        let ingester = try store.readingWriter()
        func at(_ minutes: Int) -> String { Timestamp.format(t("2026-01-01T00:00:00Z") + Int64(minutes) * 60) }
        // 200 readings of A and B (15-minute steps), then a batch that interleaves A, B and a new C.
        _ = try await ingester.write(
            (0..<100).flatMap { [reading("A", at($0 * 15), 1), reading("B", at($0 * 15), 1)] })
        var batch: [Reading] = []
        for i in 90..<190 {
            // A: 90–99 are stored (95–99 with new values), 100–189 are new. B: the same, unchanged.
            batch.append(reading("A", at(i * 15), i >= 95 && i < 100 ? 2 : 1))
            batch.append(reading("B", at(i * 15), 1))
            batch.append(reading("C", at(i * 15), Double(i)))
        }
        batch.append(reading("C", at(150 * 15), 999))  // a repeat inside the batch: the later value wins
        batch.append(reading("A", at(50 * 15), 7))  // older than the batch's new readings of A
        let s = try await ingester.write(batch)
        #expect(s.inserted == 90 + 90 + 100)
        #expect(s.revised == 5 + 1 + 1)
        #expect(s.unchanged == 5 + 10)
        #expect(try await store.readingCount() == 200 + 280)
        let a = try await store.readings(station: "A", metric: "gage_height")
        #expect(a.count == 190)
        #expect(a.filter(\.revised).map(\.value) == [7, 2, 2, 2, 2, 2])
        let c = try await store.readings(station: "C", metric: "gage_height")
        #expect(c.first { $0.time == t(at(150 * 15)) }?.value == 999)
        #expect(zip(c, c.dropFirst()).allSatisfy { $0.time < $1.time })
    }

    @Test func readOnlyStoreRefusesWritesAndMissingFiles() throws {
        let tmp = try TempDatabase()
        _ = try SQLiteStore.open(path: tmp.path)
        let ro = try SQLiteStore.openReadOnly(path: tmp.path)
        #expect(throws: (any Error).self) { try ro.readingWriter() }
        #expect(throws: (any Error).self) { try SQLiteStore.openReadOnly(path: tmp.path + ".missing") }
    }

    @Test func readingsStreamBySeriesInTimeOrder() async throws {
        let tmp = try TempDatabase()
        let store = try SQLiteStore.open(path: tmp.path)
        let ingester = try store.readingWriter()
        _ = try await ingester.write([
            reading("B", "2026-01-01T01:00:00Z", 2), reading("A", "2026-01-01T02:00:00Z", 3),
            reading("A", "2026-01-01T00:00:00Z", 1), reading("B", "2026-01-01T00:00:00Z", 0),
        ])
        var seen: [(String, Int64)] = []
        // Pages of one reading: a series spans several pages and still arrives in order.
        try await store.forEachReading(from: t("2026-01-01T00:00:00Z"), to: t("2026-01-01T01:00:00Z"), page: 1) {
            key, _, readings in
            for r in readings { seen.append((key.station, r.time)) }
        }
        #expect(seen.map(\.0) == ["B", "B", "A"])
        #expect(seen.map(\.1) == [t("2026-01-01T00:00:00Z"), t("2026-01-01T01:00:00Z"), t("2026-01-01T00:00:00Z")])
    }
}

@Suite struct EvaluationTests {
    let rules = [
        Rule(name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10)),
        Rule(name: "quiet", kind: StaleRule(metric: "gage_height", after: 3600), severity: .info),
    ]

    @Test func incrementalAndRestartSafe() async throws {
        let tmp = try TempDatabase()
        let engine = RuleEngine(rules: rules)
        var store = try SQLiteStore.open(path: tmp.path)
        var ingester = try store.readingWriter()
        _ = try await ingester.write([
            reading("A", "2026-01-01T00:00:00Z", 5), reading("A", "2026-01-01T00:15:00Z", 11),
        ])
        var r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:20:00Z"), render: \.summary)
        #expect(r.newReadings == 2)
        #expect(r.transitions.map { "\($0.transition.rule) \($0.transition.state)" } == ["high firing"])

        // Evaluating again (for example after a restart) sees no new readings and records nothing.
        store = try SQLiteStore.open(path: tmp.path)
        r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:20:00Z"), render: \.summary)
        #expect(r.newReadings == 0 && r.transitions.isEmpty)

        // Ingesting the same readings again is not new either.
        ingester = try store.readingWriter()
        _ = try await ingester.write([
            reading("A", "2026-01-01T00:00:00Z", 5), reading("A", "2026-01-01T00:15:00Z", 11),
        ])
        r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:25:00Z"), render: \.summary)
        #expect(r.newReadings == 0 && r.transitions.isEmpty)

        // A late reading (older than what the alert saw) is counted and ignored.
        _ = try await ingester.write([reading("A", "2026-01-01T00:05:00Z", 1), reading("A", "2026-01-01T00:30:00Z", 9)])
        r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:35:00Z"), render: \.summary)
        #expect(r.newReadings == 2 && r.lateReadings == 1)
        #expect(r.transitions.map { "\($0.transition.rule) \($0.transition.state)" } == ["high resolved"])

        // Time passes with no reading: stale fires, at the moment the series went quiet.
        r = try await store.evaluate(engine: engine, now: t("2026-01-01T02:00:00Z"), render: \.summary)
        #expect(r.transitions.map(\.transition.state) == [.firing])
        #expect(r.transitions.first?.transition.at == t("2026-01-01T01:30:00Z"))
        r = try await store.evaluate(engine: engine, now: t("2026-01-01T03:00:00Z"), render: \.summary)
        #expect(r.transitions.isEmpty)

        // Everything is in the log, with explanations, and the states are persisted.
        let log = try await store.transitions()
        #expect(log.map { "\($0.rule) \($0.state)" } == ["high firing", "high resolved", "quiet firing"])
        #expect(log.allSatisfy { !$0.explanation.isEmpty })
        let states = try await store.alertStates()
        #expect(states[AlertKey(rule: "quiet", station: "A", metric: "gage_height")]?.status == .firing)
        #expect(states[AlertKey(rule: "high", station: "A", metric: "gage_height")]?.status == .inactive)
    }

    @Test func aFailedEvaluationWritesNothing() async throws {
        let tmp = try TempDatabase()
        let engine = RuleEngine(rules: rules)
        let store = try SQLiteStore.open(path: tmp.path)
        _ = try await store.readingWriter().write([reading("A", "2026-01-01T00:00:00Z", 50)])
        // The transition log refuses the insert: the evaluation's transaction (states, log, outbox,
        // cursor) is rolled back whole.
        try await store.writer!.write { db in
            try db.execute(
                sql: "CREATE TRIGGER boom BEFORE INSERT ON transitions BEGIN SELECT RAISE(ABORT, 'boom'); END")
        }
        await #expect(throws: (any Error).self) {
            _ = try await store.evaluate(engine: engine, now: t("2026-01-01T00:00:00Z"), render: \.summary)
        }
        try await store.writer!.write { db in try db.execute(sql: "DROP TRIGGER boom") }
        await #expect(try store.transitions().isEmpty)
        await #expect(try store.alertStates().isEmpty)
        // The readings are still new: the next evaluation sees them.
        let r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:00:00Z"), render: \.summary)
        #expect(r.newReadings == 1 && r.transitions.count == 1)
    }

    /// A revision of the newest reading (same time, new value: an hourly source correcting the
    /// current hour) is news, evaluated again (issue 39; it was counted late before).
    @Test func revisedValueOfTheLatestReadingIsNews() async throws {
        let tmp = try TempDatabase()
        let engine = RuleEngine(rules: rules)
        let store = try SQLiteStore.open(path: tmp.path)
        let ingester = try store.readingWriter()
        _ = try await ingester.write([reading("A", "2026-01-01T00:00:00Z", 50)])
        _ = try await store.evaluate(engine: engine, now: t("2026-01-01T00:00:00Z"), render: \.summary)
        _ = try await ingester.write([reading("A", "2026-01-01T00:00:00Z", 1)])
        let r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:00:00Z"), render: \.summary)
        #expect(r.newReadings == 1 && r.lateReadings == 0)
        #expect(r.transitions.map { "\($0.transition.rule) \($0.transition.state)" } == ["high resolved"])
    }
}

extension Store {
    /// Evaluates readings only (no quake or trip rules), delivering nothing.
    func evaluate(engine: RuleEngine, now: Int64, render: @escaping @Sendable (Transition) -> String) async throws
        -> EvaluationResult
    {
        try await evaluate(
            Evaluation(
                engine: engine, quakes: QuakeRunner(rules: []), trips: TripRunner(rules: []), now: now,
                queuedAt: now * 1000,
                render: render))
    }
}

/// Rows written on the evaluation and outbox hot paths by hand, read back by the generic decoders.
@Suite struct HandWrittenRowTests {
    @Test func alertStatesRoundTripThroughJSONDecoder() throws {
        var states: [AlertState] = [AlertState()]
        var s = AlertState()
        s.status = .firing
        s.since = -62_135_596_800
        s.level = "major \"flood\" \\ ünï\n"
        s.announced = "Unhealthy \"for\" \u{1F}"
        s.candidate = "🌊"
        s.candidateSince = Int64.max
        s.lastTime = Int64.min
        s.lastValue = -0.000125
        states.append(s)
        s.lastValue = 1e300
        states.append(s)
        s.lastValue = 150
        s.status = .pending
        states.append(s)
        for state in states {
            let text = AlertStateRecord.encode(state: state)
            #expect(try JSONDecoder().decode(AlertState.self, from: Data(text.utf8)) == state)
            #expect(AlertStateRecord.decode(state: text) == state)
        }
        s.lastValue = .nan
        var expected = s
        expected.lastValue = nil
        #expect(AlertStateRecord.decode(state: AlertStateRecord.encode(state: s)) == expected)
        // A state stored before `announced` existed still reads: the level then is the one announced.
        let old = AlertStateRecord.decode(state: #"{"status":"firing","since":5,"level":"Unhealthy"}"#)
        #expect(old.level == "Unhealthy" && old.since == 5 && old.announced == nil)
    }

    @Test("outbox ids are lower-case version 7 UUIDs: unique, in time order across milliseconds")
    func outboxIDsAreLowerCaseUUIDs() {
        var seen: Set<String> = []
        for _ in 0..<1000 {
            let id = OutboxRecord.newID()
            #expect(UUID(uuidString: id)?.uuidString.lowercased() == id)
            #expect(Array(id)[14] == "7")
            #expect("89ab".contains(Array(id)[19]))
            seen.insert(id)
        }
        #expect(seen.count == 1000)
        // The first 48 bits are the milliseconds: later ids sort after earlier ones.
        let ms: Int64 = 1_795_767_603_014
        #expect(OutboxRecord.newID(now: ms).hasPrefix("01a21c17-0f46-7"))
        #expect(OutboxRecord.newID(now: ms) < OutboxRecord.newID(now: ms + 1))
        #expect(OutboxRecord.newID(now: 0).hasPrefix("00000000-0000-7"))
        #expect(OutboxRecord.newID(now: -5).hasPrefix("00000000-0000-7"))
    }

    @Test func transitionLabelsRoundTrip() {
        let t = Transition(
            rule: "r", kind: "threshold", station: "s", metric: "m", state: .firing, at: 0, value: 1,
            severity: .warning, labels: ["team": "wa/ter \"x\"", "ü": "\u{1}"], summary: "s", explanation: "e")
        #expect(TransitionRecord(t, message: "m", recordedAt: 0).transition.labels == t.labels)
        var bare = t
        bare.labels = [:]
        #expect(TransitionRecord(bare, message: "m", recordedAt: 0).labels == "{}")
    }
}

/// `/metrics` counts kept by the store's own write paths (not by triggers): they follow the outbox
/// through claim, outcome, retry and pruning.
@Suite struct MetricCountTests {
    @Test func countsFollowTheOutbox() async throws {
        let db = try TempDatabase()
        let store = try SQLiteStore.open(path: db.path)
        let now: Int64 = 1_800_000_000_000
        let transitions = (0..<3).map { i in
            let t = Transition(
                rule: "high", kind: "threshold", station: "S\(i)", metric: "level", state: .firing, at: now / 1000,
                value: 1, severity: .warning, labels: [:], summary: "s", explanation: "e")
            return (t, "m", [PlannedDelivery(receiver: "hook", route: nil, groupKey: "S\(i)")])
        }
        try await store.record(transitions, now: now)
        var m = try await store.metrics()
        #expect(m.transitions["high"]?["firing"] == 3)
        #expect(m.outbox["pending"] == 3 && m.outbox["sending"] == 0)

        let batches = try await store.claim(now: now, lease: 30_000, limit: 10, instance: nil)
        #expect(batches.count == 3)
        m = try await store.metrics()
        #expect(m.outbox["pending"] == 0 && m.outbox["sending"] == 3)

        try await store.apply([
            .finish(batches[0], state: .sent, now: now + 40, retryAt: nil, error: nil),
            .finish(batches[1], state: .sent, now: now + 2_000, retryAt: nil, error: nil),
            .finish(batches[2], state: .dead, now: now + 10, retryAt: nil, error: "x"),
        ])
        m = try await store.metrics()
        #expect(m.outbox["sending"] == 0 && m.outbox["sent"] == 2 && m.outbox["dead"] == 1)
        #expect(m.deliveries["hook"] == ["sent": 2, "dead": 1])
        #expect(m.latencyCount == 2 && abs(m.latencySum - 2.04) < 1e-9)
        #expect(m.latencyBuckets.first { $0.le == 0.05 }?.count == 1)
        #expect(m.latencyBuckets.first { $0.le == 2.5 }?.count == 2)

        #expect(try await store.retryOutbox(id: batches[2].rows[0].id, now: now + 50))
        #expect(try await !store.retryOutbox(id: batches[2].rows[0].id, now: now + 60))  // no longer dead
        m = try await store.metrics()
        #expect(m.outbox["dead"] == 0 && m.outbox["pending"] == 1)
        #expect(m.deliveries["hook"]?["dead"] == 1)  // an outcome reached stays counted

        // A new database over the same file reads the same totals.
        let reopened = try SQLiteStore.open(path: db.path)
        let again = try await reopened.metrics()
        #expect(again.transitions == m.transitions && again.outbox == m.outbox && again.deliveries == m.deliveries)
    }
}
