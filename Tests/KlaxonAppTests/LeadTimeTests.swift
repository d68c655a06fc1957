import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonSQLite
import KlaxonStore
import Testing

/// `klaxon dry-run --db DB --lead-time` over a generated year of a gauge (issue 42, item 2): hourly
/// observations with three floods, and a forecast issued every 6 hours for the next 72. The first
/// two floods are forecast exactly (so each category is announced by the first issuance whose 48 h
/// horizon reaches it: 48 h ahead); the third is not forecast at all.
@Suite(.timeLimit(.minutes(10))) struct LeadTimeTests {
    static let year = Timestamp.parse("2025-01-01T00:00:00Z")!
    static let floods: [Int64] = [40, 150, 300].map { year + $0 * 86_400 }

    /// 8 ft, except from a flood's start: 12 ft (action) for 6 h, then 16 ft (minor) for 24 h.
    static func stage(_ t: Int64) -> Double {
        for s in floods {
            if t >= s && t < s + 6 * 3_600 { return 12 }
            if t >= s + 6 * 3_600 && t < s + 30 * 3_600 { return 16 }
        }
        return 8
    }

    static func rules(_ s: Scratch) throws -> String {
        try s.write(
            "mill.yaml",
            """
            name: mill-river
            kind: levels
            metric: gage_height
            stations: [MILC1]
            levels: nws
            forecast: {horizon: 48h, stale_after: 24h}
            """)
    }

    static func fill(_ path: String) async throws {
        let store = try SQLiteStore.open(path: path)
        var meta = SourceBatch(gauges: [
            GaugeInfo(
                lid: "MILC1", name: "Mill River at Millbrook",
                categories: FloodCategories(stage: ["action": 10, "minor": 14]))
        ])
        meta.readings = []
        _ = try await store.write(meta, at: year)
        let hours = 365 * 24
        var batch = SourceBatch()
        for h in 0..<hours {
            let t = year + Int64(h) * 3_600
            batch.readings.append(
                Reading(station: "MILC1", metric: "gage_height", time: t, value: stage(t), unit: "ft"))
            if h % 6 == 0 {
                let missed = floods[2]
                let points = (1...12).map { k -> FloodForecast.Point in
                    let at = t + Int64(k) * 6 * 3_600
                    // The third flood is never forecast.
                    let v = at >= missed - 86_400 && at < missed + 3 * 86_400 ? 8 : stage(at)
                    return FloodForecast.Point(time: at, value: v)
                }
                batch.forecasts.append(
                    FloodForecast(
                        station: "MILC1", metric: "gage_height", issued: t, unit: "ft", source: "nwps", points: points))
            }
            if batch.readings.count == 2_000 {
                _ = try await store.write(batch, at: t)
                batch = SourceBatch()
            }
        }
        _ = try await store.write(batch, at: year)
    }

    @Test func aYearOfObservationsAndIssuances() async throws {
        let s = try Scratch()
        let db = s.path("year.sqlite")
        try await Self.fill(db)
        let rules = try Self.rules(s)
        let run = await inProcess { output in
            var job = DryRunJob(
                rules: [rules], readings: [], events: [], db: db, from: nil, to: nil, format: .text, explain: false,
                render: nil, config: nil, console: output)
            job.leadTime = true
            return try await job.run()
        }
        #expect(run.status == 0, "\(run.stderr)")
        func day(_ t: Int64) -> String { Timestamp.format(t) }
        let f = Self.floods
        #expect(
            run.lines == [
                "mill-river MILC1 gage_height: action reached \(day(f[0])) (12): forecast alert 48 h earlier (\(day(f[0] - 48 * 3_600)))",
                "mill-river MILC1 gage_height: minor reached \(day(f[0] + 6 * 3_600)) (16): forecast alert 48 h earlier (\(day(f[0] - 42 * 3_600)))",
                "mill-river MILC1 gage_height: action reached \(day(f[1])) (12): forecast alert 48 h earlier (\(day(f[1] - 48 * 3_600)))",
                "mill-river MILC1 gage_height: minor reached \(day(f[1] + 6 * 3_600)) (16): forecast alert 48 h earlier (\(day(f[1] - 42 * 3_600)))",
                "mill-river MILC1 gage_height: action reached \(day(f[2])) (12): no forecast alert before it",
                "mill-river MILC1 gage_height: minor reached \(day(f[2] + 6 * 3_600)) (16): no forecast alert before it",
            ], "\(run.stdout)")
        #expect(run.stderr.contains("lead time: 6 crossings, 4 warned ahead (median 48 h), 2 not"), "\(run.stderr)")

        // The same replay gives dry-run --db the forecast alert's transitions: fired, taken over, per flood.
        let dry = await InProcess.dryRun(rules: [rules], db: db, format: .json)
        let forecast = try jsonObjects(dry.lines).filter { $0["metric"] as? String == "gage_height.forecast" }
        #expect(forecast.map { $0["state"] as? String ?? "" }.filter { $0 == "firing" }.count == 2, "\(dry.stdout)")
    }
}
