import Foundation
import KlaxonCore
import KlaxonServer
import KlaxonStore

/// What the chat commands read and do: reports of gauges, air, quakes and trips, the firing alerts,
/// and the actions (ack, silence) a user who may act takes.
public typealias ChatStore =
    AlertReads & AlertActions & SeriesReads & StationReads & QuakeStore & TripStore & WeatherStore & WatchStore
    & AirForecastStore

/// The chat commands (`/klaxon gauge 02336910`): answers formatted for chat, an unknown command
/// answered with help, never a stack trace.
public struct ChatCommands: Sendable {
    public let store: any ChatStore
    public let config: Config
    public let rules: [Rule]

    public init(store: any ChatStore, config: Config, rules: [Rule]) {
        self.store = store
        self.config = config
        self.rules = rules
    }

    public static let help = """
        Klaxon commands:
        • `gauge ID` — a river gauge now (USGS id or NWS LID)
        • `aqi CITY` — a city's air quality
        • `quakes [near PLACE] [since 24h]` — recent earthquakes (PLACE: a watched place or LAT,LON)
        • `alerts` — what is firing, with ids to ack
        • `silence RULE [STATION] DURATION` — mute an alert (like `silence flood-stage 14211720 2h`)
        • `ack ALERT_ID` — stop reminders until the alert changes
        • `trip NAME` — your trip's packing list
        • `watch gauge ID minor`, `watch air PLACE poor`, `watch quakes near "PLACE" M5` — tell this channel (add `dm`: tell you)
        • `watching`, `unwatch N` — your watches
        • `help`
        """

    /// The owner a chat user acts as: `chat.users` by the platform's stable id (`TEAM:USER`, then
    /// `USER`), never by the display name, which anyone can choose. Nil for a user not listed.
    public func owner(for user: ChatEndpoints.User) -> String? {
        user.ids.lazy.compactMap { config.chatUsers[$0] }.first
    }

    /// Whether a chat user may ack and silence alerts (the commands and the buttons): anyone the
    /// platform vouches for without `chat.may_act`; with it, only a user it names by stable id
    /// (`TEAM:USER` or `USER`) or by the owner `chat.users` maps them to. An entry that is an owner
    /// name of `chat.users` names that owner only, never a user whose platform id is spelled the
    /// same (a Mattermost user with the id `alice` is not the owner `alice`).
    public func mayAct(_ user: ChatEndpoints.User) -> Bool {
        guard let allowed = config.chatMayAct else { return true }
        if let owner = owner(for: user), allowed.contains(owner) { return true }
        let owners = Set(config.chatUsers.values)
        return user.ids.contains { allowed.contains($0) && !owners.contains($0) }
    }

    /// What a user who may not act is told; nothing was changed.
    static let mayNotAct =
        "You may not ack or silence alerts from chat (`chat.may_act` does not name you): nothing was changed."

    /// A pressed button (Slack or Mattermost): the same checks and the same store calls as the
    /// `ack` and `silence` commands.
    public func act(_ press: ChatEndpoints.Press, now: Int64) async -> ChatEndpoints.Outcome {
        // A watch's buttons are its owner's, whoever `chat.may_act` names.
        if press.action == .unwatch || press.action == .mute24h { return await watchPress(press, now: now) }
        guard mayAct(press.user) else { return .refused(Self.mayNotAct) }
        do {
            switch press.action {
            case .unwatch, .mute24h: return await watchPress(press, now: now)
            case .ack: return try await ack(press.episode, user: press.user, now: now)
            case .silence1h:
                // The alert's rule at its station, as `silence RULE STATION 1h` would.
                guard let first = try await store.episode(press.episode)?.transitions.first?.transition else {
                    return .failed("No alert has id \(press.episode): nothing was changed.")
                }
                let s = try await addSilence(
                    rule: first.rule, station: first.station, duration: ChatAction.silenceSeconds, user: press.user,
                    now: now, comment: "from a chat button")
                return .done(
                    summary: "\(first.rule) at \(first.station) (#\(press.episode); silence \(s.id.prefix(8)))")
            }
        } catch let e as UserError {
            return .failed(e.message)
        } catch let e as SilenceError {
            return .failed("No silence was added: \(e.message).")
        } catch {
            return .failed("Sorry, that failed: \(error)")
        }
    }

