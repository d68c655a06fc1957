import KlaxonCore

/// Klaxon's persistence, shaped by the transactions the product needs, in roles: each consumer takes
/// the roles it uses (the dispatcher `DeliveryStore`, the status site `SiteReads &
/// AlertActions`), and only the composition root (where the daemon and the commands open the store and
/// wire their services) holds all of them (`Store`). Every method may suspend and none blocks its
/// caller's thread: async code (the daemon, the dispatcher, the HTTP server) awaits the store and the
/// cooperative pool stays free. The backends (`KlaxonSQLite`, `KlaxonPostgres`) implement every role;
/// what each requirement must do is what the conformance suite (`KlaxonStoreConformanceTests`) checks
/// of every backend.
///
/// A role is small (at most about ten requirements: `ArchitectureTests` holds it to twelve); what can
/// be computed from a role's own requirements (station metadata merged with gauges, the active
/// silences, the usual arguments) is an extension, written once, not a requirement each backend repeats.
/// The wider names (`ReadingStore`, `EventStore`, `AlertStore`, `OutboxStore`) are compositions of
/// the small roles and declare nothing of their own.
///
/// The consumers' compositions are declared here too (`AlertActions`) or by the consumer
/// (`SiteReads` in `KlaxonServer`): they are made of these roles only, so a backend never imports a
/// consumer and nothing here imports upward.
public protocol Store: ReadingStore, EventStore, AlertStore, SilenceStore, OutboxStore, RetentionStore, DutyStore,
    StoreProbe, NotificationHistory, CatchUpQueue, LivingMessageStore, WatchStore, BudgetStore
{}

/// Readings, their series and stations, and the sources that fetched them.
public protocol ReadingStore: ReadingIngest, SourceStates, SeriesReads, ReadingScans, StationReads, ForecastReads {}

/// Writing readings and stations: a source's batches, a push, `klaxon ingest`.
public protocol ReadingIngest: Sendable {
    /// A writer for bulk readings (ingest, push): batches, one transaction each. `source` names
    /// where they came from in `ingest_log` and `klaxon_readings_total{source}`: `api` for a push; nil
    /// (`klaxon ingest`) counts as `file`.
    func readingWriter(source: String?) throws -> any ReadingWriter
    @discardableResult
    func write(_ batch: SourceBatch, source: String?, cursor: String?, at now: Int64) async throws -> IngestStats
    func recordFailure(source: String, error: String, at now: Int64, notBefore: Int64?) async throws
    func upsert(station: StationRecord) async throws
}

/// How each source fares: its cursor, its last success and failure (the fetcher, `/readyz`, the site).
public protocol SourceStates: Sendable {
    func sourceState(_ source: String) async throws -> SourceStateRecord?
    func sourceStates() async throws -> [SourceStateRecord]
}

/// Reads of one series or a few: what pages, reports and charts show.
public protocol SeriesReads: Sendable {
    /// A number that grows whenever readings are stored (by any process): cheap to poll.
    func ingestMark() async throws -> Int64
    func series(station: String) async throws -> [(metric: String, unit: String?)]
    func latest(station: String, metric: String, at: Int64, includingSuspect: Bool) async throws -> StoredReading?
    func summary(station: String, metric: String, from: Int64, to: Int64) async throws -> SeriesSummary?
    func suspectReadings(station: String, metric: String, from: Int64, to: Int64, limit: Int) async throws
        -> (count: Int, newest: [StoredReading])
    func values(station: String, metric: String, from: Int64, to: Int64) async throws -> [(time: Int64, value: Double)]
    func latestTimes(metric: String?) async throws -> [SeriesKey: Int64]
    /// The newest reading (not suspect) of each series, newest first, at most `limit` (the status site).
    func newestReadings(limit: Int) async throws -> [StoredReading]
    /// The newest `limit` readings (not suspect) of a series, oldest first.
    func lastValues(station: String, metric: String, limit: Int) async throws -> [(time: Int64, value: Double)]
}

/// Reads of the whole history: export, dry runs, tools.
public protocol ReadingScans: Sendable {
    func readings(station: String, metric: String) async throws -> [StoredReading]
    func readingCount() async throws -> Int
    func forEachReading(
        from: Int64?, to: Int64?, page: Int,
        _ body: (_ series: SeriesKey, _ unit: String?, _ readings: [(time: Int64, value: Double)]) throws -> Void
    ) async throws
}

