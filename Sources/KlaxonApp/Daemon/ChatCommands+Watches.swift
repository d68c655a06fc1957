import Foundation
import KlaxonCore
import KlaxonServer
import KlaxonStore

/// The watch verbs from chat (issue 43): `watch …`, `watching`, `unwatch N`, `quiet …`. Parsed by
/// `WatchCommand` against what the operator allows (`WatchWiring.catalog`); a watch posts to the
/// channel it was made in, which `watches.channels` must list.
extension ChatCommands {
    /// The most watches `watching` lists in one answer.
    static let watchesListed = 50

    /// Who a chat user is as a watch owner: the platform and its stable id (`T1:U024BE7LH`).
    static func watchOwner(_ user: ChatEndpoints.User) -> WatchOwner {
        WatchOwner(platform: user.platform, id: user.ids.first ?? user.user, name: user.name)
    }

    func watchAnswer(_ user: ChatEndpoints.User, text: String, now: Int64) async throws -> String {
        let wantsCatalog = text.split(whereSeparator: \.isWhitespace).first?.lowercased() == "watch"
        let catalog =
            wantsCatalog ? try await WatchWiring.catalog(store: store, config: config, rules: rules) : WatchCatalog()
        guard let parsed = WatchCommand.parse(text, catalog: catalog) else { return WatchCommand.usage }
        let owner = Self.watchOwner(user)
        switch parsed {
        case .failure(let problem):
            return problem.message
        case .success(.watch(let target, let direct)):
            let destination: WatchDestination
            if direct || user.direct {
                // To the person: their platform id, a direct message through `watches.direct`.
                guard config.watches.direct[user.platform] != nil else {
                    return
                        "Direct messages on \(user.platform) aren't set up here (`watches.direct` names no receiver for it). An operator can add one; without `dm`, a watch posts to the channel it is made in."
                }
                destination = .direct(platform: user.platform, user: user.user)
                guard WatchWiring.receiver(for: destination, config: config) != nil else {
                    return "I can't send direct messages to your \(user.platform) user id, so that watch was not kept."
                }
            } else {
                guard let channel = user.channel else {
                    return "I can't tell which channel this is, so a watch has nowhere to post."
                }
                destination = .channel(platform: user.platform, channel: channel)
                guard WatchWiring.receiver(for: destination, config: config) != nil else {
                    return
                        "Watches can't post in this channel: `watches.channels` does not list \(WatchText.shown(destination.key)). An operator can add it."
                        + (config.watches.direct[user.platform] != nil
                            ? " Add `dm` to the command for direct messages instead." : "")
                }
            }
            // A category the gauge has no stage for would never fire: say so now, not never.
            if case .gauge(let station, _, .category(let category)) = target {
                let ladder = try await store.floodCategories()[station]?.ladder(forMetric: WatchTarget.gaugeMetric)
                guard ladder?.contains(where: { $0.name == category }) == true else {
                    return
                        "Gauge \(station) has no NWS \(category) flood stage, so that watch would never fire; watch a stage instead (like `watch gauge \(station) 12.5ft`)."
                }
            }
            let limit = config.watches.maxPerPerson
            let watch = Watch(owner: owner, target: target, destination: destination, createdAt: now)
            switch try await store.addWatch(watch, limit: limit) {
            case .added(let w):
                return
                    "Watch \(w.number): \(w.target.words), \(w.destination.isDirect ? "sent to you as direct messages" : "posted to \(w.destination.words)"). `watching` lists your watches; `unwatch \(w.number)` stops this one."
            case .duplicate(let w):
                return "You already have that watch (\(w.number): \(w.target.words))."
            case .full(let limit):
                return limit == 0
                    ? "Watches are turned off here (`watches.max_per_person` is 0)."
                    : "You have \(limit) watches, the most one person may hold (`watches.max_per_person`): `unwatch N` one first."
            }
        case .success(.watching):
            let mine = try await store.watches(owner: owner.key)
            guard !mine.isEmpty else { return "You have no watches. " + Self.watchHint }
            var lines = mine.prefix(Self.watchesListed).map { w in
                "\(w.number). \(w.target.words) → \(w.destination.words)"
            }
            if mine.count > Self.watchesListed {
                lines.append("…and \(mine.count - Self.watchesListed) more (`klaxon watches` lists them all).")
            }
            return "Your watches:\n" + lines.joined(separator: "\n")
        case .success(.unwatch(let number)):
            guard let w = try await store.removeWatch(owner: owner.key, number: number) else {
                return "You have no watch \(number); `watching` lists yours."
            }
            return "Stopped watch \(w.number): \(w.target.words)."
        case .success(.quiet), .success(.quietOff):
            return
                "Quiet hours of your own are not kept yet: your watches follow the quiet hours of the route they are posted under."
        }
    }

    static let watchHint = "Try `watch gauge ID minor` (`help` lists the commands)."
}
