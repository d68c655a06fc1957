import KlaxonCore

/// What a backend does for an evaluation: reads that plan it, and transactions that each carry out
/// one slice. Every method is one read or one transaction, and a backend writes only its SQL, binds
/// and decoding: the order of the work, the slicing, yielding and handoff (`evaluate`), the step loop
/// (`ReadingsStep`, `QuietStep`), the event rules' rounds (`EventRounds.QuakeRound`, `TripRound`:
/// what to read, then what to write) and what is logged (`TransitionLog`) are written once, here.
/// The methods are generic over the planner: a transition is planned by a direct call.
public protocol EvaluationBackend: Sendable {
    /// The last `ingest_log` entry evaluated, and the newest one now.
    func evaluationRange() async throws -> (cursor: Int64, top: Int64)
    /// The series with log entries in `(after, through]`, in series order: how many readings came for
    /// each (new or revised, suspect ones not counted) and how many were suspect.
    func changedSeries(after: Int64, through: Int64) async throws -> [(series: ChangedSeries, suspect: Int)]
    /// Every series, in series order (`count` 0).
    func allSeries() async throws -> [ChangedSeries]
    /// One transaction: loads what `ReadingsStep` asks for, runs it, and writes what it made (alert
    /// states, the transitions through `TransitionLog`, their outbox rows, claimed for `claim` where it
    /// takes them) and, when every series finished and `cursor` is given, the cursor.
    func evaluateReadings<P: TransitionPlanner>(
        _ series: [ChangedSeries], _ e: Evaluation<P>, cursor: Int64?, claim: QueueClaim?
    ) async throws -> ReadingsSlice
    /// One transaction: lets time pass to `e.now` for quiet series (`QuietStep`).
    func advanceQuiet<P: TransitionPlanner>(_ series: [ChangedSeries], _ e: Evaluation<P>) async throws -> [Logged]
    /// One transaction: quake rules over at most `EventRounds.quakeSlice` event versions stored since
    /// the last evaluation (`EventRounds.QuakeRound`); returns whether more wait.
    func evaluateQuakes<P: TransitionPlanner>(_ e: Evaluation<P>) async throws -> (logged: [Logged], more: Bool)
    /// One transaction: trip-packing rules over every trip that has not ended (`EventRounds.TripRound`).
    func evaluateTrips<P: TransitionPlanner>(_ e: Evaluation<P>) async throws -> [Logged]
    /// One transaction: the forecast rules over every series with a stored forecast
    /// (`EventRounds.ForecastRound`): its latest issuance and its newest observed value.
    func evaluateForecasts<P: TransitionPlanner>(_ e: Evaluation<P>) async throws -> [Logged]
    /// Gives claimed rows back (the dispatcher stopped before it took them).
    func release(_ batches: [OutboxBatch]) async throws
    /// One transaction: decides every `held` row (`HeldRow.send`): due at `now` (ms), or skipped.
    /// Returns how many were queued to be sent.
    func settleHeld(now: Int64) async throws -> Int
}