/// Stations and NWS gauges as stored; the merged metadata (`stationInfos()`, `floodCategories()`) is
/// derived from them once, in the extension below (`StationMetadata`).
public protocol StationReads: Sendable {
    /// Every stored station.
    func stationRecords() async throws -> [StationRecord]
    func station(id: String) async throws -> StationRecord?
    func gauges() async throws -> [GaugeInfo]
    func gaugeFetchedAt(lid: String) async throws -> Int64?
    func resolveStation(_ typed: String) async throws -> String?
}

/// Events that are not series: quakes, and trips with their places' weather and air forecasts.
public protocol EventStore: QuakeStore, TripStore, WeatherStore, AirForecastStore {}

/// Earthquakes and their revisions.
public protocol QuakeStore: Sendable {
    @discardableResult
    func write(quakes: [QuakeEvent], at now: Int64) async throws -> QuakeWriteStats
    func quakes(from: Int64, to: Int64) async throws -> [StoredQuake]
    func quakeRevisions() async throws -> [(key: String, event: QuakeEvent)]
    func quakeRevisionCounts() async throws -> [String: Int]
    /// Events with origin time in `[from, to]` (ms) at or above `minMagnitude`, newest first, at
    /// most `limit` (clamped to 1…10,000), with their count and the revision counts of those listed.
    func quakes(from: Int64, to: Int64, minMagnitude: Double?, limit: Int) async throws -> QuakePage
}

/// Saved trips and what their rules said of them.
public protocol TripStore: Sendable {
    func save(trip: Trip, at now: Int64, replace: Bool) async throws
    func trip(owner: String, name: String) async throws -> Trip?
    func trips(owner: String?) async throws -> [Trip]
    @discardableResult
    func removeTrip(owner: String, name: String) async throws -> Bool
    func tripAnnouncement(rule: String, owner: String, name: String) async throws -> String?
    /// A trip's packing-list history: the `packing` transitions its trip-packing rules logged
    /// (list ready, list changed), newest first, at most `limit`.
    func tripHistory(owner: String, name: String, limit: Int) async throws -> [TransitionRecord]
}

/// Places' forecasts and weather alerts.
public protocol WeatherStore: Sendable {
    @discardableResult
    func write(weather: [DayWeather], alerts: [PlaceAlert]) async throws -> Int
    func weather(for trip: Trip, radiusKm: Double) async throws -> [DayWeather]
    func alerts(for trip: Trip, radiusKm: Double) async throws -> [(stop: Int, alert: WeatherAlert)]
    func forecasts(place: String) async throws -> [DayWeather]
}

/// AirNow's air-quality forecasts, by reporting area, date and pollutant: the latest issuance wins.
public protocol AirForecastStore: Sendable {
    /// Stores forecasts in one transaction. A forecast replaces the stored one of its reporting area
    /// (any case), date and pollutant only when issued the same day or later
    /// (`AirForecast.supersedes`): an issuance that arrives late never overwrites a newer one.
    /// Returns how many were stored (new, or changed).
    @discardableResult
    func write(airForecasts: [AirForecast]) async throws -> Int
    /// A reporting area's forecasts (its name in any case), by date then pollutant.
    func airForecasts(area: String) async throws -> [AirForecast]
    /// Every area's forecasts for the dates `from` through `to` (`YYYY-MM-DD`), by area, date, pollutant.
    func airForecasts(from: String, to: String) async throws -> [AirForecast]
}

extension AirForecastStore {
    /// A trip's days with the forecast of the reporting area serving each (`AirForecast.tripDays`).
    public func airDays(for trip: Trip, radiusKm: Double = EventRounds.airRadiusKm) async throws -> [TripAirDay] {
        let days = Packer.days(of: trip)
        guard let first = days.first?.date, let last = days.last?.date else { return [] }
        return AirForecast.tripDays(trip, forecasts: try await airForecasts(from: first, to: last), radiusKm: radiusKm)
    }
}

/// Alert states and the transition log: evaluation, acks, firing alerts.
public protocol AlertStore: EvaluationStore, AlertReads, AckStore, ReplayGuard {}

