/// How alerts reach receivers: routes match transitions and name receivers, with timing per route.
/// Pure values; the config loader builds them and the outbox writer consults them.
public struct Route: Sendable, Hashable {
    /// Every matcher must match the transition's `matchLabels` (rule, station, metric, severity, level, labels).
    public var matchers: [Matcher]
    public var receivers: [String]
    /// Labels whose values form a group: transitions of one group to one receiver are sent together.
    public var groupBy: [String]
    /// How long a new group waits to collect more alerts before its first notification.
    public var groupWait: Int64
    /// The least time between two notifications of one group.
    public var groupInterval: Int64
    /// Re-notify a still-firing alert after this long (nil: never).
    public var repeatInterval: Int64?
    public var sendResolved: Bool
    public var quietHours: QuietHours?
    /// Keep matching later routes after this one matched.
    public var `continue`: Bool
    /// An alert still firing and not acked this long after it was first queued also goes to
    /// `escalateTo` (nil: never).
    public var escalateAfter: Int64?
    public var escalateTo: String?
    /// Seconds: a transition whose data is older than this when it is logged is recorded but not
    /// sent as news (0: no limit). The configuration's default is an hour (`notify_max_age`).
    public var notifyMaxAge: Int64

    public init(
        matchers: [Matcher] = [], receivers: [String] = [], groupBy: [String] = ["rule", "station", "metric"],
        groupWait: Int64 = 0, groupInterval: Int64 = 0, repeatInterval: Int64? = nil, sendResolved: Bool = true,
        quietHours: QuietHours? = nil, continue: Bool = false, escalateAfter: Int64? = nil, escalateTo: String? = nil,
        notifyMaxAge: Int64 = 0
    ) {
        self.notifyMaxAge = notifyMaxAge
        self.escalateAfter = escalateAfter
        self.escalateTo = escalateTo
        self.matchers = matchers
        self.receivers = receivers
        self.groupBy = groupBy
        self.groupWait = groupWait
        self.groupInterval = groupInterval
        self.repeatInterval = repeatInterval
        self.sendResolved = sendResolved
        self.quietHours = quietHours
        self.continue = `continue`
    }

    public func matches(_ t: Transition) -> Bool {
        let labels = t.matchLabels
        return matchers.allSatisfy { $0.matches(labels) }
    }

    /// The group key of a transition under this route: `rule=x,station=y`.
    public func groupKey(_ t: Transition) -> String {
        let labels = t.matchLabels
        return groupBy.map { "\($0)=\(labels[$0] ?? "")" }.joined(separator: ",")
    }
}

/// One delivery a transition needs: a receiver, and the route whose timing applies.
public struct Delivery: Sendable, Hashable {
    public var receiver: String
    /// Index into `Routing.routes`, or nil for the defaults (a rule's `notify` with no matching route,
    /// or the default receiver).
    public var route: Int?
}

/// The routing tree: rule `notify` receivers, routes, and a default receiver.
public struct Routing: Sendable, Hashable {
    public var routes: [Route]
    public var defaultReceiver: String?
    /// Timing for deliveries no route governs.
    public var defaults: Route

    /// The label of a watch's transitions (`watch=12`): they go only to the watch's receiver.
    public static let watchLabel = "watch"

    public init(routes: [Route] = [], defaultReceiver: String? = nil, defaults: Route = Route()) {
        self.routes = routes
        self.defaultReceiver = defaultReceiver
        self.defaults = defaults
    }

