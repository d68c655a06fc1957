import Foundation
import KlaxonCore
import KlaxonStore
import Testing

/// River forecast issuances (issue 42): each backend stores them apart from readings, keeps the
/// newest issuance per series as its forecast whatever order issuances arrive in, and counts what
/// each write did (new, unchanged, replaced, out of order).
@Suite(.timeLimit(.minutes(10))) struct ForecastConformanceTests {
    static let t0: Int64 = 1_790_000_000

    func issuance(_ station: String = "MILC1", metric: String = "gage_height", issued: Int64, _ values: [Double])
        -> FloodForecast
    {
        FloodForecast(
            station: station, metric: metric, issued: issued, unit: metric == "discharge" ? "ft³/s" : "ft",
            source: "nwps",
            points: values.enumerated().map { .init(time: issued + 3_600 * Int64($0.offset + 1), value: $0.element) })
    }

    func counts(_ s: IngestStats) -> String {
        "new \(s.issuances.new) unchanged \(s.issuances.unchanged) replaced \(s.issuances.replaced) older \(s.issuances.older) readings \(s.inserted)"
    }

    func story(_ store: any Store) async throws -> [String] {
        let t = Self.t0
        var out: [String] = []
        func write(_ forecasts: [FloodForecast], readings: [Reading] = []) async throws {
            var b = SourceBatch(readings: readings)
            b.forecasts = forecasts
            out.append(counts(try await store.write(b, source: nil, cursor: nil, at: t + 10)))
        }
        // The first issuance, with an observation beside it (stored as a reading, not a forecast).
        try await write(
            [issuance(issued: t, [10, 12.5, 14])],
            readings: [
                Reading(station: "MILC1", metric: "gage_height", time: t, value: 9.5, unit: "ft", source: "nwps")
            ])
        // A later one, and the first again (a duplicate).
        try await write([issuance(issued: t + 21_600, [11, 13, 16.5]), issuance(issued: t, [10, 12.5, 14])])
        // An older one arriving late: history, not the latest.
        try await write([issuance(issued: t - 21_600, [8, 9])])
        // The same issue time with another body: replaced.
        try await write([issuance(issued: t + 21_600, [11, 13, 17])])
        // Two issuances of one series in one batch, newest first, and another gauge's flow.
        try await write([
            issuance(issued: t + 50_000, [12]), issuance(issued: t + 43_200, [11.5]),
            issuance("EADM7", metric: "discharge", issued: t, [25_000, 30_000]),
        ])
        let latest = try await store.latestForecast(station: "MILC1", metric: "gage_height")
        out.append("latest \(latest?.issued ?? 0) \(latest?.points.map(\.value) ?? []) \(latest?.unit ?? "-")")
        #expect(latest == issuance(issued: t + 50_000, [12]))
        out.append("none \(try await store.latestForecast(station: "MILC1", metric: "discharge") == nil)")
        let all = try await store.forecasts(station: "MILC1", metric: "gage_height")
        out.append("issued \(all.map { $0.issued - t })")
        let replaced = all.first { $0.issued == t + 21_600 }
        out.append("replaced \(replaced?.points.map(\.value) ?? [])")
        let some = try await store.forecasts(station: "MILC1", metric: "gage_height", from: t, to: t + 43_200, limit: 2)
        out.append("range \(some.map { $0.issued - t })")
        out.append(
            "series "
                + (try await store.forecastSeries()).sorted {
                    ($0.key.station, $0.key.metric) < ($1.key.station, $1.key.metric)
                }
                .map { "\($0.key.station)/\($0.key.metric)@\($0.value - t)" }.joined(separator: " "))
        // Forecasts are not readings.
        out.append("readings \(try await store.readings(station: "MILC1", metric: "gage_height").count)")
        return out
    }

    /// A `levels: nws` rule with `forecast:` evaluated after each write: the issuance sequence fires,
    /// moves earlier, goes stale (never a resolve), is reissued later, is cancelled, and fires again
    /// until the observed river takes over.
    func evaluationStory(_ store: any Store) async throws -> [String] {
        let t = Self.t0
        let rule = Rule(
            name: "mill-river",
            kind: LevelsRule(
                metric: "gage_height", stations: ["MILC1"], levels: [], nws: true,
                forecast: ForecastOption(horizon: 48 * 3_600, staleAfter: 24 * 3_600)))
        var gauge = SourceBatch(gauges: [
            GaugeInfo(
                lid: "MILC1", name: "Mill River", categories: FloodCategories(stage: ["action": 10, "minor": 14]))
        ])
        gauge.readings = [Reading(station: "MILC1", metric: "gage_height", time: t, value: 8, unit: "ft")]
        _ = try await store.write(gauge, source: nil, cursor: nil, at: t)
        var out: [String] = []
        func issue(_ issued: Int64, _ points: [(Int64, Double)]) async throws {
            var b = SourceBatch()
            b.forecasts = [
                FloodForecast(
                    station: "MILC1", metric: "gage_height", issued: issued, unit: "ft", source: "nwps",
                    points: points.map { .init(time: issued + $0.0 * 3_600, value: $0.1) })
            ]
            _ = try await store.write(b, source: nil, cursor: nil, at: issued)
        }
        func observe(_ time: Int64, _ value: Double) async throws {
            let b = SourceBatch(readings: [
                Reading(station: "MILC1", metric: "gage_height", time: time, value: value, unit: "ft")
            ])
            _ = try await store.write(b, source: nil, cursor: nil, at: time)
        }
        func evaluate(_ now: Int64) async throws {
            let (stations, floods) = try await store.stationsAndFloods()
            let r = try await store.evaluate(
                Evaluation(
                    engine: RuleEngine(rules: [rule], stations: stations, floods: floods),
                    quakes: QuakeRunner(rules: []),
                    trips: TripRunner(rules: []), now: now, queuedAt: 0, render: \.summary))
            out.append(
                "at +\((now - t) / 60)m: "
                    + r.transitions.map {
                        "\($0.transition.metric) \($0.transition.state.rawValue) \($0.transition.level ?? "-"): \($0.transition.summary)"
                    }.joined(separator: " | "))
        }
        try await issue(t, [(6, 9), (20, 14.5), (30, 16), (60, 12)])
        try await evaluate(t + 600)
        try await evaluate(t + 1_200)
        // Earlier and higher.
        try await issue(t + 3_600, [(10, 14.2), (20, 16.8)])
        try await evaluate(t + 3_700)
        // No issuance for more than a day: stale, said once.
        try await evaluate(t + 3_600 + 25 * 3_600)
        try await evaluate(t + 3_600 + 26 * 3_600)
        // Cancelled.
        try await issue(t + 27 * 3_600, [(6, 9.5), (12, 9)])
        try await evaluate(t + 27 * 3_600 + 60)
        // A new rise, then the observed river gets there.
        try await issue(t + 30 * 3_600, [(5, 14.1)])
        try await evaluate(t + 30 * 3_600 + 60)
        try await observe(t + 35 * 3_600, 14.3)
        try await evaluate(t + 35 * 3_600 + 60)
        return out
    }

    @Test("a forecast rule over issuance sequences: earlier, stale, cancelled, taken over", arguments: Backend.allCases)
    func forecastRule(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let got = try await evaluationStory(f.store)
            let utc = " UTC"
            #expect(
                got == [
                    "at +10m: gage_height.forecast firing minor: forecast: minor flood stage Tue 10:13\(utc) (in 20 h), crest 16 ft Tue 20:13\(utc), issued Mon 14:13\(utc)",
                    "at +20m: ",
                    "at +61m: gage_height.forecast changed minor: forecast: minor flood stage Tue 01:13\(utc) (in 10 h), crest 16.8 ft Tue 11:13\(utc), issued Mon 15:13\(utc)",
                    "at +1560m: gage_height.forecast changed minor: gage_height forecast at MILC1 is stale: no new issuance (the newest, issued Mon 15:13\(utc), is 25 h old)",
                    "at +1620m: ",
                    "at +1621m: gage_height.forecast resolved -: gage_height forecast at MILC1 no longer reaches action within 48 h (issued Tue 17:13\(utc))",
                    "at +1801m: gage_height.forecast firing minor: forecast: minor flood stage Wed 01:13\(utc) (in 5 h), crest 14.1 ft Wed 01:13\(utc), issued Tue 20:13\(utc)",
                    "at +2101m: gage_height firing minor: \(Self.observedSummary) | gage_height.forecast resolved -: gage_height at MILC1 reached minor flood stage as forecast (14.3 ft): the observed alert takes over",
                ], "\(got)")
        }
    }

    static let observedSummary =
        "Mill River (NWS MILC1): gage_height 14.3 ft reached minor flood stage (14 ft); highest category"

    @Test("issuances: latest per series, out of order, duplicates, replaced", arguments: Backend.allCases)
    func issuances(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let got = try await story(f.store)
            #expect(
                got == [
                    "new 1 unchanged 0 replaced 0 older 0 readings 1",
                    "new 1 unchanged 1 replaced 0 older 0 readings 0",
                    "new 1 unchanged 0 replaced 0 older 1 readings 0",
                    "new 0 unchanged 0 replaced 1 older 0 readings 0",
                    "new 3 unchanged 0 replaced 0 older 0 readings 0",
                    "latest \(Self.t0 + 50_000) [12.0] ft",
                    "none true",
                    "issued [-21600, 0, 21600, 43200, 50000]",
                    "replaced [11.0, 13.0, 17.0]",
                    "range [0, 21600]",
                    "series EADM7/discharge@0 MILC1/gage_height@50000",
                    "readings 1",
                ])
        }
    }
}
