import Foundation
import KlaxonCore
import KlaxonStore
import Testing

/// AirNow forecasts: every backend keeps the latest issuance per reporting area, date and pollutant
/// (an issuance arriving late never overwrites a newer one) and evaluates the `air-forecast` and
/// `trip-packing` rules over them exactly as SQLite does (issue 42).
@Suite(.timeLimit(.minutes(10))) struct AirForecastConformanceTests {
    func forecast(
        _ date: String, _ parameter: String, aqi: Int?, category: Int, actionDay: Bool = false, issued: String,
        area: String = "Denver-Boulder"
    ) -> AirForecast {
        AirForecast(
            area: area, state: "CO", latitude: 39.768, longitude: -105.0092, date: date, parameter: parameter, aqi: aqi,
            category: category, actionDay: actionDay, discussion: "inversion", issued: issued)
    }

    func describe(_ forecasts: [AirForecast]) -> [String] {
        forecasts.map {
            "\($0.area) \($0.date) \($0.parameter) \($0.aqi.map(String.init) ?? "-") \($0.category) \($0.actionDay) \($0.issued)"
        }
    }

    func story(_ store: any Store) async throws -> [String] {
        var out: [String] = []
        let monday = [
            forecast("2026-12-08", "O3", aqi: nil, category: 2, issued: "2026-12-07"),
            forecast("2026-12-08", "PM2.5", aqi: 125, category: 3, actionDay: true, issued: "2026-12-07"),
        ]
        out.append("monday \(try await store.write(airForecasts: monday))")
        out.append("again \(try await store.write(airForecasts: monday))")
        // Sunday's issuance arrives late: it changes nothing.
        let sunday = [forecast("2026-12-08", "PM2.5", aqi: 60, category: 2, issued: "2026-12-06")]
        out.append("late \(try await store.write(airForecasts: sunday))")
        out += describe(try await store.airForecasts(area: "DENVER-boulder"))

        // A trip to Denver with both rules.
        let now = Timestamp.parse("2026-12-07T12:00:00Z")!
        try await store.save(
            trip: Trip(
                name: "ski", owner: "ana",
                stops: [
                    .init(place: "Denver, CO", latitude: 39.7392, longitude: -104.9903, arrive: "2026-12-07", nights: 2)
                ]
            ), at: now)
        // The trip's weather: the packing list waits for it.
        let weather = ["2026-12-07", "2026-12-08", "2026-12-09"].map {
            DayWeather(
                place: "39.74,-104.99", date: $0, tempMaxC: 5, tempMinC: -5, precipitationMm: 0,
                precipitationProbability: 0, snowfallCm: 0, windMaxKmh: 10, weatherCode: 1, source: "open-meteo",
                issued: now)
        }
        out.append("weather \(try await store.write(weather: weather))")
        let rules = [
            Rule(name: "bad-air", kind: AirForecastRule()), Rule(name: "packing", kind: TripPackingRule()),
            Rule(name: "denver-air", kind: AirForecastRule(areas: ["Denver-Boulder"])),
        ]
        func evaluate(_ at: Int64) async throws {
            let r = try await store.evaluate(
                Evaluation(
                    engine: RuleEngine(rules: []), quakes: QuakeRunner(rules: []), trips: TripRunner(rules: rules),
                    now: at, queuedAt: 0, render: \.summary))
            out += r.transitions.map(\.transition).sorted(by: Transition.outputOrder).map {
                "\($0.rule) \($0.station) \($0.metric) \($0.state.rawValue) \($0.level ?? "-") \($0.summary)"
            }
        }
        try await evaluate(now)

        // Tuesday's issuance, through a source's batch: worse, and it now takes Wednesday too.
        var batch = SourceBatch()
        batch.airForecasts = [
            forecast("2026-12-08", "PM2.5", aqi: 160, category: 4, actionDay: true, issued: "2026-12-08"),
            forecast("2026-12-09", "PM2.5", aqi: 110, category: 3, issued: "2026-12-08"),
        ]
        let stats = try await store.write(batch, source: "airnow-forecast", cursor: nil, at: now + 86_400)
        out.append("batch \(stats.forecasts)")
        try await evaluate(now + 86_400)

        // Wednesday's: clear skies. The alert resolves; the masks go.
        let clear = [
            forecast("2026-12-08", "PM2.5", aqi: 40, category: 1, issued: "2026-12-09"),
            forecast("2026-12-09", "PM2.5", aqi: 45, category: 1, issued: "2026-12-09"),
        ]
        out.append("clear \(try await store.write(airForecasts: clear))")
        try await evaluate(now + 2 * 86_400)
        out += describe(try await store.airForecasts(from: "2026-12-08", to: "2026-12-09"))
        let trip = try #require(try await store.trip(owner: "ana", name: "ski"))
        out += try await store.airDays(for: trip).map { "\($0.stop) \($0.forecast.date) \($0.forecast.category)" }
        return out
    }

    @Test("latest issuance wins; air-forecast and packing rules over it", arguments: Backend.allCases)
    func airForecasts(_ backend: Backend) async throws {
        var expected: [String] = []
        try await Backend.sqlite.withStore { expected = try await story($0.store) }
        #expect(
            Array(expected.prefix(5)) == [
                "monday 2", "again 0", "late 0",
                "Denver-Boulder 2026-12-08 O3 - 2 false 2026-12-07",
                "Denver-Boulder 2026-12-08 PM2.5 125 3 true 2026-12-07",
            ])
        #expect(
            expected.contains {
                $0.hasPrefix("bad-air ana/ski alert:air-forecast firing Unhealthy for Sensitive Groups")
            })
        #expect(expected.contains { $0.hasPrefix("bad-air ana/ski alert:air-forecast changed Unhealthy ") })
        #expect(expected.contains { $0.hasPrefix("bad-air ana/ski alert:air-forecast resolved - ") })
        #expect(expected.contains { $0.hasPrefix("packing ana/ski packing firing") })
        #expect(expected.contains { $0.hasPrefix("packing ana/ski packing changed") && $0.contains("− N95 mask") })
        // The watched area, without a trip.
        #expect(
            expected.contains {
                $0.hasPrefix(
                    "denver-air Denver-Boulder alert:air-forecast firing Unhealthy for Sensitive Groups "
                        + "Denver-Boulder: Action Day forecast for Denver-Boulder, Tue 2026-12-08")
            }, "\(expected)")
        #expect(expected.contains { $0.hasPrefix("denver-air Denver-Boulder alert:air-forecast resolved") })
        #expect(expected.contains("batch 2"))
        #expect(expected.contains("clear 2"))
        try await backend.withStore { f in
            let got = try await story(f.store)
            #expect(got == expected)
        }
    }
}
