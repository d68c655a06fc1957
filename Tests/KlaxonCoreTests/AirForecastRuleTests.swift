import Foundation
import KlaxonCore
import Testing

// Dates: 2026-12-07 is a Monday, 2026-12-08 a Tuesday.

/// A ski trip: Denver from Monday 2026-12-07, 2 nights (days 07, 08, 09).
private let skiTrip = Trip(
    name: "ski", owner: "ana",
    stops: [Trip.Stop(place: "Denver, CO", latitude: 39.7392, longitude: -104.9903, arrive: "2026-12-07", nights: 2)])

private func forecast(
    _ date: String, _ parameter: String = "PM2.5", aqi: Int?, category: Int, actionDay: Bool = false,
    issued: String = "2026-12-07", area: String = "Denver-Boulder", lat: Double? = 39.768, lon: Double? = -105.0092
) -> AirForecast {
    AirForecast(
        area: area, state: "CO", latitude: lat, longitude: lon, date: date, parameter: parameter, aqi: aqi,
        category: category, actionDay: actionDay, issued: issued)
}

/// Whether an assessment said nothing.
private func silent<T>(_ x: T?) -> Bool { x == nil }

private func airDays(_ forecasts: [AirForecast]) -> [TripAirDay] {
    AirForecast.tripDays(skiTrip, forecasts: forecasts, radiusKm: 50)
}

@Suite struct AirForecastTripDaysTests {
    @Test func eachDayTakesTheWorstPollutantOfTheNearestArea() {
        let days = airDays([
            forecast("2026-12-07", "O3", aqi: 48, category: 1),
            forecast("2026-12-07", "PM2.5", aqi: 87, category: 2),
            forecast("2026-12-08", "O3", aqi: nil, category: 2),
            forecast("2026-12-08", "PM2.5", aqi: 125, category: 3, actionDay: true),
            // Another area, far away, is not the trip's.
            forecast("2026-12-09", aqi: 180, category: 4, area: "Phoenix", lat: 33.45, lon: -112.07),
            // A date outside the trip.
            forecast("2026-12-12", aqi: 180, category: 4),
        ])
        #expect(
            days.map { "\($0.forecast.date) \($0.forecast.parameter) \($0.forecast.category)" } == [
                "2026-12-07 PM2.5 2", "2026-12-08 PM2.5 3",
            ])
        #expect(days.map(\.place) == ["Denver, CO", "Denver, CO"])
        #expect(
            days[1].reason
                == "Action Day forecast for Denver, CO, Tue (PM2.5 AQI 125, Unhealthy for Sensitive Groups)")
    }

    @Test func aStopWithoutCoordinatesMatchesAnAreaByName() {
        let trip = Trip(
            name: "t", owner: "ana", stops: [Trip.Stop(place: "Boise, ID", arrive: "2026-12-08", nights: 0)])
        let days = AirForecast.tripDays(
            trip, forecasts: [forecast("2026-12-08", aqi: 160, category: 4, area: "Boise", lat: nil, lon: nil)],
            radiusKm: 50)
        #expect(days.map(\.forecast.area) == ["Boise"])
    }
}

@Suite struct AirForecastRuleTests {
    let rule = AirForecastRule()
    let at: Int64 = 1_796_600_000

    func assess(_ forecasts: [AirForecast], _ announced: AirForecastRule.Announced?, today: String = "2026-12-07")
        -> (changes: [(metric: String, change: Change)], announced: AirForecastRule.Announced)?
    {
        rule.assess(
            trip: skiTrip, weather: [], alerts: [], air: airDays(forecasts), announced: announced, today: today, at: at)
    }

