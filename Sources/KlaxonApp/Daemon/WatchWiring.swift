import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore

/// How the app serves watches (issue 43): what may be watched (`catalog`), where a watch's alerts go
/// (`receiver(for:)`, the seam for direct messages), and the rules the engine runs for them (`rules`).
public enum WatchWiring {
    /// What may be watched: the store's gauges (stations with stage readings) and air places
    /// (stations with AQI readings), narrowed by `watches.stations` and `watches.air_places`; the
    /// quake places of `watches.places` and of the quake rules.
    public static func catalog(store: any SeriesReads & StationReads, config: Config, rules: [Rule]) async throws
        -> WatchCatalog
    {
        let settings = config.watches
        var catalog = WatchCatalog(kinds: settings.kinds)
        let needsStations = settings.kinds.contains(.gauge) || settings.kinds.contains(.air)
        let infos = needsStations ? try await store.stationInfos() : [:]
        if settings.kinds.contains(.gauge) {
            for key in try await store.latestTimes(metric: WatchTarget.gaugeMetric).keys
            where settings.stations?.contains(key.station) ?? true {
                catalog.gauges[key.station] = .some(infos[key.station]?.name)
            }
        }
        if settings.kinds.contains(.air) {
            var stations = Set(try await store.latestTimes(metric: AirSeries.observed.metric).keys.map(\.station))
            stations.formUnion(try await store.latestTimes(metric: AirSeries.nowcast.metric).keys.map(\.station))
            var byName: [String: [String]] = [:]
            for id in stations {
                let name = infos[id]?.name.flatMap { $0.isEmpty ? nil : $0 } ?? id
                if let allowed = settings.airPlaces, !allowed.contains(name), !allowed.contains(id) { continue }
                byName[name, default: []].append(id)
            }
            catalog.airPlaces = byName.sorted { $0.key < $1.key }.map {
                WatchCatalog.AirPlace(name: $0.key, stations: $0.value.sorted())
            }
        }
        if settings.kinds.contains(.quakes) {
            var places = settings.places
            for rule in rules {
                for p in rule.kind.quake?.near ?? []
                where !places.contains(where: { $0.name.lowercased() == p.name.lowercased() }) {
                    // A rule's place may have no radius (an intensity alone): a watch looks 1000 km out.
                    let radius = p.radiusKm.isFinite ? p.radiusKm : QuakeThreshold.feltRadiusKm
                    places.append(
                        WatchPlace(name: p.name, latitude: p.latitude, longitude: p.longitude, radiusKm: radius))
                }
            }
            catalog.quakePlaces = places
        }
        return catalog
    }

    /// The receiver that delivers to `destination`: the receiver `watches.channels` names for a
    /// channel; for an address, an email receiver that sends to exactly it; for a direct message,
    /// the person's own receiver (`DirectReceiver`: `BASE+dm:USER`) through the receiver
    /// `watches.direct` names for the platform. Nil when there is none (the watch is kept and not
    /// evaluated until there is).
    public static func receiver(for destination: WatchDestination, config: Config) -> String? {
        switch destination {
        case .channel:
            guard let name = config.watches.channels[destination.key], config.receiver(named: name) != nil else {
                return nil
            }
            return name
        case .email(let address):
            return config.receivers.first {
                if case .email(let e) = $0 { return e.to.map { $0.lowercased() } == [address.lowercased()] }
                return false
            }?.name
        case .direct(let platform, let user):
            guard let base = config.watches.direct[platform], let receiver = config.receiver(named: base),
                Config.directProblem(receiver, platform: platform) == nil,
                DirectReceiver.isUserID(user, platform: platform)
            else { return nil }
            let name = DirectReceiver(base: base, user: user).name
            // A configured receiver of that very name would take the person's messages: none then.
            return config.receiver(named: name) == nil ? name : nil
        }
    }

    /// The rules of the stored watches, each with its owner's quiet hours: what the daemon and
    /// `klaxon evaluate` run besides the rule files.
    public static func storedRules(store: any WatchStore, config: Config) async throws -> [Rule] {
        rules(try await store.allWatches(), config: config, quiet: try await store.allWatchQuietHours())
    }

    /// The watch rules with active alerts (`counts`) that are not among `kept`: watches removed
    /// since they were last evaluated (while no daemon ran, or between two `klaxon evaluate`s).
    public static func gone(counts: [AlertCount], kept: [Rule]) -> Set<String> {
        let names = Set(kept.map(\.name))
        return Set(counts.map(\.rule)).filter { $0.hasPrefix("watch-") && !names.contains($0) }
    }

    /// The rules of `watches` whose destination has a receiver, and the kinds the config allows;
    /// each labelled with its owner's `quiet` hours, if they keep any.
    public static func rules(_ watches: [Watch], config: Config, quiet: [String: WatchQuietHours] = [:]) -> [Rule] {
        watches.compactMap { w in
            guard config.watches.kinds.contains(w.target.kindName),
                let receiver = receiver(for: w.destination, config: config)
            else { return nil }
            return w.rule(receiver: receiver, quiet: quiet[w.owner.key])
        }
    }
}