/// Evaluation's writes: alert states, the transition log and the outbox rows it queues.
public protocol EvaluationStore: Sendable {
    /// Records an evaluation: alert states, the transition log, outbox rows and cursors, in bounded
    /// transactions (`EvaluationBackend.runEvaluation`: every backend's evaluation is that one).
    /// `observer` hears of each transaction as it commits, and takes the rows claimed for it.
    func evaluate<P: TransitionPlanner, O: EvaluationObserver>(_ e: Evaluation<P>, observer: O) async throws
        -> EvaluationResult
    /// Resolves every firing alert of `rules` (rules a reload removed), in one transaction that takes
    /// the evaluation's turn: the alert states (inactive), the resolves logged with their reason
    /// (`RemovedRules`) and their outbox rows as `e.planner` plans them. An alert resolved already
    /// (by another daemon's reload) is not resolved again.
    func resolveRemoved<P: TransitionPlanner>(rules: Set<String>, _ e: Evaluation<P>) async throws -> [Logged]
    /// Logs transitions made outside evaluation and queues their deliveries (`now` in ms).
    func record(_ transitions: [(transition: Transition, message: String, deliveries: [PlannedDelivery])], now: Int64)
        async throws
}

extension EvaluationStore {
    /// Evaluates with nobody to hear of it (`NoObserver`): `klaxon evaluate`, replays, tests.
    public func evaluate<P: TransitionPlanner>(_ e: Evaluation<P>) async throws -> EvaluationResult {
        try await evaluate(e, observer: NoObserver())
    }
}

/// Reads of alert states, firing alerts and the transition log.
public protocol AlertReads: Sendable {
    func alertStates() async throws -> [AlertKey: AlertState]
    func transitions() async throws -> [TransitionRecord]
    /// The newest `limit` transitions, newest first (the status site; `transitions()` reads the whole log).
    func recentTransitions(limit: Int) async throws -> [TransitionRecord]
    /// Every firing alert (the repeat scheduler). Lists that answer requests use the paged
    /// `firingAlerts(limit:after:)` and `firingAlertCounts()`: this one grows with the firing set.
    func firingAlerts() async throws -> [(key: AlertKey, transitionID: Int64, transition: Transition)]
    /// A page of firing alerts with their acks, most severe then newest first, after `after`, at
    /// most `limit` (clamped to 1…10,000); `next` says where the following page starts.
    func firingAlerts(limit: Int, after: FiringCursor?) async throws -> FiringPage
    /// How many alerts are firing, by severity (an aggregate query).
    func firingAlertCounts() async throws -> FiringCounts
    /// How many alerts are pending, firing or acknowledged, by rule and state (`klaxon_alerts`):
    /// an aggregate over the active alerts only (a partial index) and the acks, never over inactive
    /// alert states or the transition log.
    func alertCounts() async throws -> [AlertCount]
    /// The episode an id names (its own, or any of its transitions'), with its transitions and
    /// their notifications; nil when no transition has that id.
    func episode(_ id: Int64) async throws -> EpisodeHistory?
}

/// Acks: who acknowledged which firing alert.
public protocol AckStore: Sendable {
    /// Acknowledges the firing alert an id names (its episode's, or any of the episode's
    /// transitions'): no reminders or escalation until it resolves. The first ack of an episode holds:
    /// a second one changes nothing (`acks()` still names who acked first).
    @discardableResult
    func ack(transitionID: Int64, by: String, at now: Int64) async throws -> (key: AlertKey, transition: Transition)?
    func acks() async throws -> [AlertKey: Ack]
}

/// The chat replay guard: a signed request or a button's nonce is used once, across restarts and daemons.
public protocol ReplayGuard: Sendable {
    /// Takes `key` (a chat request's signature, a button's nonce) for its first use, remembered in
    /// the store until `expires` (seconds): true the first time, false while an earlier use is
    /// remembered, so a replay is refused after a restart and on every daemon sharing the store.
    /// Expired keys are pruned a few at a time as new ones come.
    func claimOnce(key: String, expires: Int64, now: Int64) async throws -> Bool
    /// Forgets `key` (the action it carried did nothing), so that it may be used again.
    func releaseOnce(key: String) async throws
}

/// What a person does to alerts, through every door: ack (`ackSayingWho`), silence, expire and
/// replace a silence. Shared by the API, the Alertmanager API, the status site, chat and the CLI. Each
/// action names who acts (`by`, `createdBy`); who may act is each door's to decide before it calls
/// (the API's token, the site's session, chat's `chat_may_act`, the local user of the CLI).
public typealias AlertActions = AckStore & SilenceStore