    @Test func firesOnAnActionDayThenEditsThenResolves() throws {
        // Monday's issuance: Tuesday an Action Day.
        let monday = [
            forecast("2026-12-07", aqi: 87, category: 2),
            forecast("2026-12-08", aqi: 125, category: 3, actionDay: true),
        ]
        let fired = try #require(assess(monday, nil))
        #expect(fired.changes.count == 1)
        let c = fired.changes[0]
        #expect(fired.changes[0].metric == "alert:air-forecast")
        #expect(c.change.state == .firing)
        #expect(c.change.level == "Unhealthy for Sensitive Groups")
        #expect(c.change.value == 125)
        #expect(
            c.change.summary
                == "Trip \"ski\": Action Day forecast for Denver, CO, Tue 2026-12-08 (PM2.5 AQI 125, "
                + "Unhealthy for Sensitive Groups; Denver-Boulder, issued 2026-12-07)")
        #expect(c.change.headline == "Action Day forecast")

        // The same issuance again: nothing new.
        #expect(silent(assess(monday, fired.announced)))

        // Tuesday's issuance: worse, and Wednesday too.
        let tuesday = [
            forecast("2026-12-08", aqi: 160, category: 4, actionDay: true, issued: "2026-12-08"),
            forecast("2026-12-09", aqi: 110, category: 3, issued: "2026-12-08"),
        ]
        let edited = try #require(assess(tuesday, fired.announced, today: "2026-12-08"))
        #expect(edited.changes[0].change.state == .changed)
        #expect(edited.changes[0].change.level == "Unhealthy")
        #expect(edited.changes[0].change.fromLevel == "Unhealthy for Sensitive Groups")
        #expect(edited.changes[0].change.summary.hasSuffix("and 1 more day"))
        #expect(edited.changes[0].change.explanation.contains("(was: Action Day forecast for Denver, CO, Tue"))

        // A later issuance no longer reaches the level: resolved.
        let clearing = [
            forecast("2026-12-08", aqi: 70, category: 2, issued: "2026-12-08"),
            forecast("2026-12-09", aqi: 60, category: 2, issued: "2026-12-08"),
        ]
        let resolved = try #require(assess(clearing, edited.announced, today: "2026-12-08"))
        #expect(resolved.changes[0].change.state == .resolved)
        #expect(resolved.changes[0].change.fromLevel == "Unhealthy")
        #expect(resolved.announced.days.isEmpty)
        // And stays quiet.
        #expect(silent(assess(clearing, resolved.announced, today: "2026-12-08")))
    }

    @Test func aMissingForecastIsNotAnAllClear() throws {
        let fired = try #require(assess([forecast("2026-12-08", aqi: 160, category: 4)], nil))
        // No forecast at all for the days ahead: stale, not resolved.
        #expect(silent(assess([], fired.announced)))
    }

    @Test func belowTheLevelSaysNothing() {
        #expect(silent(assess([forecast("2026-12-08", aqi: 90, category: 2)], nil)))
        // An Action Day below the category fires unless action_day is off.
        let moderateActionDay = [forecast("2026-12-08", aqi: 90, category: 2, actionDay: true)]
        #expect(assess(moderateActionDay, nil)?.changes.first?.change.state == .firing)
        let strict = AirForecastRule(minCategory: 4, actionDay: false)
        #expect(
            silent(
                strict.assess(
                    trip: skiTrip, weather: [], alerts: [], air: airDays(moderateActionDay), announced: nil,
                    today: "2026-12-07", at: at)))
    }

    @Test func aWatchedAreaIsAssessedByItsRuleOnly() throws {
        let runner = TripRunner(rules: [
            Rule(name: "denver-air", kind: AirForecastRule(areas: ["Denver-Boulder"])),
            Rule(name: "packing", kind: TripPackingRule()),
        ])
        let places = runner.watchedPlaces(today: "2026-12-07")
        #expect(places.map(\.name) == ["place:Denver-Boulder"])
        #expect(places.allSatisfy { $0.isWatchedPlace })
        let place = try #require(places.first)
        let air = AirForecast.tripDays(
            place, forecasts: [forecast("2026-12-08", aqi: 125, category: 3, actionDay: true)], radiusKm: 50)
        var announced: [String: String] = [:]
        var out: [Transition] = []
        runner.assess(
            trip: place, weather: [], alerts: [], air: air, announced: &announced,
            now: Timestamp.parse("2026-12-07T12:00:00Z")!, into: &out)
        #expect(out.map(\.rule) == ["denver-air"])
        #expect(out.first?.station == "Denver-Boulder")
        #expect(out.first?.labels["place"] == "Denver-Boulder")
        #expect(
            out.first?.summary.hasPrefix("Denver-Boulder: Action Day forecast for Denver-Boulder, Tue 2026-12-08")
                == true,
            "\(out.first?.summary ?? "")")
        // A rule watching areas alone does not watch trips.
        #expect(!AirForecastRule(areas: ["Denver-Boulder"]).watches(skiTrip))
        #expect(AirForecastRule().watches(skiTrip))
    }

    @Test func otherTripsAreNotWatched() {
        let only = AirForecastRule(trips: ["beach"])
        #expect(
            silent(
                only.assess(
                    trip: skiTrip, weather: [], alerts: [],
                    air: airDays([forecast("2026-12-08", aqi: 160, category: 4)]),
                    announced: nil, today: "2026-12-07", at: at)))
    }
}