    /// The receivers a transition goes to: those its rule names in `notify`, plus those of matching
    /// routes (the first match, and later ones while `continue` is set). With none, the default
    /// receiver. Each receiver once; a `resolved` transition skips routes with `send_resolved: false`.
    public func deliveries(for t: Transition, notify: [String]) -> [Delivery] {
        // A person's watch (issue 43): its own receiver only, never a team's route or the default
        // receiver, with the defaults' timing (its rule is its group).
        if t.labels[Self.watchLabel] != nil {
            guard t.state != .resolved || defaults.sendResolved else { return [] }
            var seen: Set<String> = []
            return notify.filter { seen.insert($0).inserted }.map { Delivery(receiver: $0, route: nil) }
        }
        var out: [Delivery] = []
        var seen: Set<String> = []
        var matched: [Int] = []
        for (i, route) in routes.enumerated() where route.matches(t) {
            matched.append(i)
            if !route.continue { break }
        }
        func add(_ receiver: String, _ route: Int?) {
            let r = route.map { routes[$0] } ?? defaults
            guard !seen.contains(receiver), t.state != .resolved || r.sendResolved else {
                seen.insert(receiver)
                return
            }
            seen.insert(receiver)
            out.append(Delivery(receiver: receiver, route: route))
        }
        // A rule's own receivers take the timing of the first matching route, if any.
        for receiver in notify { add(receiver, matched.first) }
        for i in matched { for receiver in routes[i].receivers { add(receiver, i) } }
        if seen.isEmpty, let d = defaultReceiver { add(d, nil) }
        return out
    }

    /// The route a queued row names. A row queued under a configuration with more routes than this
    /// one (the file was edited, the daemon restarted) gets the defaults, not a trap.
    public func route(_ index: Int?) -> Route {
        guard let index, routes.indices.contains(index) else { return defaults }
        return routes[index]
    }
}

/// A notification routing decided for a transition: who gets it, under which group, and the group's
/// timing. The store turns each into an outbox row whose due time follows the group's history.
public struct PlannedDelivery: Sendable, Hashable {
    public var receiver: String
    /// Index into `Routing.routes`, or nil for the defaults.
    public var route: Int?
    public var groupKey: String
    /// Seconds a new group waits to collect alerts.
    public var groupWait: Int64
    /// The least seconds between two notifications of one group.
    public var groupInterval: Int64
    /// Seconds: data older than this is recorded, not sent as news (0: no limit).
    public var maxAge: Int64

    public init(
        receiver: String, route: Int?, groupKey: String, groupWait: Int64 = 0, groupInterval: Int64 = 0,
        maxAge: Int64 = 0
    ) {
        self.receiver = receiver
        self.route = route
        self.groupKey = groupKey
        self.groupWait = groupWait
        self.groupInterval = groupInterval
        self.maxAge = maxAge
    }

    /// Whether a transition's data is too old to be sent as news when logged at `now` (seconds).
    public func isStale(_ t: Transition, now: Int64) -> Bool {
        maxAge > 0 && now.subtractingClamped(t.at) > maxAge
    }
}

extension Routing {
    /// The deliveries of a transition with their groups and timing: the whole routing decision,
    /// made before the store is touched.
    public func plan(for t: Transition, notify: [String]) -> [PlannedDelivery] {
        deliveries(for: t, notify: notify).map { d in
            let r = route(d.route)
            return PlannedDelivery(
                receiver: d.receiver, route: d.route, groupKey: r.groupKey(t), groupWait: r.groupWait,
                groupInterval: r.groupInterval, maxAge: r.notifyMaxAge)
        }
    }
}

extension Routing {
    /// The deliveries a resolve owes beyond `plan(for:notify:)`: one to each receiver of `heardBy`
    /// (those that heard the alert firing) to which the routing no longer sends the alert at all
    /// (a reload changed or removed its route, or the rule's `notify`; a route that matched the
    /// firing's level and not the resolve's). Each goes with the defaults' group and timing. A
    /// receiver the alert is still routed to gets none here: its route's `send_resolved` decides.
    public func resolvePlan(for t: Transition, notify: [String], heardBy receivers: [String]) -> [PlannedDelivery] {
        guard t.state == .resolved, !receivers.isEmpty else { return [] }
        // Routed as a firing with the resolve's labels: `deliveries` leaves out a resolve's receivers
        // on routes without `send_resolved`, which are routed the alert all the same.
        var firing = t
        firing.state = .firing
        let routed = Set(deliveries(for: firing, notify: notify).map(\.receiver))
        return Set(receivers).subtracting(routed).sorted().map { receiver in
            PlannedDelivery(
                receiver: receiver, route: nil, groupKey: defaults.groupKey(t), groupWait: defaults.groupWait,
                groupInterval: defaults.groupInterval, maxAge: defaults.notifyMaxAge)
        }
    }
}