extension EvaluationBackend {
    /// Evaluates what arrived since the last evaluation (readings, quake versions, trips' weather),
    /// then lets time pass to `now` (stale checks). Suspect readings (`Plausibility`) are skipped: they
    /// neither fire nor resolve an alert, nor count as data for a stale check.
    ///
    /// The work runs in slices of at most `sliceReadings` readings (or `sliceSeries` quiet series),
    /// each one transaction holding the alert states it moved, the transitions it logged, their
    /// outbox rows and — in the last slice — the cursor. A crash leaves whole slices; evaluating
    /// again steps nothing twice (an alert's state knows the last reading it saw), so no transition
    /// is logged twice. The first slice is short, so the first notifications go out while the rest is
    /// evaluated; each slice's rows due now are handed to this process's dispatcher (`observer`) as
    /// it commits; between slices the task yields, so other writers (the dispatcher, a push) get their
    /// turn. `observer` hears of every transaction that logged transitions as it commits.
    public func runEvaluation<P: TransitionPlanner, O: EvaluationObserver>(_ e: Evaluation<P>, observer: O)
        async throws -> EvaluationResult
    {
        var result = EvaluationResult()
        let (cursor, top) = try await evaluationRange()
        var touched: Set<Int64> = []
        if top > cursor {
            let rows = try await changedSeries(after: cursor, through: top)
            var queue = rows.map(\.series)
            touched = Set(queue.map(\.id))
            result.newReadings = queue.reduce(0) { $0 + $1.count }
            result.suspectReadings = rows.reduce(0) { $0 + $1.suspect }
            var index = 0
            var sliced = e
            sliced.sliceTransitions = max(1, e.sliceTransitions / 4)
            repeat {
                let part = Array(queue[index..<min(queue.count, index + e.sliceSeries)])
                let tail = index + part.count == queue.count
                let claim = observer.handoffRoom().map { QueueClaim($0) }
                let slice = try await evaluateReadings(part, sliced, cursor: tail ? top : nil, claim: claim)
                sliced.sliceTransitions = e.sliceTransitions
                try await handOff(claim?.batches ?? [], observer)
                result.lateReadings += slice.late
                if slice.done < part.count { queue[index + slice.done].stepped += slice.partial }
                result.add(slice.logged, e, observer)
                index += slice.done
                await Task.yield()
            } while index < queue.count
        }

        // Time passes for series that got no reading: stale checks, in slices of quiet series.
        let timeRules = e.engine.timeRules
        if !timeRules.isEmpty {
            let quiet = try await allSeries().filter { s in
                !touched.contains(s.id) && timeRules.contains(where: { $0.kind.watches(s.key) })
            }
            var index = 0
            while index < quiet.count {
                let part = Array(quiet[index..<min(quiet.count, index + e.sliceSeries)])
                result.add(try await advanceQuiet(part, e), e, observer)
                index += part.count
                await Task.yield()
            }
        }

        if !e.quakes.isEmpty {
            while true {
                let (logged, more) = try await evaluateQuakes(e)
                result.add(logged, e, observer)
                guard more else { break }
                await Task.yield()
            }
        }
        if !e.trips.isEmpty {
            result.add(try await evaluateTrips(e), e, observer)
        }
        if !e.forecasts.isEmpty {
            result.add(try await evaluateForecasts(e), e, observer)
        }
        // Caught up: what was held as too old is sent if it is the present and news to its receiver.
        if e.planner.routes, try await settleHeld(now: e.queuedAt) > 0 { observer.committed(transitions: 0) }
        result.transitions.sort { Transition.outputOrder($0.transition, $1.transition) }
        return result
    }

    /// Hands a committed slice's claims to the dispatcher, or gives them back if it has stopped.
    func handOff(_ claimed: [OutboxBatch], _ observer: some EvaluationObserver) async throws {
        guard !claimed.isEmpty else { return }
        if !observer.take(claimed) { try await release(claimed) }
    }
}

/// A series with readings to step.
public struct ChangedSeries: Sendable, Equatable {
    public var id: Int64
    public var key: SeriesKey
    public var unit: String?
    /// Readings that arrived for it (new or revised), suspect ones not counted.
    public var count: Int
    /// Readings earlier slices stepped of it.
    public var stepped: Int

    public init(id: Int64, key: SeriesKey, unit: String?, count: Int = 0, stepped: Int = 0) {
        self.id = id
        self.key = key
        self.unit = unit
        self.count = count
        self.stepped = stepped
    }

    /// From an `ingest_log` sum: `n` readings came, `x` of them suspect.
    public static func changed(id: Int64, key: SeriesKey, unit: String?, n: Int, x: Int) -> (
        series: ChangedSeries, suspect: Int
    ) {
        (ChangedSeries(id: id, key: key, unit: unit, count: max(0, n - x)), x)
    }
}

/// What one readings slice did.
public struct ReadingsSlice: Sendable {
    /// Series finished (stepped to their newest reading, then advanced to `now`).
    public var done = 0
    /// Readings stepped of the first unfinished series.
    public var partial = 0
    /// Readings of the finished series that were not newer than what their alerts had seen.
    public var late = 0
    public var logged: [Logged] = []

    public init() {}
}

/// A transition as logged: its id in the transition log, its message, and whether any receiver was queued.
public struct Logged: Sendable {
    public var transition: Transition
    public var message: String
    public var id: Int64
    public var routed: Bool
    /// The episode it belongs to (`TransitionLog.assign`).
    public var episode: Int64

    public init(transition: Transition, message: String, id: Int64, routed: Bool, episode: Int64? = nil) {
        self.transition = transition
        self.message = message
        self.id = id
        self.routed = routed
        self.episode = episode ?? id
    }
}

extension EvaluationResult {
    /// Counts a committed transaction's transitions (and tells `observer`).
    mutating func add<P: TransitionPlanner>(_ logged: [Logged], _ e: Evaluation<P>, _ observer: some EvaluationObserver)
    {
        transitionCount += logged.count
        let routes = e.planner.routes
        for l in logged {
            if e.keepTransitions { transitions.append((l.transition, l.message)) }
            if routes, !l.routed, l.transition.state != .resolved { unrouted.append(l.transition) }
        }
        if !logged.isEmpty { observer.committed(transitions: logged.count) }
    }
}
