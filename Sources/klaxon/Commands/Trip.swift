import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonStore

/// `--owner` and `--all`, shared by the trip commands.
struct OwnerOptions: ParsableArguments {
    @Option(help: "Act for this owner (default: the user running the command).")
    var owner: String?

    @Flag(help: "Admins only (admins: in the config): find the trip whatever its owner.")
    var all = false

    func actor(_ config: Config?) throws -> Trips.Actor { try Trips.Actor(owner: owner, all: all, config: config) }
}

struct TripCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trip", abstract: "Saved trips and their packing lists.",
        subcommands: [Add.self, List.self, Show.self, Edit.self, Remove.self, Export.self, Import.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Save a trip from a YAML file, or a one-stop trip from flags.",
            discussion: "Stops given by name are looked up with Open-Meteo's geocoding API.")

        @OptionGroup var store: StoreOptions
        @OptionGroup var who: OwnerOptions

        @Argument(help: "The trip file (YAML).")
        var file: String?

        @Option(help: "One-stop trip: its name.") var name: String?
        @Option(help: "One-stop trip: the place (\"Denver, Colorado\").") var place: String?
        @Option(help: "One-stop trip: latitude,longitude instead of looking the place up.") var at: String?
        @Option(help: "One-stop trip: arrival date (2026-12-01).") var arrive: String?
        @Option(help: "One-stop trip: nights.") var nights: Int = 1
        @Option(help: "One-stop trip: business or leisure.") var purpose: String = "leisure"
        @Option(name: .customLong("activity"), help: "One-stop trip: an activity (repeatable).") var activities:
            [String] = []

        func validate() throws {
            if file == nil && (name == nil || place == nil || arrive == nil) {
                throw ValidationError("give a trip file, or --name, --place and --arrive for a one-stop trip")
            }
            if file != nil && (name != nil || place != nil) {
                throw ValidationError("give a trip file or flags, not both")
            }
        }

        func run() async throws {
            try await guarded {
                let config = try store.loadConfig()
                let owner = try who.actor(config).owner
                var trip: Trip
                if let file {
                    trip = try TripFile.load(path: file, owner: owner)
                } else {
                    var yaml = "name: \(Self.quote(name ?? ""))\npurpose: \(purpose)\n"
                    yaml += "activities: [\(activities.map(Self.quote).joined(separator: ", "))]\n"
                    yaml +=
                        "stops:\n  - place: \(Self.quote(place ?? ""))\n    arrive: \(arrive ?? "")\n    nights: \(nights)\n"
                    if let at {
                        let parts = at.split(separator: ",")
                        guard parts.count == 2 else { throw UserError("--at must be LAT,LON") }
                        yaml += "    latitude: \(parts[0])\n    longitude: \(parts[1])\n"
                    }
                    do {
                        trip = try TripFile.load(text: yaml, origin: "the trip flags", owner: owner)
                    } catch let e as DiagnosticsError {
                        // Name the flag's problem, not a line of YAML the user never wrote.
                        throw UserError(e.diagnostics.map(\.message).joined(separator: "; "))
                    }
                }
                trip = try await Trips.geocode(trip, config: config)
                return try await store.withStore(config: config, create: true) { db in
                    do {
                        try await db.save(trip: trip, at: nowSeconds())
                    } catch let e as TripError {
                        throw UserError(e.description)
                    }
                    let stops = trip.stops.map {
                        "\($0.place) (\(formatValue($0.latitude ?? 0)), \(formatValue($0.longitude ?? 0)))"
                    }
                    print(
                        TerminalText.safe(
                            "saved trip \"\(trip.name)\" for \(trip.owner): \(stops.joined(separator: ", "))"))
                    return 0
                }
            }
        }

        static func quote(_ s: String) -> String { Escape.yamlQuoted(s) }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the owner's trips (every owner's with --all).")
        @OptionGroup var store: StoreOptions
        @OptionGroup var who: OwnerOptions

        func run() async throws {
            try await guarded {
                let config = try store.loadConfig()
                let actor = try who.actor(config)
                return try await store.withStore(config: config) { db in
                    let trips = try await db.trips(owner: actor.all ? nil : actor.owner)
                    for t in trips {
                        let first = t.stops.first?.arrive ?? "?"
                        let last = Packer.days(of: t).last?.date ?? "?"
                        let owner = actor.all ? "\(t.owner)/" : ""
                        print(
                            TerminalText.safe(
                                "\(owner)\(t.name)  \(first) → \(last)  \(t.stops.map(\.place).joined(separator: " → "))"
                            ))
                    }
                    if trips.isEmpty { printError("no trips for \(actor.all ? "anyone" : actor.owner)") }
                    return 0
                }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The packing list and the weather per day.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var who: OwnerOptions
        @Argument(help: "The trip's name.") var name: String
        @Option(help: "Output format: text or json.") var format: StdoutNotifier.Format = .text

        func run() async throws {
            try await guarded {
                let config = try store.loadConfig()
                return try await store.withStore(config: config) { db in
                    let trip = try await Trips.find(name, store: db, actor: try who.actor(config))
                    let (list, weather) = try await Trips.packing(
                        trip, store: db, air: try await db.airDays(for: trip))
                    print(
                        format == .json
                            ? try Trips.json(trip, list: list, weather: weather)
                            : TerminalText.safeLines(Trips.text(trip, list: list, weather: weather)))
                    return 0
                }
            }
        }
    }

    struct Edit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change a trip: replace it from a file, or adjust its preferences and overrides.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var who: OwnerOptions
        @Argument(help: "The trip's name.") var name: String
        @Option(help: "Replace the trip with this file (its name must stay the same).") var from: String?
        @Option(name: .customLong("add"), help: "Always pack this item (repeatable).") var add: [String] = []
        @Option(name: .customLong("remove"), help: "Never pack this item (repeatable).") var remove: [String] = []
        @Option(name: .customLong("quantity"), help: "ITEM=N: pack exactly N (repeatable).") var quantity: [String] = []
        @Option(help: "true or false.") var laundry: Bool?
        @Option(name: .customLong("rewear-bottoms"), help: "true or false.") var rewearBottoms: Bool?
        @Option(help: "runs-cold, cold, neutral, warm or runs-hot.") var feels: String?
        @Option(help: "metric or imperial.") var units: String?

        func run() async throws {
            try await guarded {
                let config = try store.loadConfig()
                let actor = try who.actor(config)
                return try await store.withStore(config: config) { db in
                    var trip = try await Trips.find(name, store: db, actor: actor)
                    if let from {
                        let replacement = try TripFile.load(path: from, owner: trip.owner)
                        guard replacement.name == trip.name else {
                            throw UserError("\(from): name is \"\(replacement.name)\", not \"\(trip.name)\"")
                        }
                        trip = try await Trips.geocode(replacement, config: config)
                    }
                    for item in add { trip.overrides.append(PackingOverride(item: item, action: .add)) }
                    for item in remove { trip.overrides.append(PackingOverride(item: item, action: .remove)) }
                    for q in quantity {
                        let parts = q.split(separator: "=", maxSplits: 1)
                        guard parts.count == 2, let n = Int(parts[1]), n >= 0 else {
                            throw UserError("--quantity \"\(q)\" must be ITEM=N with N ≥ 0")
                        }
                        trip.overrides.append(PackingOverride(item: String(parts[0]), action: .quantity, quantity: n))
                    }
                    if let laundry { trip.preferences.laundry = laundry }
                    if let rewearBottoms { trip.preferences.rewearBottoms = rewearBottoms }
                    if let feels {
                        guard let f = PackingPreferences.Feels(rawValue: feels) else {
                            throw UserError("--feels must be runs-cold, cold, neutral, warm or runs-hot")
                        }
                        trip.preferences.feels = f
                    }
                    if let units {
                        guard let u = PackingPreferences.Units(rawValue: units) else {
                            throw UserError("--units must be metric or imperial")
                        }
                        trip.preferences.units = u
                    }
                    try await db.save(trip: trip, at: nowSeconds(), replace: true)
                    print(TerminalText.safe("updated trip \"\(trip.name)\" for \(trip.owner)"))
                    return 0
                }
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a trip.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var who: OwnerOptions
        @Argument(help: "The trip's name.") var name: String

        func run() async throws {
            try await guarded {
                let config = try store.loadConfig()
                return try await store.withStore(config: config) { db in
                    let trip = try await Trips.find(name, store: db, actor: try who.actor(config))
                    try await db.removeTrip(owner: trip.owner, name: trip.name)
                    print(TerminalText.safe("removed trip \"\(trip.name)\" of \(trip.owner)"))
                    return 0
                }
            }
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The trip, its forecasts and its list as JSON.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var who: OwnerOptions
        @Argument(help: "The trip's name.") var name: String
        @Option(help: "Output format: json.") var format: String = "json"

        func run() async throws {
            try await guarded {
                guard format == "json" else { throw UserError("--format must be json") }
                let config = try store.loadConfig()
                return try await store.withStore(config: config) { db in
                    let trip = try await Trips.find(name, store: db, actor: try who.actor(config))
                    print(try await Trips.export(trip, store: db))
                    return 0
                }
            }
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Load a trip exported with `trip export`.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var who: OwnerOptions
        @Argument(help: "The export file (JSON).") var file: String
        @Flag(help: "Replace a trip of the same name.") var replace = false

        func run() async throws {
            try await guarded {
                let config = try store.loadConfig()
                let owner = try who.actor(config).owner
                return try await store.withStore(config: config, create: true) { db in
                    let trip = try await Trips.importTrip(
                        path: file, owner: owner, store: db, now: nowSeconds(), replace: replace)
                    print(TerminalText.safe("imported trip \"\(trip.name)\" for \(trip.owner)"))
                    return 0
                }
            }
        }
    }
}