@Suite struct BadAirPackingTests {
    @Test func aBadAirDayPacksMasksAndAnIndoorPlanWithTheReason() {
        let air = airDays([
            forecast("2026-12-07", aqi: 87, category: 2),
            forecast("2026-12-08", aqi: 125, category: 3, actionDay: true),
            forecast("2026-12-09", aqi: 160, category: 4),
        ])
        let list = Packer.pack(skiTrip, weather: [], air: air)
        #expect(list.quantity(of: "N95 mask") == 2)
        #expect(list.quantity(of: "indoor activity plan") == 1)
        let mask = list.items.first { $0.item == "N95 mask" }
        #expect(mask?.category == "bad air")
        #expect(
            mask?.reasons == [
                "Action Day forecast for Denver, CO, Tue (PM2.5 AQI 125, Unhealthy for Sensitive Groups)",
                "PM2.5 AQI 160, Unhealthy forecast for Denver, CO, Wed",
            ])
        // Without bad air, neither.
        let clean = Packer.pack(skiTrip, weather: [], air: airDays([forecast("2026-12-08", aqi: 40, category: 1)]))
        #expect(clean.quantity(of: "N95 mask") == 0)
        #expect(clean.quantity(of: "indoor activity plan") == 0)
    }

    @Test func theTripPackingRuleAnnouncesTheChangeWithTheForecast() throws {
        let rule = TripPackingRule()
        let weather = [
            DayWeather(
                place: "Denver, CO", date: "2026-12-07", tempMaxC: 2, tempMinC: -8, source: "open-meteo", issued: 1)
        ]
        let first = try #require(
            rule.assess(
                trip: skiTrip, weather: weather, alerts: [], air: [], announced: nil, today: "2026-12-07", at: 1))
        #expect(first.changes[0].change.state == .firing)
        let air = airDays([forecast("2026-12-08", aqi: 125, category: 3, actionDay: true)])
        let changed = try #require(
            rule.assess(
                trip: skiTrip, weather: weather, alerts: [], air: air, announced: first.announced, today: "2026-12-07",
                at: 2))
        let c = changed.changes[0].change
        #expect(c.state == .changed)
        #expect(
            c.summary.contains(
                "+ N95 mask — Action Day forecast for Denver, CO, Tue (PM2.5 AQI 125, Unhealthy for Sensitive Groups)"))
        #expect(c.summary.contains("+ indoor activity plan"))
        #expect(
            c.explanation
                == "Denver, CO Tue 2026-12-08: air no forecast → Action Day (PM2.5 AQI 125, Unhealthy for Sensitive Groups)"
        )
        // The same forecast again: no change.
        #expect(
            silent(
                rule.assess(
                    trip: skiTrip, weather: weather, alerts: [], air: air, announced: changed.announced,
                    today: "2026-12-07", at: 3)))
    }
}
