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
            let quiet = try await store.watchQuietHours(owner: owner.key).map { Self.quietLine($0) }
            guard !mine.isEmpty else {
                return "You have no watches. " + Self.watchHint + (quiet.map { "\n" + $0 } ?? "")
            }
            var lines = mine.prefix(Self.watchesListed).map { w in
                "\(w.number). \(w.target.words) → \(w.destination.words)"
            }
            if mine.count > Self.watchesListed {
                lines.append("…and \(mine.count - Self.watchesListed) more (`klaxon watches` lists them all).")
            }
            if let quiet { lines.append(quiet) }
            return "Your watches:\n" + lines.joined(separator: "\n")
        case .success(.unwatch(let number)):
            guard let w = try await store.removeWatch(owner: owner.key, number: number) else {
                return "You have no watch \(number); `watching` lists yours."
            }
            return "Stopped watch \(w.number): \(w.target.words)."
        case .success(.quiet(let quiet)):
            try await store.setWatchQuietHours(owner: owner.key, quiet, now: now)
            return
                "Quiet hours \(quiet.words): your watches' alerts in that window wait until it ends, and come then (nothing is dropped). `quiet off` ends them."
        case .success(.quietOff):
            guard try await store.setWatchQuietHours(owner: owner.key, nil, now: now) != nil else {
                return "You have no quiet hours of your own."
            }
            return "Quiet hours off: your watches' alerts come at any hour."
        }
    }

    /// The line `watching` shows a person's quiet hours with.
    static func quietLine(_ quiet: WatchQuietHours) -> String {
        "Quiet hours: \(quiet.words) (`quiet off` ends them)."
    }

    static let watchHint = "Try `watch gauge ID minor` (`help` lists the commands)."

    /// Whether `user` is the person `owner` names: the same platform and stable id (`TEAM:USER`,
    /// or `USER` when one of the requests named no team).
    static func isOwner(_ user: ChatEndpoints.User, of owner: WatchOwner) -> Bool {
        guard owner.platform == user.platform else { return false }
        if user.ids.contains(owner.id) { return true }
        return user.team == nil && owner.id.split(separator: ":").last.map(String.init) == user.user
    }

    /// A press of a watch's *Stop watching* or *Mute 24h* (the alert's episode names the watch by
    /// its `watch` label): only the watch's owner may, and the same store calls as `unwatch N` and
    /// a silence of the watch's rule for a day.
    func watchPress(_ press: ChatEndpoints.Press, now: Int64) async -> ChatEndpoints.Outcome {
        do {
            guard let first = try await store.episode(press.episode)?.transitions.first?.transition,
                let id = first.labels[Watch.label].flatMap({ Int64($0) }), let ownerKey = first.labels["watch_owner"]
            else { return .failed("No watch's alert has id \(press.episode): nothing was changed.") }
            guard let watch = try await store.watches(owner: ownerKey).first(where: { $0.id == id }) else {
                return .failed("That watch was stopped already: nothing was changed.")
            }
            guard Self.isOwner(press.user, of: watch.owner) else {
                return .refused("Only the person who made this watch may stop or mute it: nothing was changed.")
            }
            if press.action == .unwatch {
                guard let w = try await store.removeWatch(owner: watch.owner.key, number: watch.number) else {
                    return .failed("That watch was stopped already: nothing was changed.")
                }
                return .done(summary: "watch \(w.number), \(w.target.words)")
            }
            let s = try await addSilence(
                rule: watch.ruleName, station: nil, duration: ChatAction.muteSeconds, user: press.user, now: now,
                comment: "a watch's Mute 24h button")
            return .done(summary: "watch \(watch.number), \(watch.target.words) (silence \(s.id.prefix(8)))")
        } catch let e as SilenceError {
            return .failed("Nothing was muted: \(e.message).")
        } catch {
            return .failed("Sorry, that failed: \(error)")
        }
    }
}