    /// Acknowledges the firing alert `id` names: `done` with the alert, or `failed` when none fires.
    func ack(_ id: Int64, user: ChatEndpoints.User, now: Int64) async throws -> ChatEndpoints.Outcome {
        guard let acked = try await store.ackSayingWho(transitionID: id, by: user.label, at: now) else {
            return .failed("No firing alert has id \(id); `alerts` lists them.")
        }
        let summary = "\(acked.key.rule) at \(acked.key.station) (#\(id))"
        // The first ack of an episode holds: nothing changed, and the answer says whose it is.
        if let first = acked.earlier {
            return .failed(
                "\(summary) was already acked by \(first.by) at \(ChatText.clock(first.at)) UTC; unchanged.")
        }
        return .done(summary: summary)
    }

    /// Adds the silence of `rule` (at `station`) for `duration` seconds, recorded as `user`'s.
    func addSilence(
        rule: String, station: String?, duration: Int64, user: ChatEndpoints.User, now: Int64, comment: String
    ) async throws -> Silence {
        let s = try Silence.forAlert(
            rule: rule, station: station, duration: duration, now: now, comment: comment, createdBy: user.label)
        try await store.addSilence(s, now: now)
        return s
    }

    public func answer(_ user: ChatEndpoints.User, text: String, now: Int64 = Int64(Date().timeIntervalSince1970))
        async -> String
    {
        let words = text.split(whereSeparator: \.isWhitespace).map(String.init)
        guard let command = words.first?.lowercased() else { return Self.help }
        let args = Array(words.dropFirst())
        do {
            if WatchCommand.verbs.contains(command) { return try await watchAnswer(user, text: text, now: now) }
            switch command {
            case "help": return Self.help
            case "gauge":
                guard args.count == 1 else { return "usage: `gauge ID` (a USGS site number or an NWS LID)" }
                guard let r = try await GaugeReport.build(store: store, id: args[0], span: .days(1)) else {
                    return "I know no gauge \"\(args[0])\"."
                }
                return "```\n\(GaugeReport.text(r))\n```"
            case "aqi":
                guard !args.isEmpty else { return "usage: `aqi CITY`" }
                let city = args.joined(separator: " ")
                guard let r = try await AirReport.build(store: store, city: city, scale: .usEPA) else {
                    return "I have no AQI readings for \"\(city)\"."
                }
                return AirReport.text(r)
            case "quakes": return try await quakes(args, now: now)
            case "alerts": return try await alerts()
            case "silence": return try await silence(args, user: user, now: now)
            case "ack":
                guard args.count == 1, let id = Int64(args[0]) else { return "usage: `ack ALERT_ID` (see `alerts`)" }
                guard mayAct(user) else { return Self.mayNotAct }
                switch try await ack(id, user: user, now: now) {
                case .done(let summary): return "Acked \(summary): no reminders or escalation until it resolves."
                case .refused(let text), .failed(let text): return text
                }
            case "trip":
                guard args.count == 1 else { return "usage: `trip NAME`" }
                guard let owner = owner(for: user) else {
                    return
                        "Your \(user.platform) user \(user.user) is not linked to a trip owner (`chat.users` in the config)."
                }
                let actor = Trips.Actor(owner: owner)
                let trip = try await Trips.find(args[0], store: store, actor: actor)
                let (list, weather) = try await Trips.packing(
                    trip, store: store, air: try await store.airDays(for: trip))
                return "```\n\(Trips.text(trip, list: list, weather: weather))\n```"
            default:
                return "I don't know `\(command)`.\n" + Self.help
            }
        } catch let e as UserError {
            return e.message
        } catch let e as SilenceError {
            return "No silence was added: \(e.message)."
        } catch {
            return "Sorry, that failed: \(error)"
        }
    }