/// Silences.
public protocol SilenceStore: Sendable {
    /// A page of silences (by start, then id) and how many there are: those not ended by `now`,
    /// or all with `includeExpired`.
    func silences(now: Int64, includeExpired: Bool, limit: Int, after: SilenceCursor?) async throws -> SilencePage
    func addSilence(_ s: Silence, now: Int64) async throws
    func silences(now: Int64, includeExpired: Bool) async throws -> [Silence]
    func expireSilence(id: String, now: Int64) async throws -> ExpireOutcome
    /// Ends the silence `id` (a full id) now and adds `new`, in one transaction, only if it has not
    /// ended: of several replacements of one silence, one succeeds and the others change nothing, so
    /// one silence is left active and an id a replacement returned is the one that mutes.
    func replaceSilence(id: String, with new: Silence, now: Int64) async throws -> ReplaceOutcome
}

/// The durable outbox and the instances that claim from it.
public protocol OutboxStore: OutboxQueue, RepeatQueue, OutboxAdmin, ClaimLeases {}

/// Claiming due rows and recording what became of them (the dispatcher).
public protocol OutboxQueue: Sendable {
    /// Claims due rows: pending rows whose time has come and sending rows whose lease ran out, per
    /// alert and receiver only the oldest unsent, batched by receiver, route and group
    /// (`OutboxBatch.group`), leased until `now + lease`; none of the receivers in `excluding` (a dispatcher
    /// whose queue for a receiver is full takes no more of its rows, so a receiver that hangs cannot
    /// fill the dispatcher and hold up the others).
    func claim(now: Int64, lease: Int64, limit: Int, instance: String?, excluding: [String]) async throws
        -> [OutboxBatch]
    func release(_ batches: [OutboxBatch]) async throws
    func apply(_ outcomes: [OutboxOutcome]) async throws
    func nextDue() async throws -> Int64?
}

/// What the repeat and escalation schedulers ask of the outbox, and the rows they queue.
public protocol RepeatQueue: Sendable {
    func lastNotified(alert: String, receiver: String) async throws -> (sentAt: Int64?, queued: Bool)
    func firstQueued(alert: String, transitionID: Int64) async throws -> Int64?
    func hasNotification(alert: String, receiver: String, transitionID: Int64) async throws -> Bool
    func enqueueRepeat(
        transitionID: Int64, transition: Transition, receiver: String, route: Int?, groupKey: String, now: Int64
    ) async throws
}

/// What the catch-up scheduler asks of the outbox (`CatchUps`): the news silences and quiet hours
/// kept from receivers.
public protocol CatchUpQueue: Sendable {
    /// Of the alerts `alerts` (`OutboxRecord.alertKey`), each alert and receiver whose newest row was
    /// `muted` or `dropped`, with what that row said and what the receiver last heard
    /// (`EpisodeSQL.missed`).
    func missed(alerts: [String]) async throws -> [MissedNews]
}

/// The outbox as an operator sees it (`klaxon outbox`, metrics).
public protocol OutboxAdmin: Sendable {
    func outbox(state: OutboxRecord.State?, limit: Int) async throws -> [OutboxRecord]
    func outboxCounts() async throws -> [OutboxRecord.State: Int]
    func retryOutbox(id: String, now: Int64) async throws -> Bool
}

/// The instances that claim from the outbox, and their leases.
public protocol ClaimLeases: Sendable {
    func register(_ instance: InstanceRecord) async throws
    /// Extends to `until` the leases of the rows `ids` that `instance` is still sending (only
    /// these: a row of a claim whose answer was lost, which the instance does not know it holds,
    /// must run out and be claimed again), and records the instance's heartbeat. Returns the rows
    /// renewed.
    @discardableResult
    func renewLeases(instance: String, ids: [String], until: Int64, now: Int64) async throws -> Int
    func claimHolders(excluding instance: String) async throws -> [InstanceRecord]
    @discardableResult
    func releaseClaims(of instances: [String]) async throws -> Int
}

