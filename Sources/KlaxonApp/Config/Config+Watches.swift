import Foundation
import KlaxonCore
import KlaxonDelivery
import Yams

/// What the operator allows people to watch (`watches:` in `klaxon.yaml`, issue 43).
public struct WatchSettings: Sendable {
    /// The kinds people may watch (`kinds`, default every kind).
    public var kinds: Set<WatchKind> = Set(WatchKind.allCases)
    /// How many watches one person may hold (`max_per_person`, default 20).
    public var maxPerPerson = 20
    /// The gauges that may be watched (`stations`); nil: every gauge with stage readings.
    public var stations: Set<String>?
    /// The air places that may be watched, by name or station id (`air_places`); nil: every place
    /// with AQI readings.
    public var airPlaces: Set<String>?
    /// Places quakes may be watched near (`places`), besides those of the quake rules.
    public var places: [WatchPlace] = []
    /// The channels watches may post to, each with the receiver that posts there (`channels`:
    /// `slack:C0123: team-river`). A watch made in any other channel is refused.
    public var channels: [String: String] = [:]
    /// The receiver that carries each platform's direct messages (`direct`: `slack: slack-app`): a
    /// Slack receiver in app mode (`bot_token`), a Mattermost one with a bot token, a Telegram one.
    /// A watch asking for direct messages on a platform it does not name is refused.
    public var direct: [String: String] = [:]

    public init() {}

    /// The most a person may hold, whatever the file says.
    public static let maxPerPersonLimit = 10_000
}

extension Config {
    /// `watches: {kinds, max_per_person, stations, air_places, places, channels}`.
    mutating func loadWatches(_ n: Node, _ reader: ConfigReader) {
        let file = reader.file
        guard var m = file.map(n, what: "watches") else { return }
        if let kn = m.value("kinds"), let names = file.stringList(kn, what: "watches.kinds") {
            var kinds: Set<WatchKind> = []
            for name in names {
                if let k = WatchKind(rawValue: name) {
                    kinds.insert(k)
                } else {
                    file.error(
                        kn,
                        "watches.kinds: unknown kind \"\(String(name.prefix(40)))\" (kinds are \(WatchKind.allCases.map(\.rawValue).joined(separator: ", ")))"
                    )
                }
            }
            watches.kinds = kinds
        }
        if let mn = m.value("max_per_person"), let v = file.integer(mn, what: "watches.max_per_person") {
            if (0...WatchSettings.maxPerPersonLimit).contains(v) {
                watches.maxPerPerson = v
            } else {
                file.error(mn, "watches.max_per_person must be from 0 to \(WatchSettings.maxPerPersonLimit)")
            }
        }
        if let sn = m.value("stations"), let v = file.stringList(sn, what: "watches.stations") {
            watches.stations = Set(v)
        }
        if let an = m.value("air_places"), let v = file.stringList(an, what: "watches.air_places") {
            watches.airPlaces = Set(v)
        }
        if let pn = m.value("places"), let items = file.list(pn, what: "watches.places") {
            for item in items {
                guard var pm = file.map(item, what: "a place of watches.places") else { continue }
                let name = pm.required("name", what: "the place").flatMap { file.string($0, what: "name") }
                let latNode = pm.required("latitude", what: "the place")
                let lonNode = pm.required("longitude", what: "the place")
                let radiusNode = pm.required("radius_km", what: "the place")
                let lat = latNode.flatMap { file.number($0, what: "latitude") }
                let lon = lonNode.flatMap { file.number($0, what: "longitude") }
                let radius = radiusNode.flatMap { file.number($0, what: "radius_km") }
                pm.rejectUnknown(known: ConfigKeys.watchPlace, what: "a place of watches.places")
                if let lat, !(-90...90).contains(lat) { file.error(latNode, "latitude must be between -90 and 90") }
                if let lon, !(-180...180).contains(lon) {
                    file.error(lonNode, "longitude must be between -180 and 180")
                }
                if let radius, !(radius > 0 && radius <= 20_000) {
                    file.error(radiusNode, "radius_km must be from 0 to 20000")
                }
                if let name, let lat, let lon, let radius, (-90...90).contains(lat), (-180...180).contains(lon),
                    radius > 0 && radius <= 20_000
                {
                    watches.places.append(WatchPlace(name: name, latitude: lat, longitude: lon, radiusKm: radius))
                }
            }
        }
        if let cn = m.value("channels"), var cm = file.map(cn, what: "watches.channels") {
            for (key, value) in cm.entries {
                guard let receiver = file.string(value, what: "watches.channels.\(key)") else { continue }
                guard key.split(separator: ":").count == 2 else {
                    file.error(
                        value,
                        "watches.channels: \"\(String(key.prefix(60)))\" must be PLATFORM:CHANNEL_ID, like slack:C0123")
                    continue
                }
                watches.channels[key] = receiver
                references.append(
                    (receiver, file.path, value.mark?.line ?? 1, value.mark?.column ?? 1, "watches.channels"))
            }
            cm.markAllUsed()
        }
        if let dn = m.value("direct"), var dm = file.map(dn, what: "watches.direct") {
            for (platform, value) in dm.entries {
                guard let name = file.string(value, what: "watches.direct.\(platform)") else { continue }
                guard DirectReceiver.platforms.contains(platform) else {
                    file.error(
                        value,
                        "watches.direct: unknown platform \"\(String(platform.prefix(40)))\" (platforms are \(DirectReceiver.platforms.joined(separator: ", ")))"
                    )
                    continue
                }
                if let receiver = receiver(named: name) {
                    if let problem = Self.directProblem(receiver, platform: platform) {
                        file.error(value, "watches.direct.\(platform): receiver \"\(name)\" \(problem)")
                        continue
                    }
                } else {
                    references.append(
                        (name, file.path, value.mark?.line ?? 1, value.mark?.column ?? 1, "watches.direct.\(platform)"))
                }
                watches.direct[platform] = name
            }
            dm.markAllUsed()
        }
        m.rejectUnknown(known: ConfigKeys.watches, what: "watches")
    }
}

extension Config {
    /// Why `receiver` cannot carry `platform`'s direct messages (nil: it can): Slack's and
    /// Mattermost's need a receiver of that preset posting through the platform's API with a bot
    /// token (an incoming webhook posts to one channel only); Telegram's a `type: telegram` receiver.
    static func directProblem(_ receiver: Receiver, platform: String) -> String? {
        switch (platform, receiver) {
        case ("slack", .webhook(let w)) where w.preset == .slack,
            ("mattermost", .webhook(let w)) where w.preset == .mattermost:
            return w.botToken == nil
                ? "has no bot_token: direct messages go through the platform's API, not an incoming webhook" : nil
        case ("telegram", .telegram):
            return nil
        case ("telegram", _):
            return "is not a telegram receiver"
        default:
            return "is not a \(platform) receiver (preset: \(platform) with a bot_token)"
        }
    }
}
