import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonSQLite
import KlaxonStore
import Testing

/// Issue 42's flood forecasts through the command line: `klaxon ingest` recognises NWPS stageflow
/// JSON, the HML product and AHPS XML by content (`--format` forces one), and `klaxon gauge LID
/// --forecast -o json` prints the documented shape for the latest issuance.
@Suite(.timeLimit(.minutes(10))) struct FloodForecastCLITests {
    static let hml = repoPath("Tests/KlaxonSourcesTests/Fixtures/hml_lsx_product.txt")
    static let ahps = repoPath("Tests/KlaxonSourcesTests/Fixtures/ahps_hydrograph_milc1.xml")
    static let nwps = repoPath("Tests/KlaxonSourcesTests/Fixtures/nwps_PRTO3_stageflow_forecast.json")

    /// An NWPS gauge document with flood categories (action 15, minor 18, moderate 20 ft).
    static func gauge(_ lid: String, usgs: String = "") -> String {
        """
        {"lid": "\(lid)", "usgsId": "\(usgs)", "name": "Meramec River", "timeZone": "CST6CDT",
         "flood": {"stageUnits": "ft", "flowUnits": "cfs", "categories": {
           "action": {"stage": 15, "flow": -9999}, "minor": {"stage": 18, "flow": -9999},
           "moderate": {"stage": 20, "flow": -9999}, "major": {"stage": -9999, "flow": -9999}}}}
        """
    }

    @Test func forecastOptionIsCheckedStrictly() async throws {
        let s = try Scratch()
        let bad = try s.write(
            "rules/bad.yaml",
            """
            rules:
              - name: a
                kind: levels
                metric: gage_height
                levels: [{name: x, at: 5}]
                forecast: {horizon: 48h}
              - name: b
                kind: levels
                metric: gage_height
                levels: nws
                forecast: {horizon: 0s, stale_after: soon, lead: 2h}
            """)
        let r = await InProcess.check(rules: [bad])
        #expect(r.status == 1)
        for line in [
            "\(bad):6:15: error: forecast: needs levels: nws (it watches the gauge's NWS forecast)",
            "\(bad):11:25: error: horizon must be longer than 0s",
            "\(bad):11:48: error: unknown key \"lead\" in forecast",
        ] {
            #expect(r.errorLines.contains(line), "missing: \(line)\n\(r.stderr)")
        }
        #expect(r.stderr.contains("stale_after must be a duration"), "\(r.stderr)")
        let good = try s.write(
            "rules/good.yaml",
            "name: g\nkind: levels\nmetric: gage_height\nlevels: nws\nforecast: {stale_after: 12h}\n")
        let ok = await InProcess.check(rules: [good])
        #expect(ok.status == 0, "\(ok.stderr)")
        let rule = try #require(try RuleLoader.load(paths: [good]).first)
        #expect(rule.kind.series?.forecastOption == ForecastOption(horizon: 48 * 3_600, staleAfter: 12 * 3_600))
    }

    @Test func payloadsLookLikeTheirFormats() throws {
        #expect(PayloadLook.of(try Data(contentsOf: URL(fileURLWithPath: Self.hml))).format == .hml)
        #expect(PayloadLook.of(try Data(contentsOf: URL(fileURLWithPath: Self.ahps))).format == .ahpsXML)
        #expect(PayloadLook.of(try Data(contentsOf: URL(fileURLWithPath: Self.nwps))).format == .nwpsJSON)
        #expect(PayloadLook.of(Data(#"{"observed": {"data": []}, "forecast": {"data": []}}"#.utf8)).format == .nwpsJSON)
        #expect(PayloadLook.of(Data("<html><body>502</body></html>".utf8)).format == nil)
    }

    @Test func ingestByContentThenGaugeForecast() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let meta = try s.write("eadm7.json", Self.gauge("EADM7"))
        // No --format: each file read as what it looks like.
        let first = await InProcess.ingest(db: db, meta, Self.hml, Self.ahps)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(
            first.stderr.contains(Self.hml + ": hml: skipped ARNM7: a forecast of Stage in furlongs"), "\(first.stderr)"
        )
        #expect(first.stderr.contains(Self.hml + ": hml: skipped BYRM7: a <forecast> without a readable issued time"))
        #expect(first.stderr.contains("5 forecast issuances"), "\(first.stderr)")
        #expect(first.stderr.contains("2 forecast items skipped"), "\(first.stderr)")
        // Again: the same issuances, unchanged.
        let again = await InProcess.ingest(db: db, format: .hml, Self.hml)
        #expect(again.stderr.contains("ingest: 0 new, 0 revised, 7 unchanged"), "\(again.stderr)")

        let run = try await klaxonAsync(["gauge", "EADM7", "--forecast", "--db", db, "-o", "json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(
            run.stdout.trimmingCharacters(in: .newlines)
                == #"{"crest":{"time":"2024-05-02T00:00:00Z","value":18.5},"crossings":[{"category":"action","time":"2024-05-01T18:00:00Z"},{"category":"minor","time":"2024-05-02T00:00:00Z"}],"issued":"2024-05-01T13:29:00Z","points":[{"time":"2024-05-01T18:00:00Z","value":16},{"time":"2024-05-02T00:00:00Z","value":18.5},{"time":"2024-05-02T12:00:00Z","value":17.25}],"station":"EADM7","units":"ft"}"#
        )
        // A gauge without flood categories: no crossings, and said so.
        let bare = try await klaxonAsync(["gauge", "MILC1", "--forecast", "--db", db, "-o", "json"])
        #expect(bare.status == 0, "\(bare.stderr)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(bare.stdout.utf8)) as? [String: Any])
        #expect(Set(o.keys) == ["station", "issued", "units", "points", "crest", "crossings"])
        #expect((o["crossings"] as? [Any])?.isEmpty == true)
        #expect(bare.stderr.contains("MILC1 has no flood categories"), "\(bare.stderr)")
        // No forecast at all.
        let none = try await klaxonAsync(["gauge", "NONE1", "--forecast", "--db", db])
        #expect(none.status == 1)
        #expect(none.stderr.contains("no forecast stored for gauge \"NONE1\""), "\(none.stderr)")
    }

    @Test func nwpsStageflowLandsOnTheGaugesStation() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        // Unnamed: the body does not say whose it is.
        let unnamed = try s.write(
            "stageflow.json", String(decoding: try Data(contentsOf: URL(fileURLWithPath: Self.nwps)), as: UTF8.self))
        let refused = await InProcess.ingest(db: db, unnamed)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("a stageflow body does not name its gauge"), "\(refused.stderr)")
        // The gauge known (USGS 14211720): the forecast is stored under its station.
        let meta = try s.write("prto3-meta.json", Self.gauge("PRTO3", usgs: "14211720"))
        #expect(await InProcess.ingest(db: db, meta).status == 0)
        let named = await InProcess.ingest(db: db, format: .nwpsJSON, Self.nwps)
        #expect(named.status == 0, "\(named.stderr)")
        let store = try SQLiteStore.open(path: db)
        let f = try await store.latestForecast(station: "14211720", metric: "gage_height")
        #expect(f?.points.map(\.value) == [16.2, 18.4, 17.9])
        #expect(try await store.latestForecast(station: "PRTO3", metric: "gage_height") == nil)
        let byLID = try await GaugeForecast.build(store: store, id: "PRTO3")
        #expect(byLID?.report.crossings.map(\.category) == ["action", "minor"])
        // Forced to a format it is not: an error naming the file, with a hint.
        let wrong = await InProcess.ingest(db: db, format: .ahpsXML, Self.nwps)
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains(Self.nwps + ": ahps-xml: not XML"), "\(wrong.stderr)")
    }
}
