import AsyncHTTPClient
import Foundation
import KlaxonCore
import KlaxonSources
import KlaxonStore

/// Trip commands' logic: geocoding stops, owner checks, the packing view, export and import.
public enum Trips {
    /// The user running the command (`CurrentUser`).
    public static var currentUser: String { CurrentUser.name }

    /// Who a command acts for, and whether it may see every owner's trips.
    public struct Actor: Sendable {
        public var owner: String
        public var all: Bool

        /// Acting for one owner only (chat users, API tokens).
        public init(owner: String) {
            self.owner = owner
            self.all = false
        }

        /// `--all` is for admins (`admins:` in the config) only.
        public init(owner: String?, all: Bool, config: Config?) throws {
            self.owner = owner ?? Trips.currentUser
            if all && !(config?.admins.contains(Trips.currentUser) ?? false) {
                throw UserError("--all is for admins (add \(Trips.currentUser) to admins: in the config)")
            }
            self.all = all
        }
    }

    /// Finds a trip the actor may see; "not found" for another owner's trip (without `--all`).
    public static func find(_ name: String, store: any TripStore, actor: Actor) async throws -> Trip {
        if let t = try await store.trip(owner: actor.owner, name: name) { return t }
        if actor.all {
            let matches = try await store.trips(owner: nil).filter { $0.name == name }
            if matches.count == 1 { return matches[0] }
            if matches.count > 1 {
                let owners = matches.map(\.owner).joined(separator: ", ")
                throw UserError("trip \"\(name)\" exists for several owners (\(owners)): give --owner")
            }
        }
        throw UserError("trip \"\(name)\" not found for \(actor.owner)")
    }

    /// Fills in coordinates for stops given by name (Open-Meteo geocoding). An unknown or ambiguous
    /// place is an error listing the candidates.
    public static func geocode(_ trip: Trip, config: Config?, client: HTTPClient = .shared) async throws -> Trip {
        guard trip.stops.contains(where: { $0.latitude == nil }) else { return trip }
        // The config's open-meteo source's geocoder (its name in errors), else the public one.
        let configured = config?.sources.compactMap { c in
            c.source.lookupURL(.geocoding).map { (name: c.source.name, url: $0) }
        }.first
        let geo =
            configured.map { OpenMeteoSource(name: $0.name, geocodingURL: $0.url) }
            ?? OpenMeteoSource(name: "geocoding")
        let http = HTTPFetcher(client: client, timeout: 15)
        var out = trip
        for i in out.stops.indices where out.stops[i].latitude == nil {
            let place = out.stops[i].place
            let candidates = try await geo.geocode(place, http: http)
            let pick: OpenMeteoParser.Place
            switch candidates.count {
            case 0:
                throw UserError(
                    "stops[\(i)].place: no place called \"\(place)\" was found; check the spelling or give latitude and longitude"
                )
            case 1:
                pick = candidates[0]
            default:
                // A clear favourite (five times the population of the next) is taken; otherwise ask.
                let pops = candidates.map { $0.population ?? 0 }
                if pops[0] > 0, pops[0] >= 5 * pops[1] {
                    pick = candidates[0]
                } else {
                    let list = candidates.prefix(6).map {
                        "\($0.label) (\(formatValue($0.latitude)), \(formatValue($0.longitude)))"
                    }.joined(separator: "; ")
                    throw UserError(
                        "stops[\(i)].place: \"\(place)\" is ambiguous: \(list). Write it as \"\(place), REGION\" or give latitude and longitude"
                    )
                }
            }
            out.stops[i].latitude = pick.latitude
            out.stops[i].longitude = pick.longitude
            out.stops[i].timeZone = pick.timeZone
        }
        return out
    }

    /// The trip's list and the weather it was made from; `air`, the trip days' air-quality forecasts
    /// (`AirForecastStore.airDays(for:)`), adds what a bad-air day needs.
    public static func packing(_ trip: Trip, store: any WeatherStore, air: [TripAirDay] = []) async throws -> (
        list: PackingList, weather: [DayWeather]
    ) {
        let weather = try await store.weather(for: trip)
        return (Packer.pack(trip, weather: weather, air: air), weather)
    }

    /// The packing table and the weather per day, for people.
    public static func text(_ trip: Trip, list: PackingList, weather: [DayWeather]) -> String {
        var lines = ["\(trip.name) (\(trip.owner)) — \(trip.purpose.rawValue)"]
        for s in trip.stops {
            lines.append("  \(s.place): arrive \(s.arrive), \(s.nights) night\(s.nights == 1 ? "" : "s")")
        }
        lines.append("")
        lines.append("Weather")
        let units = trip.preferences.units
        for day in TripView.days(trip, weather: weather) {
            guard let w = day.weather else {
                lines.append("  \(day.date) \(day.place): no forecast yet")
                continue
            }
            let tag = w.climatology ? " (climatology)" : ""
            lines.append(
                "  \(day.date) \(day.place): \(TripView.conditions(w, units: units).joined(separator: ", "))\(tag)")
        }
        lines.append("")
        lines.append("Packing list")
        lines.append(list.table())
        return lines.joined(separator: "\n")
    }

    /// `trip show --format json`: the trip, the weather per day, and the items (`item`, `quantity`,
    /// `reason`, `category`).
    public static func json(_ trip: Trip, list: PackingList, weather: [DayWeather]) throws -> String {
        let shown = Shown(
            trip: trip, weather: weather,
            items: list.items.map {
                Shown.Item(
                    item: $0.item, quantity: $0.quantity, category: $0.category,
                    reason: $0.reasons.joined(separator: "; "))
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(shown), as: UTF8.self)
    }

    /// `trip show --format json`'s document.
    struct Shown: Encodable {
        struct Item: Encodable {
            var item: String
            var quantity: Int
            var category: String
            var reason: String
        }
        var trip: Trip
        var weather: [DayWeather]
        var items: [Item]
    }

    /// `trip export`: the trip, its stored forecasts and its list, as one JSON document that
    /// `trip import` reads back.
    public struct Export: Codable, Sendable {
        public var format: String
        public var trip: Trip
        public var weather: [DayWeather]
        public var list: PackingList
    }

    public static func export(_ trip: Trip, store: any TripStore & WeatherStore) async throws -> String {
        let list = try await packing(trip, store: store).list
        var stored: [DayWeather] = []
        for s in trip.stops {
            if let lat = s.latitude, let lon = s.longitude {
                await stored += try store.forecasts(place: PlacePoint(latitude: lat, longitude: lon).key)
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        let doc = Export(format: "klaxon-trip-1", trip: trip, weather: stored, list: list)
        return String(decoding: try encoder.encode(doc), as: UTF8.self)
    }

    /// Reads an export; the trip is stored for `owner` and its forecasts with it.
    public static func importTrip(
        path: String, owner: String, store: any TripStore & WeatherStore, now: Int64, replace: Bool
    ) async throws
        -> Trip
    {
        guard let data = try await readFile(path) else {
            throw UserError("\(path): cannot read the file")
        }
        let doc: Export
        do {
            doc = try JSONDecoder().decode(Export.self, from: data)
        } catch {
            throw UserError("\(path): not a trip export (from `klaxon trip export NAME --format json`): \(error)")
        }
        guard doc.format == "klaxon-trip-1" else { throw UserError("\(path): unknown export format \"\(doc.format)\"") }
        var trip = doc.trip
        trip.owner = owner
        do {
            try await store.save(trip: trip, at: now, replace: replace)
            try await store.write(weather: doc.weather)
        } catch let e as TripError {
            throw UserError(e.description)
        }
        return trip
    }
}
