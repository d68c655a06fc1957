import Foundation
import KlaxonApp
import KlaxonSQLite
import KlaxonStore
import Testing

@Suite struct RetentionCLITests {
    @Test func retentionDefaultsAndEveryKindParse() throws {
        let s = try Scratch()
        let d: Int64 = 86_400
        let defaults = try Config.load(path: s.write("a.yaml", "database: k.sqlite\n")).retention
        #expect(defaults.readings == 90 * d)
        #expect(defaults.transitions == 365 * d)
        #expect(defaults.delivered == 30 * d)
        #expect(defaults.dead == 90 * d)
        #expect(defaults.forecasts == 14 * d)
        #expect(defaults.quakeRevisions == 90 * d)
        #expect(defaults.forecastIssuances == 365 * d)
        let set = try Config.load(
            path: s.write(
                "b.yaml",
                """
                retention:
                  readings: 7d
                  transitions: forever
                  delivered: 0
                  dead: 48h
                  forecasts: 1d
                  quake_revisions: 3650d

                """)
        ).retention
        #expect(set.readings == 7 * d)
        #expect(set.transitions == nil)
        #expect(set.delivered == nil)
        #expect(set.dead == 2 * d)
        #expect(set.forecasts == d)
        #expect(set.quakeRevisions == 3650 * d)
        #expect(Retention.forever.prunesAnything == false)
        #expect(
            set.plan(now: 1_000 * d, rules: []).keep == [
                .readings: 7 * d, .dead: 2 * d, .forecasts: d, .quakeRevisions: 3650 * d, .forecastIssuances: 365 * d,
            ])
    }

    @Test func retentionMistakesArePointedAt() async throws {
        let s = try Scratch()
        try s.write("r.yaml", levelsRule)
        let bad = try s.write(
            "bad.yaml",
            """
            retention:
              readings: 1h
              transitons: 30d
              dead: soon
              forecasts: [1d]

            """)
        let r = await InProcess.check(config: bad, rules: [s.path("r.yaml")])
        #expect(r.status == 1)
        #expect(
            r.stderr.contains("\(bad):2:13: error: retention.readings must be at least 1d, or forever, not \"1h\""),
            "\(r.stderr)")
        #expect(
            r.stderr.contains(
                "\(bad):3:3: error: unknown key \"transitons\" in retention (did you mean \"transitions\"?)"))
        #expect(
            r.stderr.contains(
                "\(bad):4:9: error: retention.dead must be a duration like 30s, 15m, 6h or 2d, not \"soon\""))
        #expect(r.stderr.contains("\(bad):5:14: error: retention.forecasts must be a duration"))
    }

    @Test func pruneDryRunCountsAndRemovesNothingThenPruneRemovesTheSame() async throws {
        let s = try Scratch()
        try s.write("r.yaml", levelsRule)
        let csv = try s.write("r.csv", riverCSV)
        let config = try s.write(
            "klaxon.yaml",
            """
            database: k.sqlite
            rules: [r.yaml]
            retention:
              readings: 30d
              transitions: 30d
              forecasts: forever

            """)
        let db = s.path("k.sqlite")
        #expect(await InProcess.ingest(db: db, csv).status == 0)
        let eval = await InProcess.evaluate(config: config, now: "2026-01-01T02:00:00Z")
        #expect(eval.status == 0, "\(eval.stderr)")
        let readings = { try await SQLiteStore.openReadOnly(path: db).readingCount() }
        let transitions = { try await SQLiteStore.openReadOnly(path: db).transitions().count }
        #expect(try await readings() == 8)
        #expect(try await transitions() == 4)

        let dry = try await klaxonAsync(["prune", "--config", config, "--dry-run", "--now", "2026-06-01T00:00:00Z"])
        #expect(dry.status == 0, "\(dry.stderr)")
        // The series' newest reading stays, whatever its age.
        #expect(dry.lines.contains("readings: would remove 7 older than 30d"), "\(dry.stdout)")
        #expect(dry.lines.contains("transitions: would remove 4 older than 30d"))
        #expect(dry.lines.contains("delivered: would remove 0 older than 30d"))
        #expect(dry.lines.contains("forecasts: kept forever"))
        #expect(dry.stderr.contains("dry run, nothing removed"))
        #expect(try await readings() == 8)
        #expect(try await transitions() == 4)

        let real = try await klaxonAsync(["prune", "--config", config, "--now", "2026-06-01T00:00:00Z"])
        #expect(real.status == 0, "\(real.stderr)")
        #expect(real.lines.contains("readings: removed 7 older than 30d"), "\(real.stdout)")
        #expect(real.lines.contains("transitions: removed 4 older than 30d"))
        #expect(try await readings() == 1)
        #expect(try await transitions() == 0)

        let again = try await klaxonAsync(["prune", "--config", config, "--now", "2026-06-01T00:00:00Z"])
        #expect(again.lines.contains("readings: removed 0 older than 30d"))

        // A missing database is an error, not an empty one created by a dry run.
        let missing = try await klaxonAsync([
            "prune", "--db", s.path("nope.sqlite"), "--dry-run", "--rules", s.path("r.yaml"),
        ])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no database at \(s.path("nope.sqlite")) (no such file; from --db)"))
    }
}