    func quakes(_ args: [String], now: Int64) async throws -> String {
        var filter = QuakeList.Filter(since: now - 86_400)
        var i = 0
        while i < args.count {
            switch args[i].lowercased() {
            case "near" where i + 1 < args.count:
                let place = args[i + 1]
                if let p = PlacePoint(key: place) {
                    filter.near = (p.latitude, p.longitude, 300)
                } else if let known = rules.compactMap({ $0.kind.quake }).flatMap(\.near).first(where: {
                    $0.name.lowercased() == place.lowercased()
                }) {
                    filter.near = (known.latitude, known.longitude, known.radiusKm)
                } else {
                    let names = rules.compactMap { $0.kind.quake }.flatMap(\.near).map(\.name)
                    return "I don't know the place \"\(place)\": use LAT,LON"
                        + (names.isEmpty ? "" : " or one of \(names.joined(separator: ", "))")
                }
                i += 2
            case "since" where i + 1 < args.count:
                guard let d = DurationText.parse(args[i + 1]) else { return "since takes a duration like 24h or 7d" }
                filter.since = now - d
                i += 2
            default:
                return "usage: `quakes [near PLACE] [since 24h]`"
            }
        }
        let rows = try await QuakeList.find(store: store, filter: filter)
        guard !rows.isEmpty else { return "No earthquakes stored for that." }
        return rows.prefix(15).map { "• " + QuakeList.text($0) }.joined(separator: "\n")
    }

    /// The most alerts one chat answer lists (a chat message is read by people, and platforms cap
    /// its size); the answer says how many more there are.
    static let alertsListed = 20

    /// ` (moderate since 09:43, firing since 07:28)`: when the current level was reached and when the
    /// episode began, in UTC.
    static func since(_ a: FiringAlert) -> String {
        let started = Timestamp.format(a.startedAt)
        guard let level = a.transition.level, a.transition.at != a.startedAt else {
            return " (firing since \(started))"
        }
        return " (\(level) since \(Timestamp.format(a.transition.at)), firing since \(started))"
    }

    func alerts() async throws -> String {
        // One page and the counts: bounded work however many fire.
        let page = try await store.firingAlerts(limit: Self.alertsListed, after: nil)
        guard !page.alerts.isEmpty else { return "Nothing is firing." }
        let total = try await store.firingAlertCounts().total
        var lines = page.alerts.map { a in
            var line =
                "• #\(a.episode) \(a.transition.severity.rawValue.uppercased()) \(a.key.rule) \(a.key.station): \(a.transition.summary)"
            line += Self.since(a)
            if let ack = a.ack { line += " (acked by \(ack.by))" }
            return line
        }
        let more = max(0, total - page.alerts.count)
        if more > 0 || page.next != nil {
            lines.append("…and \(max(more, 1)) more firing (\(total) in all): see the status site's /alerts.")
        }
        return lines.joined(separator: "\n")
    }

    func silence(_ args: [String], user: ChatEndpoints.User, now: Int64) async throws -> String {
        guard args.count == 2 || args.count == 3, let duration = DurationText.parse(args.last!), duration > 0 else {
            return "usage: `silence RULE [STATION] DURATION` (like `silence flood-stage 14211720 2h`)"
        }
        guard mayAct(user) else { return Self.mayNotAct }
        let s = try await addSilence(
            rule: args[0], station: args.count == 3 ? args[1] : nil, duration: duration, user: user, now: now,
            comment: "from chat")
        return
            "Silenced \(args.dropLast().joined(separator: " ")) for \(DurationText.format(duration)) (id \(s.id.prefix(8)))."
    }
}