/// Pruning old history.
public protocol RetentionStore: Sendable {
    /// How many rows a prune with this plan would remove now; removes nothing (`klaxon prune --dry-run`).
    func prunable(_ plan: RetentionPlan) async throws -> PruneCounts
    /// One step of a prune pass: one short write transaction removing at most `plan.batch` rows.
    /// Never removes alert states, a firing alert's latest transition, an undelivered outbox row or
    /// its transition. Loop from `.start` until the cursor is done (`prune(_:between:)` does).
    func prune(_ plan: RetentionPlan, from cursor: PruneCursor) async throws -> (
        removed: PruneCounts, next: PruneCursor
    )
}

/// Duties, for several daemons on one database.
public protocol DutyStore: Sendable {
    /// Whether daemons on several machines may share this store, so that duties are contended
    /// (PostgreSQL); false for one machine's store (SQLite), where every duty is this process's.
    var sharesDuties: Bool { get }
    /// Runs `body` while this process holds `duty` (a source's polling, the evaluator), or returns
    /// nil at once when another process holds it: of all the processes sharing the store, at most one
    /// holds a duty at a time. On PostgreSQL a duty is a session advisory lock on a connection of its
    /// own, so it is free again as soon as its holder's connection ends (the holder died); if the
    /// holder loses it while `body` runs, `body` is cancelled and this throws `DutyLost`. SQLite is one
    /// machine's store: there every duty is this process's, and `body` just runs.
    func holding<T: Sendable>(duty: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T?
}

extension ReadingIngest {
    /// A writer whose readings count under source `file` (`klaxon ingest`, tools).
    public func readingWriter() throws -> any ReadingWriter { try readingWriter(source: nil) }
}

/// Where the store is and how it fares.
public protocol StoreProbe: Sendable {
    /// Where the store lives, for messages (a file path, a connection description).
    var path: String { get }
    func metrics() async throws -> StoreMetrics
    func isReachable() async -> Bool
    /// Whether the database file is still the one opened (SQLite; others: ok). Blocking: off the pool.
    func storeFile() -> StoreFileCheck
    /// A small real write, to learn whether writes work again after a failure (others: nothing).
    func probeWrite() async throws
}

/// The usual arguments.
extension ReadingIngest {
    @discardableResult
    public func write(_ batch: SourceBatch, source: String? = nil, cursor: String? = nil, at now: Int64) async throws
        -> IngestStats
    {
        try await write(batch, source: source, cursor: cursor, at: now)
    }
    public func recordFailure(source: String, error: String, at now: Int64) async throws {
        try await recordFailure(source: source, error: error, at: now, notBefore: nil)
    }
}

/// The usual arguments.
extension ReadingScans {
    public func forEachReading(
        from: Int64? = nil, to: Int64? = nil,
        _ body: (_ series: SeriesKey, _ unit: String?, _ readings: [(time: Int64, value: Double)]) throws -> Void
    ) async throws {
        try await forEachReading(from: from, to: to, page: 50_000, body)
    }
}

/// The usual arguments.
extension SeriesReads {
    /// The newest reading of a series that is not suspect.
    public func latest(station: String, metric: String) async throws -> StoredReading? {
        try await latest(station: station, metric: metric, at: .max, includingSuspect: false)
    }
    /// The newest reading of a series at or before `at` that is not suspect.
    public func latest(station: String, metric: String, at: Int64) async throws -> StoredReading? {
        try await latest(station: station, metric: metric, at: at, includingSuspect: false)
    }
    public func latestTimes() async throws -> [SeriesKey: Int64] { try await latestTimes(metric: nil) }
}

/// The usual arguments.
extension QuakeStore {
    public func quakes() async throws -> [StoredQuake] { try await quakes(from: .min, to: .max) }
}

/// The usual arguments.
extension TripStore {
    public func save(trip: Trip, at now: Int64) async throws { try await save(trip: trip, at: now, replace: false) }
}

/// The usual arguments.
extension WeatherStore {
    @discardableResult
    public func write(weather: [DayWeather]) async throws -> Int { try await write(weather: weather, alerts: []) }
    public func weather(for trip: Trip) async throws -> [DayWeather] { try await weather(for: trip, radiusKm: 30) }
    public func alerts(for trip: Trip) async throws -> [(stop: Int, alert: WeatherAlert)] {
        try await alerts(for: trip, radiusKm: 30)
    }
}

/// The usual arguments, and the silences in force: derived, not a requirement.
extension SilenceStore {
    public func silences(now: Int64) async throws -> [Silence] { try await silences(now: now, includeExpired: false) }
    /// The silences not ended by `now` (active or scheduled), by start: what the dispatcher mutes with.
    public func activeSilences(now: Int64) async throws -> [Silence] {
        try await silences(now: now, includeExpired: false)
    }
}

/// The usual arguments.
extension OutboxQueue {
    public func claim(now: Int64, lease: Int64, limit: Int = 100) async throws -> [OutboxBatch] {
        try await claim(now: now, lease: lease, limit: limit, instance: nil, excluding: [])
    }
    public func claim(now: Int64, lease: Int64, limit: Int, instance: String?) async throws -> [OutboxBatch] {
        try await claim(now: now, lease: lease, limit: limit, instance: instance, excluding: [])
    }
}

/// The usual arguments.
extension OutboxAdmin {
    public func outbox(state: OutboxRecord.State? = nil) async throws -> [OutboxRecord] {
        try await outbox(state: state, limit: 200)
    }
}

/// A duty this process held was lost while its work ran (the connection that held it ended): the
/// work was cancelled, and another process may hold the duty now.
public struct DutyLost: Error, CustomStringConvertible, Sendable {
    public let duty: String
    public init(duty: String) { self.duty = duty }
    public var description: String { "lost the duty \(duty) (its database connection ended)" }
}

/// Writes readings in batches (ingest, push), one transaction per batch.
public protocol ReadingWriter: Sendable {
    func write(_ batch: [Reading]) async throws -> IngestStats
}

/// What to evaluate: the engine, the event runners, the times and the slices, and the planner that
/// decides, before the store is touched, each transition's annotations, message and deliveries
/// (`TransitionPlanner`). The store applies it in its own transactions; who hears of them as they
/// commit is passed beside it (`EvaluationObserver`).
public struct Evaluation<Planner: TransitionPlanner>: Sendable {
    public var engine: RuleEngine
    public var quakes: QuakeRunner
    public var trips: TripRunner
    /// The evaluation time (seconds): stale checks run up to it; it dates the transition log.
    public var now: Int64
    /// The latest reading time that decides the present state: `now` plus `FutureBound.presentSkew`.
    /// A reading dated later waits in the store until an evaluation's time reaches it.
    public var present: Int64 { now.addingClamped(FutureBound.presentSkew) }
    /// The wall-clock time (ms) outbox rows are queued at: delivery timing (group waits, give-up)
    /// runs on the real clock even when `now` replays the past.
    public var queuedAt: Int64
    /// Each transition's annotations, message and deliveries.
    public var planner: Planner
    /// The most readings stepped in one transaction.
    public var sliceReadings: Int
    /// The most series (changed or quiet) handled in one transaction.
    public var sliceSeries: Int
    /// A transaction ends once its series have logged this many transitions, so their
    /// notifications can go out while the rest is evaluated.
    public var sliceTransitions: Int
    /// Whether the result lists the transitions with their messages. The daemon, which delivers them
    /// through the outbox, only counts them: its memory does not grow with a backlog's output.
    public var keepTransitions = true

