import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonServer
import KlaxonStore
import Logging
import Testing

/// A value as `JSONSerialization` read it (a test's view of a body), as a typed JSON value; nil for
/// nil and for anything that is not JSON.
func jsonValue(_ any: Any?) -> JSONValue? {
    guard let any, JSONSerialization.isValidJSONObject([any]),
        let data = try? JSONSerialization.data(withJSONObject: [any])
    else { return nil }
    return JSONValue.parse(data)?.array?.first
}

/// Sources' states as a store holds them, for `/readyz`.
final class SourceStatesFake: HealthReads, Sendable {
    let states: [SourceStateRecord]

    init(_ states: [SourceStateRecord]) { self.states = states }

    var path: String { "fake" }
    func metrics() async throws -> StoreMetrics { StoreMetrics() }
    func isReachable() async -> Bool { true }
    func sourceState(_ source: String) async throws -> SourceStateRecord? { states.first { $0.source == source } }
    func sourceStates() async throws -> [SourceStateRecord] { states }
}

/// The JSON that was built as `[String: Any]` and is now typed (`Readiness`, `Trips.Shown`) writes
/// the same bytes: the old builders are here, as the reference.
@Suite("typed JSON, byte for byte")
struct TypedJSONTests {
    static let hostile = "quote \" backslash \\ slash / </script> tab\t nl\n bell\u{7} del\u{7F} \u{2028} é ☔ 🌊"

    /// `/readyz`'s body as `KlaxonHTTP.json(_:status:)` wrote the old dictionary (`JSONSerialization`,
    /// sorted keys, `/` unescaped).
    static func oldReadiness(
        database: String, states: [SourceStateRecord], sources: [String], health: StoreHealth, error: String?
    ) throws -> Data {
        var list: [[String: Any]] = []
        for name in sources {
            let s = states.first { $0.source == name }
            var o: [String: Any] = ["name": name, "failures": s?.failures ?? 0]
            o["last_success"] = s?.lastSuccess.map(Timestamp.format) ?? NSNull()
            o["last_error"] = s?.lastError ?? NSNull()
            o["healthy"] = s?.lastSuccess != nil && (s?.failures ?? 0) == 0
            list.append(o)
        }
        var out: [String: Any] = [
            "database": database, "sources": list, "version": BuildInfo.version, "revision": BuildInfo.revision,
            "duties": ["held": health.duties.held, "standby": health.duties.standby],
        ]
        let troubles = health.troubles
        if !troubles.isEmpty {
            out["database_waiting"] = troubles.sorted { $0.key < $1.key }.map { service, t -> [String: Any] in
                ["service": service, "since": Timestamp.format(t.since / 1000), "error": t.error]
            }
        }
        if let error { out["database_error"] = error }
        return try JSONSerialization.data(withJSONObject: out, options: [.sortedKeys, .withoutEscapingSlashes])
    }

