import Foundation
import KlaxonCore
import KlaxonStore
import Testing

/// Readings and sources: every backend stores, counts and reads them the same way.
@Suite(.timeLimit(.minutes(10))) struct ReadingConformanceTests {
    @Test(
        "an hour's overall AQI is the highest of its pollutants' AQIs, whatever order they arrive in and across revisions (issue 39)",
        arguments: Backend.allCases)
    func overallAQIWhateverTheOrder(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let hour = t("2020-12-20T23:00:00Z")
            func airnow(_ pollutants: [String: Double]) -> SourceBatch {
                // As AirNowParser yields a body: each pollutant, and `aqi` the highest of the body's.
                var batch = SourceBatch(
                    stations: [StationInfo(id: "Central LA CO", source: "airnow", name: "Central LA CO")],
                    readings: pollutants.sorted { $0.key < $1.key }.map {
                        Reading(station: "Central LA CO", metric: "aqi." + $0.key, time: hour, value: $0.value)
                    } + [Reading(station: "Central LA CO", metric: "aqi", time: hour, value: pollutants.values.max()!)])
                batch.overallAQI = true
                return batch
            }
            func overall() async throws -> Double? {
                try await store.readings(station: "Central LA CO", metric: "aqi").first { $0.time == hour }?.value
            }
            // The legacy body of Tests/Fixtures/real/airnow (Central LA CO, 2020-12-20 15:00 PST).
            _ = try await store.write(airnow(["o3": 44, "pm25": 37, "pm10": 11]), at: hour)
            #expect(try await overall() == 44)
            // A 2026-format body of the same hour with one pollutant lower than the others: not the overall.
            _ = try await store.write(airnow(["no2": 20]), at: hour)
            #expect(try await overall() == 44)
            // PM2.5 revised up, alone in its body: it is the overall now.
            _ = try await store.write(airnow(["pm25": 74]), at: hour)
            #expect(try await overall() == 74)
            // And revised down again: the overall is worked out from what is stored, ozone's 44.
            _ = try await store.write(airnow(["pm25": 30]), at: hour)
            #expect(try await overall() == 44)
            #expect(try await store.readings(station: "Central LA CO", metric: "aqi.pm25").map(\.value) == [30])
            // A batch that does not derive its `aqi` (a feed that reports the overall itself) is stored as given.
            _ = try await store.write(
                SourceBatch(readings: [Reading(station: "Central LA CO", metric: "aqi", time: hour, value: 12)]),
                at: hour)
            #expect(try await overall() == 12)
        }
    }

    @Test(
        "PM concentrations derive the hourly NowCast series, recomputed when a late hour arrives (issue 42)",
        arguments: Backend.allCases)
    func nowCastSeriesFromHourlyConcentrations(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let start = t("2015-08-21T00:00:00Z")
            // The PWFSLSmoke vignette's Omak hours 0–11, oldest first; hour 11's NowCast is 54.8 µg/m³.
            let omak: [Double] = [123.3, 80.2, 49.3, 101.8, 93.7, 143.2, 215.4, 130.6, 129.2, 59.8, 27.4, 46.3]
            func pm(_ hour: Int, _ v: Double) -> Reading {
                Reading(station: "omak", metric: "pm25", time: start + Int64(hour) * 3600, value: v, unit: "µg/m³")
            }
            // Hour 6 is late: first the other eleven.
            let early = omak.enumerated().filter { $0.offset != 6 }.map { pm($0.offset, $0.element) }
            _ = try await store.write(SourceBatch(readings: early), at: start)
            let before = try await store.readings(station: "omak", metric: "pm25.nowcast")
            #expect(before.last?.time == start + 11 * 3600)
            #expect(before.last?.value != 54.8)
            // The late hour comes: every NowCast after it is recomputed.
            _ = try await store.write(SourceBatch(readings: [pm(6, omak[6])]), at: start)
            let nowcast = try await store.readings(station: "omak", metric: "pm25.nowcast")
            #expect(nowcast.last?.value == 54.8)
            #expect(nowcast.count == 11)  // hour 0 alone is 1 of its 3 most recent hours: no NowCast
            let aqi = try await store.readings(station: "omak", metric: "aqi.pm25.nowcast")
            #expect(aqi.last?.value == 149)
            // Readings files take the same path: the ingester derives them too, and counts only the file's.
            let ingester = try store.readingWriter()
            let stats = try await ingester.write(
                omak.enumerated().map {
                    Reading(
                        station: "file", metric: "pm25", time: start + Int64($0.offset) * 3600, value: $0.element,
                        unit: "ug/m3")
                })
            #expect(stats.inserted == 12)
            #expect(try await store.readings(station: "file", metric: "pm25.nowcast").last?.value == 54.8)
            // An index is not a concentration: nothing is derived from aqi.pm25.
            _ = try await store.write(
                SourceBatch(readings: [Reading(station: "x", metric: "aqi.pm25", time: start, value: 80)]), at: start)
            #expect(try await store.readings(station: "x", metric: "pm25.nowcast").isEmpty)
        }
    }

    @Test(arguments: Backend.allCases)
    func ingestIsIdempotentAndMarksRevisions(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let ingester = try store.readingWriter()
            let batch = [
                reading("A", "2026-01-01T00:00:00Z", 1), reading("A", "2026-01-01T00:15:00Z", 2),
                reading("B", "2026-01-01T00:00:00+01:00", 3),
            ]
            var s = try await ingester.write(batch)
            #expect(s.inserted == 3 && s.revised == 0 && s.unchanged == 0)
            s = try await ingester.write(batch)
            #expect(s.inserted == 0 && s.revised == 0 && s.unchanged == 3)
            #expect(try await store.readingCount() == 3)
            // A changed value for the same key updates the row and marks it revised.
            s = try await ingester.write([reading("A", "2026-01-01T00:15:00Z", 2.5)])
            #expect(s.revised == 1 && s.inserted == 0)
            let a = try await store.readings(station: "A", metric: "gage_height")
            #expect(a.map(\.value) == [1, 2.5])
            #expect(a.map(\.revised) == [false, true])
            let b = try await store.readings(station: "B", metric: "gage_height")
            #expect(b.first?.time == t("2025-12-31T23:00:00Z"))
            #expect(b.first?.unit == "ft")
            // A quality change alone is a revision too.
            s = try await ingester.write([reading("B", "2025-12-31T23:00:00Z", 3, quality: "A")])
            #expect(s.revised == 1)
            #expect(try await store.station(id: "A") != nil)
        }
    }

    @Test(
        "a mixed batch: interleaved series, readings older and newer than what is stored, repeats in the batch",
        arguments: Backend.allCases)
    func mixedBatchCountsEveryReadingRight(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let ingester = try store.readingWriter()
            func at(_ minutes: Int) -> String { Timestamp.format(t("2026-01-01T00:00:00Z") + Int64(minutes) * 60) }
            _ = try await ingester.write(
                (0..<100).flatMap { [reading("A", at($0 * 15), 1), reading("B", at($0 * 15), 1)] })
            var batch: [Reading] = []
            for i in 90..<190 {
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
    }

    @Test(
        "a bulk batch (several statements on PostgreSQL): the same counts, revisions, repeats and qualities",
        arguments: Backend.allCases)
    func bulkBatchCountsEveryReadingRight(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let ingester = try store.readingWriter()
            func at(_ minutes: Int) -> String { Timestamp.format(t("2026-01-01T00:00:00Z") + Int64(minutes) * 60) }
            let first = try await ingester.write(
                (0..<1000).flatMap { [reading("A", at($0 * 15), 1), reading("B", at($0 * 15), 1)] })
            #expect(first.inserted == 2000)
            var batch: [Reading] = []
            for i in 900..<1900 {
                batch.append(reading("A", at(i * 15), i >= 950 && i < 1000 ? 2 : 1))
                batch.append(reading("B", at(i * 15), 1))
                batch.append(reading("C", at(i * 15), Double(i) + 0.1))
            }
            batch.append(reading("C", at(1500 * 15), 999))  // a repeat inside the batch: the later value wins
            batch.append(reading("A", at(500 * 15), 7))  // older than the batch's new readings of A
            // Qualities COPY's text format must escape, and none.
            let qualities: [String?] = ["a\tb", "back\\slash\nline\rend", nil, "Ice,P"]
            for (i, q) in qualities.enumerated() {
                batch.append(reading("D", at(i * 15), 1e-5 * Double(i), quality: q))
            }
            let s = try await ingester.write(batch)
            #expect(s.inserted == 900 + 900 + 1000 + 4)
            #expect(s.revised == 50 + 1 + 1)
            #expect(s.unchanged == 50 + 100)
            #expect(try await store.readingCount() == 2000 + 2804)
            let a = try await store.readings(station: "A", metric: "gage_height")
            #expect(a.count == 1900)
            #expect(a.filter(\.revised).count == 51)
            #expect(a.first { $0.time == t(at(500 * 15)) }?.value == 7)
            let c = try await store.readings(station: "C", metric: "gage_height")
            #expect(c.first { $0.time == t(at(1500 * 15)) }?.value == 999)
            #expect(c.first { $0.time == t(at(901 * 15)) }?.value == 901.1)
            let d = try await store.readings(station: "D", metric: "gage_height")
            #expect(d.map(\.quality) == qualities)
            #expect(d.map(\.value) == (0..<4).map { 1e-5 * Double($0) }, "exactly, in shortest round-trip form")
            // Again: unchanged, but for the repeated key (stored 999, revised to its first value and back).
            let again = try await ingester.write(batch)
            #expect(again.inserted == 0 && again.revised == 2 && again.unchanged == batch.count - 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func readingsStreamBySeriesInTimeOrder(_ backend: Backend) async throws {
        try await backend.withStore { f in
            _ = try await f.store.readingWriter().write([
                reading("B", "2026-01-01T01:00:00Z", 2), reading("A", "2026-01-01T02:00:00Z", 3),
                reading("A", "2026-01-01T00:00:00Z", 1), reading("B", "2026-01-01T00:00:00Z", 0),
            ])
            var seen: [(String, Int64)] = []
            // Pages of one reading: a series spans several pages and still arrives in order.
            try await f.store.forEachReading(
                from: t("2026-01-01T00:00:00Z"), to: t("2026-01-01T01:00:00Z"), page: 1
            ) { key, _, readings in
                for r in readings { seen.append((key.station, r.time)) }
            }
            #expect(seen.map(\.0) == ["B", "B", "A"])
            #expect(
                seen.map(\.1) == [t("2026-01-01T00:00:00Z"), t("2026-01-01T01:00:00Z"), t("2026-01-01T00:00:00Z")])
        }
    }

    @Test("the ingest mark grows with every write that stores something, and only then", arguments: Backend.allCases)
    func ingestMarkGrows(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let ingester = try store.readingWriter()
            let empty = try await store.ingestMark()
            _ = try await ingester.write([reading("A", "2026-01-01T00:00:00Z", 1)])
            let first = try await store.ingestMark()
            #expect(first > empty)
            _ = try await ingester.write([reading("A", "2026-01-01T00:00:00Z", 1)])
            #expect(try await store.ingestMark() == first)
            _ = try await store.write(SourceBatch(readings: [reading("B", "2026-01-01T00:00:00Z", 1)]), at: 0)
            #expect(try await store.ingestMark() > first)
        }
    }

    @Test("a source's batch, cursor and failures", arguments: Backend.allCases)
    func sourceBatchesAndState(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let station = StationInfo(
                id: "01646500", source: "usgs", name: "Potomac", latitude: 38.9, longitude: -77.1,
                attributes: ["state": "MD"])
            let batch = SourceBatch(
                stations: [station],
                readings: [
                    reading("01646500", "2026-01-01T00:00:00Z", 4), reading("01646500", "2026-01-01T00:15:00Z", 5),
                ])
            var s = try await store.write(batch, source: "usgs-iv", cursor: "c1", at: 100)
            #expect(s.inserted == 2)
            var state = try await store.sourceState("usgs-iv")
            #expect(state?.cursor == "c1" && state?.lastSuccess == 100 && state?.failures == 0)

            try await store.recordFailure(source: "usgs-iv", error: "HTTP 503", at: 200, notBefore: 260)
            try await store.recordFailure(source: "usgs-iv", error: "HTTP 503", at: 300)
            state = try await store.sourceState("usgs-iv")
            #expect(state?.cursor == "c1" && state?.failures == 2 && state?.lastError == "HTTP 503")
            #expect(state?.lastAttempt == 300 && state?.notBefore == nil)

            // No new cursor keeps the old one; success clears the failures.
            s = try await store.write(SourceBatch(readings: []), source: "usgs-iv", cursor: nil, at: 400)
            state = try await store.sourceState("usgs-iv")
            #expect(state?.cursor == "c1" && state?.failures == 0 && state?.lastError == nil)
            #expect(try await store.sourceStates().map(\.source) == ["usgs-iv"])

            // Station metadata merges: a field left out keeps its stored value.
            _ = try await store.write(
                SourceBatch(stations: [StationInfo(id: "01646500", source: nil, attributes: ["basin": "Potomac"])]),
                source: nil, cursor: nil, at: 500)
            let info = try await store.stationInfos()["01646500"]
            #expect(info?.name == "Potomac" && info?.latitude == 38.9)
            #expect(info?.attributes == ["state": "MD", "basin": "Potomac"])
            #expect(try await store.resolveStation("usgs-01646500") == "01646500")
            #expect(try await store.series(station: "01646500").map(\.metric) == ["gage_height"])
        }
    }

    @Test("latest, values, last values and newest readings", arguments: Backend.allCases)
    func readsOfASeries(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            _ = try await store.readingWriter().write([
                reading("A", "2026-01-01T00:00:00Z", 1), reading("A", "2026-01-01T00:15:00Z", 2),
                reading("A", "2026-01-01T00:30:00Z", 3), reading("B", "2026-01-01T00:10:00Z", 9),
            ])
            #expect(try await store.latest(station: "A", metric: "gage_height")?.value == 3)
            #expect(
                try await store.latest(station: "A", metric: "gage_height", at: t("2026-01-01T00:20:00Z"))?.value == 2)
            #expect(try await store.latest(station: "Z", metric: "gage_height") == nil)
            let values = try await store.values(
                station: "A", metric: "gage_height", from: t("2026-01-01T00:00:00Z"), to: t("2026-01-01T00:30:00Z"))
            #expect(values.map(\.value) == [2, 3])
            #expect(try await store.lastValues(station: "A", metric: "gage_height", limit: 2).map(\.value) == [2, 3])
            #expect(try await store.newestReadings(limit: 10).map(\.station) == ["A", "B"])
            let times = try await store.latestTimes()
            #expect(times[SeriesKey(station: "B", metric: "gage_height")] == t("2026-01-01T00:10:00Z"))
        }
    }

    @Test("stations and NWS gauges: stored, merged, resolved by either id", arguments: Backend.allCases)
    func stationsAndGauges(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let record = StationRecord(
                id: "X1", source: "manual", name: "Test", latitude: 1, longitude: 2, timeZone: "UTC",
                attributes: ["k": "v"])
            try await store.upsert(station: record)
            #expect(try await store.station(id: "X1") == record)
            #expect(try await store.station(id: "nope") == nil)
            let info = StationInfo(
                id: "14211720", source: "usgs-iv", name: "WILLAMETTE RIVER AT PORTLAND", latitude: 45.5175,
                longitude: -122.6692, usgsID: "14211720")
            let gauge = GaugeInfo(
                lid: "PRTO3", usgsID: "14211720", name: "Willamette River at Portland",
                description: "Willamette R at Portland, OR", state: "OR", timeZone: "America/Los_Angeles",
                categories: FloodCategories(stage: ["action": 15, "minor": 18, "moderate": 23, "major": 28]))
            let plain = GaugeInfo(lid: "NOCAT1", name: "No categories")
            _ = try await store.write(SourceBatch(stations: [info], gauges: [gauge, plain]), at: 777)
            #expect(try await store.gauges() == [plain, gauge])
            #expect(try await store.gaugeFetchedAt(lid: "PRTO3") == 777)
            #expect(try await store.gaugeFetchedAt(lid: "NONE") == nil)
            let floods = try await store.floodCategories()
            #expect(Array(floods.keys) == ["14211720"] && floods["14211720"]?.stage["minor"] == 18)
            let (stations, both) = try await store.stationsAndFloods()
            #expect(both == floods)
            let s = try #require(stations["14211720"])
            #expect(s.name == "Willamette R at Portland, OR" && s.nwsLID == "PRTO3")
            #expect(s.timeZone == "America/Los_Angeles" && s.latitude == 45.5175)
            #expect(stations["NOCAT1"]?.name == "No categories")
            #expect(try await store.stationInfos().count == stations.count)
            #expect(try await store.resolveStation("prto3") == "14211720")
            #expect(try await store.resolveStation("USGS-14211720") == "14211720")
            #expect(try await store.resolveStation("x1") == "X1")
            #expect(try await store.resolveStation("nowhere") == nil)
        }
    }
}
