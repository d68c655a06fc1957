import KlaxonCore

/// What becomes of a transition, decided before the store is touched: its annotations, its message
/// and where it goes. Pure: the same transition is planned the same way, so a backend may plan a
/// transaction's transitions in any order (`TransitionLog` plans them once, in output order).
///
/// The app's planner renders the rules' templates and routes by the config (`RulePlanner`); a
/// removed rule's resolves go where its firing went. Evaluation is generic over the planner, so a
/// transition is planned by a direct call, not through a closure or an existential.
public protocol TransitionPlanner: Sendable {
    /// Whether transitions are routed at all. False: they are recorded and nothing is queued (no
    /// outbox rows, no held rows let go, no transition counted as unrouted).
    var routes: Bool { get }
    /// Plans `t`: sets the annotations its rule renders for it (`runbook_url` among them; the
    /// transition's own are kept when the rule renders none), then gives its message and its
    /// deliveries (none when `routes` is false).
    func plan(_ t: inout Transition) -> TransitionPlan
    /// The resolve contract (`TransitionLog.routeResolves`): where resolve `t` goes beyond its
    /// `plan`, given the receivers that heard its alert firing and that the plan leaves out (a reload
    /// changed or removed their route). None by default.
    func resolvePlan(_ t: Transition, heardBy: [String]) -> [PlannedDelivery]
}

extension TransitionPlanner {
    public func resolvePlan(_ t: Transition, heardBy: [String]) -> [PlannedDelivery] { [] }
}

/// A transition's message and planned deliveries.
public struct TransitionPlan: Sendable {
    public var message: String
    public var deliveries: [PlannedDelivery]

    public init(message: String, deliveries: [PlannedDelivery] = []) {
        self.message = message
        self.deliveries = deliveries
    }
}

/// A planner made of functions, for tests and one-off tools: `render` gives the message, `annotate`
/// the annotations, `route` the deliveries (nil: record only). The daemon and `klaxon evaluate` plan
/// with a value that holds no closures (`RulePlanner`).
public struct ClosurePlanner: TransitionPlanner {
    public var render: @Sendable (Transition) -> String
    public var annotate: (@Sendable (Transition) -> [String: String])?
    public var route: (@Sendable (Transition) -> [PlannedDelivery])?
    /// `resolvePlan`: where a resolve goes beyond `route` (nil: nowhere).
    public var routeResolve: (@Sendable (Transition, _ heardBy: [String]) -> [PlannedDelivery])?

    public init(
        render: @escaping @Sendable (Transition) -> String,
        annotate: (@Sendable (Transition) -> [String: String])? = nil,
        route: (@Sendable (Transition) -> [PlannedDelivery])? = nil,
        routeResolve: (@Sendable (Transition, _ heardBy: [String]) -> [PlannedDelivery])? = nil
    ) {
        self.render = render
        self.annotate = annotate
        self.route = route
        self.routeResolve = routeResolve
    }

    public func resolvePlan(_ t: Transition, heardBy: [String]) -> [PlannedDelivery] {
        routeResolve?(t, heardBy) ?? []
    }

    public var routes: Bool { route != nil }

    public func plan(_ t: inout Transition) -> TransitionPlan {
        if let annotations = annotate?(t), !annotations.isEmpty { t.annotations = annotations }
        return TransitionPlan(message: render(t), deliveries: route?(t) ?? [])
    }
}

extension Evaluation where Planner == ClosurePlanner {
    /// An evaluation whose transitions are planned by functions (`ClosurePlanner`).
    public init(
        engine: RuleEngine, quakes: QuakeRunner, trips: TripRunner, now: Int64, queuedAt: Int64,
        render: @escaping @Sendable (Transition) -> String,
        route: (@Sendable (Transition) -> [PlannedDelivery])? = nil, sliceReadings: Int = 50_000,
        sliceSeries: Int = 2_000, sliceTransitions: Int = 1_000
    ) {
        self.init(
            engine: engine, quakes: quakes, trips: trips, now: now, queuedAt: queuedAt,
            planner: ClosurePlanner(render: render, route: route), sliceReadings: sliceReadings,
            sliceSeries: sliceSeries, sliceTransitions: sliceTransitions)
    }
}

/// Who hears of an evaluation as its transactions commit: this process's dispatcher, woken for
/// the notifications queued and handed the rows each slice claimed for it (`Dispatcher`). Passed
/// beside the `Evaluation`, never stored in it; asked once per transaction, never per transition.
public protocol EvaluationObserver: Sendable {
    /// A transaction that logged `transitions` transitions committed; 0 when held rows were let go
    /// to be sent (`settleHeld`).
    func committed(transitions: Int)
    /// How many rows this process's dispatcher takes now, and on what terms: each readings slice
    /// claims them for it in the slice's own transaction (`QueueClaim`). Nil when it takes none (not
    /// running, or stopping).
    func handoffRoom() -> HandoffRoom?
    /// Takes a committed slice's claims; false when the dispatcher stopped meanwhile (the
    /// evaluation gives them back).
    func take(_ batches: [OutboxBatch]) -> Bool
}

extension EvaluationObserver {
    public func committed(transitions: Int) {}
    public func handoffRoom() -> HandoffRoom? { nil }
    public func take(_ batches: [OutboxBatch]) -> Bool { false }
}

/// Nobody hears: nothing is woken, nothing handed over.
public struct NoObserver: EvaluationObserver {
    public init() {}
}

/// An observer made of functions, for tests.
public struct ClosureObserver: EvaluationObserver {
    public var onCommit: (@Sendable (Int) -> Void)?
    public var room: (@Sendable () -> HandoffRoom?)?
    public var onTake: (@Sendable ([OutboxBatch]) -> Bool)?

    public init(
        committed: (@Sendable (Int) -> Void)? = nil, room: (@Sendable () -> HandoffRoom?)? = nil,
        take: (@Sendable ([OutboxBatch]) -> Bool)? = nil
    ) {
        self.onCommit = committed
        self.room = room
        self.onTake = take
    }

    public func committed(transitions: Int) { onCommit?(transitions) }
    public func handoffRoom() -> HandoffRoom? { room?() }
    public func take(_ batches: [OutboxBatch]) -> Bool { onTake?(batches) ?? false }
}

/// What a dispatcher takes from a slice, claimed as the slice queues it: the claim follows the
/// dispatcher's rules (the order check per alert and receiver, batches by group, its lease and
/// instance), so a crash or a stop gives the rows back as for any claim.
public struct HandoffRoom: Sendable, Equatable {
    /// The claiming instance (registered before it offers room).
    public var instance: String
    /// How long a claim lasts (ms).
    public var lease: Int64
    /// The claimer's clock now (ms).
    public var now: Int64
    /// How many rows it takes.
    public var limit: Int
    /// The receivers whose lanes are full.
    public var excluding: [String]

    public init(instance: String, lease: Int64, now: Int64, limit: Int, excluding: [String]) {
        self.instance = instance
        self.lease = lease
        self.now = now
        self.limit = limit
        self.excluding = excluding
    }
}