    public init(
        engine: RuleEngine, quakes: QuakeRunner, trips: TripRunner, now: Int64, queuedAt: Int64, planner: Planner,
        sliceReadings: Int = 50_000, sliceSeries: Int = 2_000, sliceTransitions: Int = 1_000
    ) {
        self.sliceTransitions = max(1, sliceTransitions)
        self.engine = engine
        self.quakes = quakes
        self.trips = trips
        self.now = now
        self.queuedAt = queuedAt
        self.planner = planner
        self.sliceReadings = max(1, sliceReadings)
        self.sliceSeries = max(1, sliceSeries)
    }
}

/// What one incremental evaluation did.
public struct EvaluationResult: Sendable {
    /// Transitions recorded, in output order, each with its rendered message (empty when the
    /// evaluation did not keep them: `Evaluation.keepTransitions`).
    public var transitions: [(transition: Transition, message: String)] = []
    /// How many transitions were recorded, kept or not.
    public var transitionCount = 0
    /// Readings that arrived since the previous evaluation.
    public var newReadings = 0
    /// Readings that arrived marked suspect (`Plausibility`): not evaluated.
    public var suspectReadings = 0
    /// New readings not newer than what their alerts had already seen (late or revised history): ignored.
    public var lateReadings = 0
    /// Transitions not resolved that no receiver was queued for (when routing was given).
    public var unrouted: [Transition] = []

    public init() {}
}