    static func encoded(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    static func state(_ json: String) throws -> SourceStateRecord {
        try JSONDecoder().decode(SourceStateRecord.self, from: Data(json.utf8))
    }

    @Test("/readyz: the same bytes as the dictionary it replaces, nulls, hostile errors and waiting services included")
    func readinessAsBefore() async throws {
        let error = try JSONEncoder().encode(Self.hostile)
        let states = [
            try Self.state(#"{"source":"usgs","failures":0,"last_success":1772345700}"#),
            try Self.state(
                #"{"source":"nws \#(Self.hostile.prefix(5))","failures":3,"last_success":1772345000,"last_error":"#
                    + String(decoding: error, as: UTF8.self) + "}"),
            try Self.state(#"{"source":"never","failures":1,"last_error":"x"}"#),
        ]
        let sources = ["usgs", "nws \(Self.hostile.prefix(5))", "never", "unknown/\(Self.hostile)"]
        let health = StoreHealth()
        health.duties.want("evaluate")
        health.duties.want("deliver")
        health.duties.took("evaluate")
        for round in 0..<2 {
            if round == 1 {
                struct Broken: Error, CustomStringConvertible { var description: String }
                health.failed(
                    "api \(Self.hostile)", Broken(description: Self.hostile),
                    logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
            }
            let (_, body) = await KlaxonHTTP.readiness(
                store: SourceStatesFake(states), sources: sources, health: health)
            #expect(body.databaseWaiting?.count == (round == 1 ? 1 : nil))
            let old = try Self.oldReadiness(
                database: body.database, states: states, sources: sources, health: health, error: nil)
            #expect(String(decoding: try Self.encoded(body), as: UTF8.self) == String(decoding: old, as: UTF8.self))
        }
        // The database file's message (`database_error`).
        var body = await KlaxonHTTP.readiness(store: SourceStatesFake([]), sources: [], health: StoreHealth()).1
        body.databaseError = Self.hostile
        let old = try Self.oldReadiness(
            database: body.database, states: [], sources: [], health: StoreHealth(), error: Self.hostile)
        #expect(String(decoding: try Self.encoded(body), as: UTF8.self) == String(decoding: old, as: UTF8.self))
    }

    /// `trip show --format json` as it was written: each part through `JSONEncoder`, read back, and
    /// the whole through `JSONSerialization` with sorted keys.
    static func oldTripJSON(_ trip: Trip, list: PackingList, weather: [DayWeather]) throws -> String {
        func object<T: Encodable>(_ value: T) throws -> Any {
            try JSONSerialization.jsonObject(with: try JSONEncoder().encode(value))
        }
        let items: [[String: Any]] = list.items.map {
            [
                "item": $0.item, "quantity": $0.quantity, "category": $0.category,
                "reason": $0.reasons.joined(separator: "; "),
            ]
        }
        let o: [String: Any] = ["trip": try object(trip), "weather": try weather.map(object), "items": items]
        let data = try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    @Test("trip show --format json: the same bytes as before, fractions, large and missing numbers included")
    func tripJSONAsBefore() throws {
        let trip = Trip(
            name: "denver \(Self.hostile)", owner: "alice",
            stops: [
                Trip.Stop(
                    place: "Denver, CO", latitude: 39.7392, longitude: -104.9903, timeZone: "America/Denver",
                    arrive: "2026-12-03", nights: 3),
                Trip.Stop(place: Self.hostile, arrive: "2026-12-06", nights: 0),
            ],
            purpose: .business, activities: ["hiking", "formal"],
            overrides: [
                PackingOverride(item: "umbrella", action: .add, quantity: 2),
                PackingOverride(item: "hat", action: .remove),
            ])
        let weather = [
            DayWeather(
                place: "Denver, CO", date: "2026-12-03", tempMaxC: 7.5, tempMinC: -3.25, precipitationMm: 0.1,
                precipitationProbability: 70, snowfallCm: 12.000000001, windMaxKmh: 1e-7, weatherCode: 71,
                source: "open-meteo", issued: 1_772_345_700),
            DayWeather(
                place: Self.hostile, date: "2026-12-06", tempMaxC: 1e20, source: "climatology", issued: 0,
                climatology: true),
        ]
        let list = PackingList(items: [
            PackingItem(item: "t-shirt", category: "tops", quantity: 3, reasons: ["4 warm days", Self.hostile]),
            PackingItem(item: "umbrella", category: "rain", quantity: 2),
        ])
        #expect(
            try Trips.json(trip, list: list, weather: weather) == Self.oldTripJSON(trip, list: list, weather: weather))
    }

    @Test("JSONValue reads what JSONSerialization read: numbers, booleans, null, nesting")
    func jsonValueReads() throws {
        let text = #"{"a":[1,2.5,true,null,"x/\u00e9"],"b":{"c":-3e2},"d":false}"#
        let v = try #require(JSONValue.parse(Data(text.utf8)))
        #expect(v["a"]?.array == [1, .number(2.5), true, .null, "x/é"])
        #expect(v["b"]?["c"]?.number == -300)
        #expect(v["d"]?.bool == false && v["d"]?.number == nil)
        #expect(JSONValue.parse(Data("{".utf8)) == nil)
        // Written back: whole numbers without a fraction.
        let encoded = try JSONEncoder().encode(JSONValue.array([1, .number(2.5), .number(-300)]))
        #expect(String(decoding: encoded, as: UTF8.self) == "[1,2.5,-300]")
    }
}
