import Foundation
import KlaxonCore
import KlaxonRegex
import KlaxonStore
import Logging
import Synchronization

/// What the dispatcher needs of the store: the outbox (with the instances that claim from it), the
/// silences that mute it, the receivers' living messages and their budgets. Tests hand it any
/// backend, or a fake of these roles.
public typealias DeliveryStore = OutboxStore & SilenceStore & LivingMessageStore & BudgetStore

/// Delivers the outbox. A chain of small stages per claimed batch, as in Alertmanager:
/// claim → mute (silences) → quiet hours (defer or drop) → budget (fold past it) → render and send → record
/// (sent, retry with backoff, or dead with a `delivery-failing` alert to the fallback receiver).
///
/// At-least-once: a batch is leased while it is sent, and the lease is renewed while the send is in
/// flight. Each claim names this process's instance: if the process dies, a dispatcher that starts
/// on the same host sees the instance is gone and takes its claims back at once; elsewhere the
/// short lease runs out. Either way the batch is sent again under the same idempotency key.
///
/// A store error (another process holding the database, say) never ends `run`: it waits, retries
/// with backoff, and reports itself in `health`.
public final class Dispatcher: EvaluationObserver {
    public struct Settings: Sendable {
        public var backoff = Backoff()
        /// Seconds after which an undelivered notification is dead.
        public var giveUpAfter: Int64 = 86400
        public var fallbackReceiver: String?
        /// How long a claim lasts (ms) unless renewed; renewed every third of it while a pass is in flight.
        public var lease: Int64 = 30_000
        /// How often `run` looks for claims held by dead instances on this host (ms).
        public var reclaimEvery: Int64 = 10_000
        /// How often a pass records the outcomes of its finished sends (ms).
        public var recordEvery: Int64 = 100
        /// The longest one store call of the dispatcher may take (a claim, a record, a renewal)
        /// before it counts as failed: a query on a connection whose server vanished may never end.
        public var storeDeadline = Duration.seconds(15)
        /// `run`: how long the claim loop may go without completing a turn (while notifications are
        /// claimed, or outcomes wait to be recorded) before it counts as stalled: `/readyz` then says
        /// so and one error line is logged.
        public var stallAfter = Duration.seconds(60)
        /// A record of outcomes that outlived `storeDeadline` is awaited before they are written again (it
        /// may have committed); after this long it is given up (its connection died: it cannot commit).
        public var lateRecordGivenUpAfter = Duration.seconds(45)
        /// `run`: the most outcomes of sends that may wait to be recorded; beyond it the senders
        /// wait for the recorder (a database that stopped answering stops the sends). At 64 the senders
        /// waited on the recorder every 64 sends: 5,000 webhooks took 1.5 s instead of 0.6–0.8 s
        /// (Benchmarks/alertmanager.sh, paired); 1,024 is half a claim and one record's transaction.
        public var unrecordedLimit = 1024
        /// Rows claimed per pass. Each receiver sends its share with at most its notifier's
        /// `connections` in flight; receivers send side by side.
        public var claimLimit = 2048
        /// The base URL people reach the status site at (`external_url`): the payloads' links.
        public var externalURL = ""
        /// Signs Mattermost's message buttons (nil: none).
        public var chatActions: ChatActionSigner?
        /// `run`: the most rows one claim takes, and the most batches waiting in one receiver's lane
        /// before its rows are left unclaimed, so a receiver that hangs holds at most about twice
        /// this and the others keep going.
        public var laneLimit = 256
        /// Told how long each send took (seconds, the notifier's `send` alone: not group_wait,
        /// quiet-hours deferral, rate pacing or time in the queue) and whether it succeeded:
        /// `klaxon_notification_latency_seconds{receiver}`. KlaxonDelivery knows no metrics; the
        /// wiring passes this.
        public var observeSend: (@Sendable (_ receiver: String, _ seconds: Double, _ ok: Bool) -> Void)?
        /// Told of each failed send (every attempt, retried or not): the receiver, its integration
        /// (`Notifier.integration`) and the failure's reason (`DeliveryError.reason`):
        /// `klaxon_notifications_failed_total{receiver,integration,reason}`.
        public var observeFailure: (@Sendable (_ receiver: String, _ integration: String, _ reason: String) -> Void)?
        /// Told of each resolve owed to a receiver that heard its alert firing and that cannot be
        /// sent (`reason`: `receiver_removed`, the receiver is no longer configured):
        /// `klaxon_resolves_unsent_total{receiver,reason}`.
        public var observeUnsentResolve: (@Sendable (_ receiver: String, _ reason: String) -> Void)?
        /// Each receiver's `budget:` (none: no budget), see `Dispatcher+Budget.swift`.
        public var budgets: [String: Budget] = [:]
        /// Told of each notification folded past its receiver's budget, with its alerts:
        /// `klaxon_notifications_folded_total{receiver}`.
        public var observeFold: (@Sendable (_ receiver: String, _ alerts: Int) -> Void)?

        public init() {}
    }

    let store: any DeliveryStore
    /// The receivers, routing and settings in force: swapped whole by `reconfigure` (a reload).
    let setup: Mutex<Setup>
    struct Setup {
        var notifiers: [String: any Notifier]
        var routing: Routing
        var settings: Settings
    }
    var notifiers: [String: any Notifier] { setup.withLock { $0.notifiers } }

    /// The notifier of `receiver`: a configured receiver's, or for a person's direct messages
    /// (`DirectReceiver`, `BASE+dm:USER`, issue 43) the base receiver's, sending to the user. Nil
    /// for a receiver the configuration no longer has (or whose base cannot send directly).
    func notifier(_ receiver: String) -> (any Notifier)? {
        let all = notifiers
        if let n = all[receiver] { return n }
        guard let direct = DirectReceiver(name: receiver), let base = all[direct.base] as? any DirectMessaging else {
            return nil
        }
        return base.direct(to: direct.user)
    }

    /// The configured receiver that sends for `receiver`: itself, or the base of a person's direct
    /// messages. Metrics and the `rate_limit` pace count under it (one series and one pace per
    /// configured receiver, not one per person).
    func baseReceiver(_ receiver: String) -> String {
        guard notifiers[receiver] == nil, let direct = DirectReceiver(name: receiver) else { return receiver }
        return direct.base
    }
    var routing: Routing { setup.withLock { $0.routing } }
    var settings: Settings { setup.withLock { $0.settings } }
    let logger: Logger
    /// Milliseconds since the epoch (injected so tests control time).
    let clock: @Sendable () -> Int64
    let random: @Sendable () -> Double
    let pacer = Pacer()
    /// Each receiver's run of failed sends: a warning when one starts failing, changes reason or
    /// recovers, not one per retry.
    let streaks = Mutex<[String: ReceiverStreak]>([:])
    /// One storm-summary update at a time per receiver (`Dispatcher+Budget.swift`).
    let budgetSummaries = BudgetSummaries()
    /// This process as a claimant; recorded in the store before its first claim.
    public let instance: InstanceRecord
    let registered = Mutex(false)
    /// Whether the store is answering (for `/readyz`).
    public let health: StoreHealth
    let nudges = Nudge()
    /// Ends the recorder's wait at once (`run`: nothing left in flight).
    let recordNow = Nudge()
    /// A record of outcomes that outlived its deadline, and how many outcomes it wrote: awaited before they
    /// are written again.
    let pendingRecord = Mutex<(task: Task<Void, any Error>, count: Int, since: ContinuousClock.Instant)?>(nil)
    /// Whether the outcomes of sends can be written. While they cannot, nothing is claimed, renewed
    /// or sent: a transactional outbox sends no more than it can record.
    let recording = RecordingGate()
    /// When `run`'s claim loop last completed a turn (for the stall watchdog).
    let lastTurn = Mutex(ContinuousClock.now)

    /// Claims an evaluation in this process made for `run` (`handoffRoom`), until `run` takes them.
    let handed = Mutex(Handed())
    struct Handed {
        /// `run`'s work in flight while it runs; nil before and after.
        var flight: InFlight?
        var batches: [OutboxBatch] = []

        /// Takes what was handed over and not yet taken into the lanes.
        mutating func drain() -> [OutboxBatch] {
            defer { batches = [] }
            return batches
        }
    }

    /// Ends `run`'s wait for work at once: this process has just queued notifications. Another
    /// process's rows are found by `run`'s poll.
    public func nudge() { nudges.signal() }

    /// An evaluation in this process committed transitions (`EvaluationObserver`): their
    /// notifications are queued, so `run` stops waiting.
    public func committed(transitions: Int) { nudge() }

    /// For this process's evaluations (SQLite): each slice claims for `run`, in its own
    /// transaction, what is due, and hands it over once committed (`take`). This spares `run` a
    /// claim (a write transaction of its own, waiting its turn behind the next slice) per slice: the
    /// first notifications go out as soon as the first slice commits. Offers nothing unless `run` is
    /// running with room to spare.
    public func handoffRoom() -> HandoffRoom? {
        guard registered.withLock({ $0 }) else { return nil }
        let room = handed.withLock { h -> (limit: Int, excluding: [String])? in
            guard let flight = h.flight else { return nil }
            let waiting = h.batches.reduce(0) { $0 + $1.rows.count }
            let limit = min(settings.claimLimit - flight.rows - waiting, settings.laneLimit)
            guard limit > 0 else { return nil }
            return (limit, flight.fullLanes(limit: max(1, settings.laneLimit)))
        }
        guard let room else { return nil }
        return HandoffRoom(
            instance: instance.id, lease: settings.lease, now: clock(), limit: room.limit, excluding: room.excluding)
    }

    /// Takes the claims a committed slice made (`handoffRoom`); false once `run` has stopped.
    public func take(_ batches: [OutboxBatch]) -> Bool {
        let taken = handed.withLock { h in
            guard h.flight != nil else { return false }
            h.batches += batches
            return true
        }
        if taken { nudges.signal() }
        return taken
    }

    /// Puts batches taken from `handed` back in front (they could not be queued).
    func restoreHanded(_ batches: [OutboxBatch]) {
        guard !batches.isEmpty else { return }
        handed.withLock { $0.batches = batches + $0.batches }
    }

    public init(
        store: any DeliveryStore, notifiers: [String: any Notifier], routing: Routing, settings: Settings = Settings(),
        logger: Logger = Logger(label: "klaxon.dispatch"),
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) },
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }, health: StoreHealth = StoreHealth()
    ) {
        self.instance = ProcessIdentity.current(now: clock())
        self.health = health
        self.store = store
        self.setup = Mutex(Setup(notifiers: notifiers, routing: routing, settings: settings))
        self.logger = logger
        self.clock = clock
        self.random = random
    }

    /// Takes another config's receivers, routing and settings (a reload), from the next batch on: a
    /// batch being sent finishes with the notifier it started with. Rows already queued keep their
    /// receiver and route, as they do across a restart; a receiver that no longer exists is handled
    /// as at a restart (its rows go dead, or to the fallback receiver).
    public func reconfigure(notifiers: [String: any Notifier], routing: Routing, settings: Settings) {
        setup.withLock { $0 = Setup(notifiers: notifiers, routing: routing, settings: settings) }
        nudges.signal()
    }

    /// The integration of each configured receiver (`webhook`, `slack`, `email`, …).
    public var integrations: [String: String] { notifiers.mapValues(\.integration) }

    /// What one pass did.
    public struct Pass: Sendable, Equatable {
        public var sent = 0
        public var retried = 0
        public var dead = 0
        public var muted = 0
        public var dropped = 0
        public var deferred = 0
        /// Resolves of alerts their receiver never heard firing: not sent.
        public var skipped = 0
        /// Folded into the receiver's storm summary: past its budget.
        public var folded = 0
        public var batches: Int { sent + retried + dead + muted + dropped + deferred + skipped + folded }
    }

    /// Claims what is due now and handles it. Returns what happened. An idle outbox costs one read:
    /// nothing is written unless something is due.
    public func dispatchOnce() async throws -> Pass {
        let now = clock()
        await retryDueSummaries(now: now)
        guard let due = try await store.nextDue(), due <= now else { return Pass() }
        try await registerOnce()
        let batches = try await store.claim(
            now: now, lease: settings.lease, limit: settings.claimLimit, instance: instance.id)
        guard !batches.isEmpty else { return Pass() }
        let silences = try await store.activeSilences(now: now / 1000)
        let outcomes = Outcomes()
        let pass: Pass
        do {
            // Outcomes are recorded as sends complete (every `recordEvery` ms, alongside the lease
            // renewal), not only at the end of the pass: a process killed mid-pass loses the record of
            // a few sends, never of the whole pass, so even a crash loop makes progress.
            let ids = batches.flatMap { $0.rows.map(\.id) }
            pass = try await withLeaseRenewal(recording: outcomes, holding: { ids }) {
                // Receivers side by side; within one, at most its `connections` sends in flight, in
                // claim order.
                var byReceiver: [String: [OutboxBatch]] = [:]
                for batch in batches { byReceiver[batch.receiver, default: []].append(batch) }
                return try await withThrowingTaskGroup(of: Pass.self) { group in
                    for (receiver, list) in byReceiver {
                        let limit = max(1, self.notifier(receiver)?.connections ?? 1)
                        group.addTask {
                            try await self.send(list, connections: limit, silences: silences, into: outcomes)
                        }
                    }
                    var pass = Pass()
                    for try await p in group { pass.add(p) }
                    return pass
                }
            }
            try await record(outcomes)
        } catch {
            // Stopped mid-pass (shutdown): keep what was done, give the rest back. A row whose send
            // was cut off goes out again after the restart, under the same idempotency key. These
            // writes run outside the cancelled task, so the cancellation cannot cut them short.
            let store = self.store
            let done = outcomes.drain()
            await Task.detached {
                try? await store.apply(done)
                try? await store.release(batches)
            }.value
            throw error
        }
        return pass
    }

    /// Handles one receiver's batches, at most `connections` at once.
    func send(_ batches: [OutboxBatch], connections: Int, silences: [Silence], into outcomes: Outcomes) async throws
        -> Pass
    {
        try await withThrowingTaskGroup(of: Pass.self) { group in
            var pass = Pass()
            var running = 0
            for batch in batches {
                if running >= connections {
                    if let p = try await group.next() { pass.add(p) }
                    running -= 1
                }
                group.addTask { try await self.handle(batch, silences: silences, into: outcomes) }
                running += 1
            }
            for try await p in group { pass.add(p) }
            return pass
        }
    }

    /// Records the outcomes gathered so far. What was sent must be recorded, or it would be sent
    /// again: a busy database is waited out. Outcomes not recorded stay for the next try.
    ///
    /// Each try has a deadline (`storeDeadline`). While a try fails, `recording` is closed: the
    /// claimer claims nothing, the senders send nothing and leases are not renewed, so no more goes
    /// out than can be recorded; it opens again once the outcomes are written.
    func record(_ outcomes: Outcomes) async throws {
        guard !outcomes.isEmpty || pendingRecord.withLock({ $0 != nil }) else { return }
        try await health.persist("dispatcher", logger: logger) {
            do {
                // A record that outlived its deadline may still have committed (a SQLite write cannot be
                // stopped once it runs; a PostgreSQL reply can be lost after the commit): learn how it ended
                // before its outcomes are written again, or a dead row's delivery-failing alert is queued twice.
                // A late record that never ends (its PostgreSQL connection died with the server) is given up
                // after `lateRecordGivenUpAfter`: its transaction cannot commit on a dead connection, so the
                // outcomes are written anew on another.
                if let (task, count, since) = pendingRecord.withLock({ $0 }) {
                    let ended = await Bounded.result(of: task, within: settings.storeDeadline, orUntilCancelled: true)
                    try Task.checkCancellation()
                    if let ended {
                        pendingRecord.withLock { $0 = nil }
                        if case .success = ended { outcomes.removeFirst(count) }
                    } else if ContinuousClock.now - since >= settings.lateRecordGivenUpAfter {
                        pendingRecord.withLock { $0 = nil }
                    } else {
                        throw DispatcherStoreTimeout(what: "recording outcomes", limit: settings.storeDeadline)
                    }
                }
                // Left in `outcomes` until written, so its count is what waits to be recorded.
                let items = outcomes.all
                if !items.isEmpty {
                    let task = Task { [store] in try await store.apply(items) }
                    guard
                        let ended = await Bounded.result(
                            of: task, within: settings.storeDeadline, orUntilCancelled: true)
                    else {
                        task.cancel()
                        pendingRecord.withLock { $0 = (task, items.count, ContinuousClock.now) }
                        try Task.checkCancellation()
                        throw DispatcherStoreTimeout(what: "recording outcomes", limit: settings.storeDeadline)
                    }
                    try ended.get()
                    outcomes.removeFirst(items.count)
                }
                recording.open()
            } catch let error as CancellationError {
                throw error
            } catch {
                if !Task.isCancelled { recording.close(error) }
                throw error
            }
        }
    }

    /// Runs one store call with the `storeDeadline`: past it the call counts as failed (and is left
    /// to end on its own; its connection is the pool's to drop).
    func bounded<T: Sendable>(_ what: String, _ call: @escaping @Sendable () async throws -> T) async throws -> T {
        let limit = settings.storeDeadline
        let task = Task { try await call() }
        guard let result = await Bounded.result(of: task, within: limit, orUntilCancelled: true) else {
            task.cancel()
            try Task.checkCancellation()
            throw DispatcherStoreTimeout(what: what, limit: limit)
        }
        return try result.get()
    }

    /// Runs `body` while recording `outcomes` every `recordEvery` ms and renewing, every third of the
    /// lease, the leases of the rows `holding` names (this instance's claims it knows of: a claim
    /// whose answer was lost in an outage is not renewed, so it runs out and is claimed again).
    /// Returns once the recorder has stopped, so what it could not record is back in `outcomes`.
    func withLeaseRenewal<T: Sendable>(
        recording outcomes: Outcomes, holding: @escaping @Sendable () -> [String],
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                var renewed = self.clock()
                while true {
                    // A quiet moment (nothing left in flight) records at once: a lone alert's outcome
                    // does not wait out the interval, nor does the resolve queued behind it.
                    await self.recordNow.wait(
                        milliseconds: max(1, min(self.settings.recordEvery, self.settings.lease / 3)))
                    try Task.checkCancellation()
                    try? await self.record(outcomes)
                    let now = self.clock()
                    // While outcomes cannot be recorded the leases run out: what was sent and not
                    // recorded may go out once more after recovery, but no claim is held forever.
                    if now - renewed >= self.settings.lease / 3, self.recording.isOpen {
                        renewed = now
                        // A failed renewal is not fatal: the lease is three renewals long.
                        let store = self.store
                        let id = self.instance.id
                        let until = now + self.settings.lease
                        let ids = holding()
                        _ = try? await self.bounded("renewing leases") {
                            try await store.renewLeases(instance: id, ids: ids, until: until, now: now)
                        }
                    }
                }
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let result { return result }
            }
            throw CancellationError()
        }
    }

    /// Takes back the claims of instances on this host whose process is gone (a crash, SIGKILL).
    /// Reads only, unless there is something to take back.
    @discardableResult
    public func reclaimFromDeadInstances() async throws -> Int {
        let dead = try await store.claimHolders(excluding: instance.id).filter {
            $0.host == instance.host && !ProcessIdentity.isAlive($0)
        }
        guard !dead.isEmpty else { return 0 }
        let n = try await store.releaseClaims(of: dead.map(\.id))
        logger.notice(
            "took back notifications claimed by a process that died",
            metadata: [
                "rows": .stringConvertible(n), "instances": "\(dead.map { "\($0.pid)" }.joined(separator: ","))",
            ])
        return n
    }

    /// Dispatches until nothing is due (or left), or until `deadline` (ms). Waits for retries that fall
    /// due before the deadline. Returns the totals.
    public func runUntilEmpty(deadline: Int64) async throws -> Pass {
        var total = Pass()
        try await reclaimFromDeadInstances()
        while clock() < deadline {
            let p = try await dispatchOnce()
            total.add(p)
            if p.batches > 0 { continue }
            guard let next = try await store.nextDue() else { break }
            let wait = min(max(next - clock(), 5), deadline - clock())
            if wait <= 0 { break }
            try await Task.sleep(for: .milliseconds(wait))
        }
        return total
    }

    /// Dispatches forever (the daemon). Claiming and sending overlap: rows are claimed as they fall
    /// due and as room frees up, while earlier sends are still in flight, so a receiver that answers
    /// slowly (or never, until its timeout) holds up only its own queue, never another alert's
    /// delivery or another receiver. Each receiver sends at most its `connections` at once, in claim
    /// order; a receiver with `laneLimit` batches waiting is claimed for no more until its queue
    /// drains. At most `claimLimit` rows are in flight in all.
    ///
    /// When nothing is due it sleeps until the next due row or `poll` ms; a poll is one indexed read,
    /// and it bounds the latency from a transition written by another process to its delivery. A
    /// nudge (this process queued something) or a finished send that makes room ends the wait. A
    /// store error waits and retries (`health`). Once `stop` says so it claims nothing new and
    /// returns when the sends in flight have ended; cancellation cuts them off. Either way, what was
    /// sent is recorded and what was claimed but not sent is given back.
    public func run(poll: Int64 = 50, stop: @escaping @Sendable () -> Bool = { false }) async throws {
        let flight = InFlight()
        let outcomes = Outcomes()
        handed.withLock { $0.flight = flight }
        // Ends the handoff: what was handed over and not taken goes back to the outbox.
        let close = {
            self.handed.withLock { h -> [OutboxBatch] in
                h.flight = nil
                return h.drain()
            }
        }
        do {
            lastTurn.withLock { $0 = .now }
            // What this instance holds: claimed and not finished, finished and not recorded, handed
            // over by an evaluation and not yet taken.
            let holding: @Sendable () -> [String] = {
                flight.rowIDs() + outcomes.rowIDs() + self.handed.withLock { $0.batches.flatMap { $0.rows.map(\.id) } }
            }
            try await withLeaseRenewal(recording: outcomes, holding: holding) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await self.watchStalls(flight: flight, outcomes: outcomes) }
                    try await self.claimAndSend(flight: flight, outcomes: outcomes, poll: poll, stop: stop)
                    group.cancelAll()
                }
            }
            // Handed over and not taken, or taken by a sender and not sent (stopped while outcomes
            // could not be recorded): given back.
            let left = close() + flight.unfinished()
            try await record(outcomes)
            if !left.isEmpty { try await store.release(left) }
        } catch {
            // Cut off (shutdown): keep what was done, give the rest back. A row whose send was cut off
            // goes out again after the restart, under the same idempotency key. These writes run
            // outside the cancelled task, so the cancellation cannot cut them short.
            let store = self.store
            let done = outcomes.drain()
            let unsent = flight.unfinished() + close()
            await Task.detached {
                try? await store.apply(done)
                try? await store.release(unsent)
            }.value
            throw error
        }
    }

    /// `run`'s watchdog: the claim loop has not completed a turn for `stallAfter` while
    /// notifications are claimed or outcomes wait to be recorded (a store call that hangs, outcomes
    /// that cannot be written): `/readyz` says so (`health`) and one error line is logged; both end
    /// when the loop turns again.
    func watchStalls(flight: InFlight, outcomes: Outcomes) async {
        let service = "dispatcher watchdog"
        var stalled = false
        while !Task.isCancelled {
            let limit = settings.stallAfter
            let idle = ContinuousClock.now - lastTurn.withLock { $0 }
            let busy = flight.rows > 0 || !outcomes.isEmpty || !recording.isOpen
            if idle >= limit && busy {
                if !stalled {
                    stalled = true
                    health.failed(
                        service,
                        DispatcherStalled(
                            seconds: Int(idle.components.seconds),
                            recording: recording.isOpen ? nil : recording.lastError), logger: logger,
                        message: "delivery stalled")
                }
            } else if stalled {
                stalled = false
                health.succeeded(service, logger: logger)
            }
            try? await Task.sleep(for: min(limit / 4, .seconds(1)))
        }
        if stalled { health.succeeded(service, logger: logger) }
    }

    /// `run`'s claimer: claims while there is room, hands each batch to its receiver's lane, and
    /// starts a lane's senders (up to its `connections`) as work arrives. Returns after `stop`, once
    /// every send has ended.
    func claimAndSend(
        flight: InFlight, outcomes: Outcomes, poll: Int64, stop: @escaping @Sendable () -> Bool
    ) async throws {
        try await withThrowingDiscardingTaskGroup { senders in
            var lastReclaim = Int64.min
            while !Task.isCancelled && !stop() {
                // Outcomes cannot be recorded: claim nothing more until they are (the recorder
                // retries them and opens the gate).
                if !recording.isOpen {
                    await recording.waitOpen()
                    continue
                }
                lastTurn.withLock { $0 = .now }
                let now = clock()
                // Storm summaries whose last update failed, tried again beside the sends.
                for receiver in budgetSummaries.takeDue(now: now) {
                    senders.addTask { await self.retrySummary(receiver) }
                }
                let reclaim = lastReclaim == .min || now - lastReclaim >= settings.reclaimEvery
                if reclaim { lastReclaim = now }
                let room = min(settings.claimLimit - flight.rows, settings.laneLimit)
                let skip = flight.fullLanes(limit: max(1, settings.laneLimit))
                let (claimed, handed, silences, next) = try await health.persist(
                    "dispatcher", logger: logger, stop: stop
                ) {
                    // Each store call has a deadline: a claim that never answers (its connection's
                    // server vanished) must not stop delivery for good. A claim that committed after
                    // its deadline is not renewed (this instance does not know it holds it): its lease
                    // runs out and it is claimed again.
                    let (claimed, next) = try await self.bounded("claiming") {
                        () async throws -> ([OutboxBatch], Int64?) in
                        if reclaim {
                            // Registered from the start: an evaluation's handoff waits for it.
                            try await self.registerOnce()
                            try await self.reclaimFromDeadInstances()
                        }
                        var claimed: [OutboxBatch] = []
                        var next: Int64? = nil
                        if room > 0, let due = try await self.store.nextDue() {
                            if due <= now {
                                claimed = try await self.store.claim(
                                    now: now, lease: self.settings.lease, limit: room, instance: self.instance.id,
                                    excluding: skip)
                                if claimed.isEmpty { next = now + poll }
                            } else {
                                next = due
                            }
                        }
                        return (claimed, next)
                    }
                    // What this process's evaluation claimed for us since the last turn.
                    let handed = self.handed.withLock { $0.drain() }
                    do {
                        let none = handed.isEmpty && claimed.isEmpty
                        let silences =
                            none
                            ? []
                            : try await self.bounded("reading silences") {
                                try await self.store.activeSilences(now: now / 1000)
                            }
                        return (claimed, handed, silences, next)
                    } catch {
                        // Held for the next turn (and renewed meanwhile), not left to run out.
                        self.restoreHanded(handed + claimed)
                        throw error
                    }
                }
                // A row this instance is still sending, or has sent and not yet recorded, is never sent again
                // by it: a claim that waited on a busy or vanished database (its lease counted from before the
                // wait) can come back with rows whose earlier claim's lease ran out meanwhile. Left as they
                // are, such rows are finished by the send already under way.
                let held = Set(flight.rowIDs() + outcomes.rowIDs())
                for batch in handed + claimed
                where held.isEmpty || !batch.rows.contains(where: { held.contains($0.id) }) {
                    let connections = max(1, notifier(batch.receiver)?.connections ?? 1)
                    guard flight.add(batch, silences: silences, connections: connections) else { continue }
                    senders.addTask {
                        // One of the lane's senders: takes its batches in order until none is left.
                        while !Task.isCancelled, let (id, batch, silences) = flight.next(receiver: batch.receiver) {
                            // Nothing is sent while outcomes cannot be recorded.
                            // Nor while more outcomes wait than one record takes: a record that
                            // hangs stops the sends within `unrecordedLimit`. Once asked to stop, no
                            // batch is started: `run` gives back what was taken and not sent (a
                            // sender waiting here for a store that may never take outcomes again
                            // would otherwise hold `run` with it).
                            while (!self.recording.isOpen || outcomes.count >= self.settings.unrecordedLimit)
                                && !Task.isCancelled && !stop()
                            {
                                self.recordNow.signal()
                                try? await Task.sleep(for: .milliseconds(20))
                            }
                            if Task.isCancelled || stop() { break }
                            _ = try? await self.handle(batch, silences: silences, into: outcomes)
                            let (room, idle) = flight.finish(id)
                            if room { self.nudges.signal() }
                            if idle { self.recordNow.signal() }
                        }
                    }
                }
                // A full claim: more may be due at once. Otherwise what arrives from now on comes
                // with a nudge (this process) or is found by the poll (another process).
                if claimed.reduce(0, { $0 + $1.rows.count }) >= room { continue }
                if flight.trimDue() { releaseFreeMemory() }
                // Nothing to claim now (or no room): wait for the next due row, a nudge, a send that
                // makes room, or the poll.
                flight.wantRoom(room <= 0 || !skip.isEmpty)
                let wait = next.map { $0 - clock() }.map { $0 <= 0 ? poll : $0 } ?? poll
                await nudges.wait(milliseconds: min(max(wait, 5), poll))
            }
        }
    }

    func registerOnce() async throws {
        guard !registered.withLock({ $0 }) else { return }
        try await store.register(instance)
        registered.withLock { $0 = true }
    }

    /// The mute stage's matching: the alerts an active silence mutes, within one batch's `MatchBudget`
    /// (off the cooperative pool when a silence holds a regex). An alert the budget leaves undecided is
    /// sent, with a warning: a silence too costly to match mutes less, never more, and delivery is not
    /// held up by it.
    func mutedAlerts<Row: Sendable>(
        _ alerts: [(Row, NotifiedAlert)], silences: [Silence], at t: Int64, _ batch: OutboxBatch
    ) async throws -> [(Row, NotifiedAlert)] {
        let labels = alerts.map { $0.1.transition.matchLabels }
        let match: @Sendable () -> (muted: [Bool], undecided: Int) = {
            var budget = MatchBudget(steps: MatchBudget.batchSteps)
            var undecided = 0
            let muted = labels.map { l in
                let (found, decided) = Silence.muting(silences, l, at: t, budget: &budget, first: true)
                if found.isEmpty && !decided { undecided += 1 }
                return !found.isEmpty
            }
            return (muted, undecided)
        }
        let regex = silences.contains { $0.matchers.contains { $0.regex != nil } }
        let (muted, undecided) = regex ? try await offPool(match) : match()
        if undecided > 0 {
            logger.warning(
                "silences not checked: matching them needs more work than a batch may do; sent unmuted",
                metadata: ["receiver": "\(batch.receiver)", "alerts": .stringConvertible(undecided)])
        }
        return zip(alerts, muted).filter(\.1).map(\.0)
    }

    func handle(_ batch: OutboxBatch, silences: [Silence], into outcomes: Outcomes) async throws -> Pass {
        var pass = Pass()
        let now = clock()
        let maxAge = routing.route(batch.route).notifyMaxAge
        let all = zip(batch.rows, batch.transitions).map { row, record in
            // Late: news of a change told after `notify_max_age` (a catch-up), not a reminder of an old one.
            let late = maxAge > 0 && now / 1000 - record.at > maxAge && row.purpose == "transition"
            var alert = NotifiedAlert(record: record, path: PathStep.decode(row.path), late: late)
            if row.purpose == "repeat" {
                // A reminder, or an escalation (queued as a repeat to the route's `escalate_to`): the
                // notification's reason (`notification_reason`).
                let escalated = routing.route(batch.route).escalateTo == row.receiver
                alert.escalated = escalated
                alert.reminder = !escalated
            }
            return (row, alert)
        }

        // Stage: present. A resolve is news only to a receiver that heard the alert firing
        // (Alertmanager sends a resolved alert only where its firing was notified).
        let unheard = all.filter { row, a in
            a.transition.state == .resolved && row.purpose != "system" && !(row.heard?.isFiring ?? false)
        }
        if !unheard.isEmpty {
            outcomes.add(
                .finish(
                    subBatch(batch, unheard.map(\.0)), state: .skipped, now: now, retryAt: nil,
                    error: "not sent: the receiver never heard this alert firing"))
            pass.skipped += 1
            if let budget = settings.budgets[batch.receiver] {
                await budgetResolved(unheard.map(\.1), receiver: batch.receiver, budget: budget)
            }
        }
        var alerts = unheard.isEmpty ? all : all.filter { row, _ in !unheard.contains { $0.0.id == row.id } }
        // A resolve owed to a receiver that heard the firing and that a reload removed since: none can
        // send it. Recorded with the reason and counted (not a failed send: no retry can help).
        if notifier(batch.receiver) == nil, batch.rows.first?.purpose != "system" {
            let owed = alerts.filter { $0.1.transition.state == .resolved }
            if !owed.isEmpty {
                outcomes.add(
                    .finish(
                        subBatch(batch, owed.map(\.0)), state: .skipped, now: now, retryAt: nil,
                        error: Self.receiverRemoved(batch.receiver)))
                pass.skipped += 1
                for _ in owed { settings.observeUnsentResolve?(baseReceiver(batch.receiver), "receiver_removed") }
                logger.warning(
                    "resolve not sent: the receiver that heard the alert firing is no longer configured",
                    metadata: ["receiver": "\(batch.receiver)", "alerts": .stringConvertible(owed.count)])
                alerts = alerts.filter { $0.1.transition.state != .resolved }
            }
        }
        guard !alerts.isEmpty else { return pass }
        let batch = alerts.count == all.count ? batch : subBatch(batch, alerts.map(\.0))

        // Stage: mute. Silenced alerts keep their state; they are just not sent. A resolve is never
        // muted: it reaches this stage only for a receiver that heard the alert firing, and a
        // receiver told of a firing is told that it ended (the resolve contract, docs/receivers.md).
        let mutable = alerts.filter { $0.1.transition.state != .resolved }
        let muted =
            silences.isEmpty || mutable.isEmpty
            ? [] : try await mutedAlerts(mutable, silences: silences, at: now / 1000, batch)
        if !muted.isEmpty {
            outcomes.add(.finish(subBatch(batch, muted.map(\.0)), state: .muted, now: now, retryAt: nil, error: nil))
            pass.muted += 1
        }
        let live = muted.isEmpty ? alerts : alerts.filter { row, _ in !muted.contains { $0.0.id == row.id } }
        guard !live.isEmpty else { return pass }
        let liveBatch = muted.isEmpty ? batch : subBatch(batch, live.map(\.0))

        // Stage: quiet hours (a watch's: its owner's own, when they keep any).
        if let quiet = Self.quietHours(routing.route(batch.route), live.first?.1.transition),
            batch.rows.first?.purpose != "system"
        {
            let held = live.filter { quiet.mutes($0.1.transition.severity, at: now / 1000) }
            if held.count == live.count, let end = quiet.end(of: now / 1000) {
                // `drop` drops what fires or changes; a resolve is held to the end, never dropped (the
                // resolve contract: its receiver heard the alert firing).
                let drop = quiet.policy == .drop
                let resolves = drop ? live.filter { $0.1.transition.state == .resolved } : live
                let dropped = drop ? live.filter { $0.1.transition.state != .resolved } : []
                if !dropped.isEmpty {
                    outcomes.add(
                        .finish(
                            resolves.isEmpty ? liveBatch : subBatch(liveBatch, dropped.map(\.0)), state: .dropped,
                            now: now, retryAt: nil, error: "dropped during quiet hours"))
                    pass.dropped += 1
                }
                if !resolves.isEmpty {
                    // One digest per receiver when the period ends: a shared, stable batch key.
                    outcomes.add(
                        .reschedule(
                            dropped.isEmpty ? liveBatch : subBatch(liveBatch, resolves.map(\.0)),
                            batchKey: OutboxRecord.quietDigest(receiver: batch.receiver, until: end),
                            dueAt: end * 1000))
                    pass.deferred += 1
                }
                return pass
            }
        }

        // Stage: send.
        guard let notifier = self.notifier(batch.receiver) else {
            try fail(
                liveBatch,
                error: DeliveryError(
                    kind: .configuration, retryable: false, message: "receiver \(batch.receiver) is not configured"),
                now: now, pass: &pass, into: outcomes)
            return pass
        }
        // Stage: budget (no storms).
        if let budget = settings.budgets[batch.receiver], batch.rows.first?.purpose != "system",
            try await foldedPastBudget(
                liveBatch, live: live, budget: budget, notifier: notifier, now: now, pass: &pass, into: outcomes)
        {
            return pass
        }
        let notification = AlertNotification(
            key: batch.key, receiver: batch.receiver, alerts: live.map(\.1), attempt: batch.attempt,
            isDigest: batch.key.hasPrefix("digest-"), externalURL: settings.externalURL,
            groupBy: routing.route(batch.route).groupBy, routeKey: Self.routeKey(routing, batch.route),
            chatActions: settings.chatActions)
        if let rate = notifier.rateLimit {
            // A person's direct messages share their base receiver's `rate_limit` (one bot, one pace).
            try await pacer.wait(receiver: baseReceiver(batch.receiver), rate: rate, clock: clock)
        }
        let started = ContinuousClock.now
        let observe = settings.observeSend
        let measured = baseReceiver(batch.receiver)
        func observed(_ ok: Bool) {
            guard let observe else { return }
            let d = ContinuousClock.now - started
            observe(measured, Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18, ok)
        }
        do {
            // A reminder (`repeat_interval`) is posted anew, to be seen again; the rest edit the living message.
            if notifier.editsMessages && liveBatch.rows.contains(where: { $0.purpose != "repeat" }) {
                try await sendLiving(notification, through: notifier)
            } else {
                try await notifier.send(notification)
            }
            observed(true)
            let recovered = streaks.withLock {
                $0[batch.receiver]?.succeeded(receiver: batch.receiver, integration: notifier.integration)
            }
            if let recovered { recovered.log(to: logger) }
            outcomes.add(.finish(liveBatch, state: .sent, now: clock(), retryAt: nil, error: nil))
            pass.sent += 1
            logger.debug(
                "delivered",
                metadata: [
                    "receiver": "\(batch.receiver)", "key": "\(batch.key)",
                    "attempt": .stringConvertible(batch.attempt),
                ])
        } catch let error as DeliveryError {
            observed(false)
            try fail(liveBatch, error: error, now: clock(), pass: &pass, into: outcomes)
        } catch {
            observed(false)
            try fail(
                liveBatch,
                error: DeliveryError(
                    kind: .connection, retryable: true,
                    message: "receiver \(batch.receiver): \(ErrorWords.describe(error))"), now: clock(),
                pass: &pass, into: outcomes)
        }
        return pass
    }

    /// Stage: record a failure — retry with backoff (or as `Retry-After` asks), or give up.
    func fail(_ batch: OutboxBatch, error: DeliveryError, now: Int64, pass: inout Pass, into outcomes: Outcomes) throws
    {
        let age = (now - batch.firstCreatedAt) / 1000
        let integration = notifier(batch.receiver)?.integration ?? "unknown"
        settings.observeFailure?(baseReceiver(batch.receiver), integration, error.reason)
        let change = streaks.withLock {
            $0[batch.receiver, default: ReceiverStreak()].failed(
                receiver: batch.receiver, integration: integration, error: error, attempt: batch.attempt,
                at: now / 1000)
        }
        if let change { change.log(to: logger) }
        var meta: Logger.Metadata = [
            "receiver": "\(batch.receiver)", "key": "\(batch.key)", "attempt": .stringConvertible(batch.attempt),
            "error": "\(error.message)", "reason": "\(error.reason)",
        ]
        if error.retryable && age < settings.giveUpAfter {
            let backoff = settings.backoff.delay(attempt: batch.attempt, random: random())
            let wait = max(backoff, error.retryAfter ?? 0)
            let retryAt = now + Int64(wait * 1000)
            meta["retry_in_ms"] = .stringConvertible(retryAt - now)
            outcomes.add(.finish(batch, state: .pending, now: now, retryAt: retryAt, error: error.message))
            pass.retried += 1
            // Each retry at debug: the receiver's state changes are the warnings above.
            logger.debug("delivery failed, will retry", metadata: meta)
            return
        }
        outcomes.add(.finish(batch, state: .dead, now: now, retryAt: nil, error: error.message))
        pass.dead += 1
        logger.warning("delivery failed, giving up", metadata: meta)
        guard let fallback = settings.fallbackReceiver, fallback != batch.receiver else { return }
        let why = error.retryable ? "still failing after \(DurationText.format(age)): \(error.message)" : error.message
        let t = Transition(
            rule: "delivery-failing", kind: "system", station: batch.receiver, metric: "delivery", state: .firing,
            at: now / 1000, value: nil, severity: .critical, labels: ["receiver": batch.receiver],
            summary:
                "notifications to \(batch.receiver) are failing; \(batch.rows.count) given up (see `klaxon outbox list --state dead`)",
            explanation: why)
        outcomes.add(.system(t, message: t.summary + ": " + why, receiver: fallback, now: now))
    }

    /// Why a resolve owed to `receiver` was not sent: a reload removed the receiver (`last_error`).
    static func receiverRemoved(_ receiver: String) -> String {
        "not sent: receiver \(receiver) heard this alert firing but is no longer configured"
    }

    /// The quiet hours a batch is held by: its route's; for a person's watch whose owner keeps quiet
    /// hours of their own (the `watch_quiet` label its rule carries, issue 43), theirs instead, with
    /// the `defer` policy (held to the window's end, resolves too; nothing dropped). A batch is one
    /// watch's alerts (a watch's rule is its group), so its first alert speaks for it. The label
    /// counts on a watch's transitions only (a rule file may not label a rule `watch`).
    static func quietHours(_ route: Route, _ first: Transition?) -> QuietHours? {
        if let labels = first?.labels, labels[Routing.watchLabel] != nil, let text = labels[WatchQuietHours.label],
            let own = WatchQuietHours(labelValue: text)
        {
            return own.quietHours
        }
        return route.quietHours
    }

    /// A route's key as Alertmanager prints it: `{}` for the root (Klaxon's defaults), and the
    /// route's matchers below it (`{}/{severity="critical"}`).
    static func routeKey(_ routing: Routing, _ index: Int?) -> String {
        guard let index, routing.routes.indices.contains(index) else { return "{}" }
        let matchers = routing.routes[index].matchers.map {
            "\($0.name)\($0.op.rawValue)\(AlertNotification.goQuoted($0.value))"
        }
        return "{}/{" + matchers.joined(separator: ",") + "}"
    }

    func subBatch(_ batch: OutboxBatch, _ rows: [OutboxRecord]) -> OutboxBatch {
        var b = batch
        b.rows = rows
        let ids = Set(rows.map(\.transitionID))
        b.transitions = batch.transitions.filter { ids.contains($0.id ?? -1) }
        return b
    }
}

extension Dispatcher.Pass {
    mutating func add(_ p: Dispatcher.Pass) {
        sent += p.sent
        retried += p.retried
        dead += p.dead
        muted += p.muted
        dropped += p.dropped
        deferred += p.deferred
        skipped += p.skipped
        folded += p.folded
    }
}

/// Outcomes gathered by a pass's concurrent sends, recorded in a few transactions as they come.
final class Outcomes: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [OutboxOutcome] = []

    func add(_ o: OutboxOutcome) { lock.withLock { items.append(o) } }
    var all: [OutboxOutcome] { lock.withLock { items } }
    var isEmpty: Bool { lock.withLock { items.isEmpty } }
    var count: Int { lock.withLock { items.count } }
    /// The outbox rows whose outcome waits here (still `sending` in the store, so still leased).
    func rowIDs() -> [String] {
        lock.withLock {
            items.flatMap { item -> [String] in
                switch item {
                case .finish(let batch, _, _, _, _), .reschedule(let batch, _, _): batch.rows.map(\.id)
                case .system: []
                }
            }
        }
    }
    /// Drops the first `n` (recorded; only the recorder removes, so they are the ones it read).
    func removeFirst(_ n: Int) { lock.withLock { items.removeFirst(min(n, items.count)) } }
    /// Takes what has been gathered, leaving none.
    func drain() -> [OutboxOutcome] {
        lock.withLock {
            defer { items = [] }
            return items
        }
    }
    /// Puts outcomes that could not be recorded back in front.
    func restore(_ earlier: [OutboxOutcome]) { lock.withLock { items = earlier + items } }
}

/// What `Dispatcher.run` has claimed and not yet finished: each receiver's lane (batches waiting,
/// senders running), the rows in flight in all, and what to give back if the run is cut off.
final class InFlight: Sendable {
    private struct Lane {
        var waiting: [(id: Int, batch: OutboxBatch, silences: [Silence])] = []
        var head = 0
        var senders = 0
        var count: Int { waiting.count - head }

        /// The first batch waiting (the lane has one); taken items' slots are reclaimed now and then.
        mutating func take() -> (id: Int, batch: OutboxBatch, silences: [Silence]) {
            let item = waiting[head]
            head += 1
            if head == waiting.count {
                waiting.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 256 && head * 2 >= waiting.count {
                waiting.removeFirst(head)
                head = 0
            }
            return item
        }
    }
    private struct State {
        var lanes: [String: Lane] = [:]
        var unfinished: [Int: OutboxBatch] = [:]
        var rows = 0
        var nextID = 0
        var wantsRoom = false
        var finishedSinceTrim = 0
    }
    private let state = Mutex(State())

    /// Rows claimed and not yet finished.
    var rows: Int { state.withLock { $0.rows } }

    /// Queues a claimed batch in its receiver's lane; true when the lane needs another sender (it has
    /// fewer than `connections` and more batches waiting than senders).
    func add(_ batch: OutboxBatch, silences: [Silence], connections: Int) -> Bool {
        state.withLock { s in
            let id = s.nextID
            s.nextID += 1
            s.unfinished[id] = batch
            s.rows += batch.rows.count
            // Mutated in place: a copy of the lane would copy its queue on every append.
            s.lanes[batch.receiver, default: Lane()].waiting.append((id, batch, silences))
            // Every sender is busy with a batch (an idle one leaves the lane): start one more while
            // the lane has fewer than its connections.
            let start = s.lanes[batch.receiver]!.senders < connections
            if start { s.lanes[batch.receiver]!.senders += 1 }
            return start
        }
    }

    /// The lane's next batch in claim order, or nil (and one sender fewer) when none waits.
    func next(receiver: String) -> (Int, OutboxBatch, [Silence])? {
        state.withLock { s in
            guard let lane = s.lanes[receiver] else { return nil }
            guard lane.count > 0 else {
                if lane.senders <= 1 && lane.count == 0 {
                    s.lanes[receiver] = nil
                } else {
                    s.lanes[receiver]!.senders -= 1
                }
                return nil
            }
            return s.lanes[receiver]!.take()
        }
    }

    /// A batch handled (its outcome is with the recorder). `room`: the claimer waits for room and now
    /// has some; `idle`: nothing is left in flight.
    func finish(_ id: Int) -> (room: Bool, idle: Bool) {
        state.withLock { s in
            guard let batch = s.unfinished.removeValue(forKey: id) else { return (false, false) }
            s.rows -= batch.rows.count
            s.finishedSinceTrim += 1
            let room = s.wantsRoom
            s.wantsRoom = false
            return (room, s.rows == 0)
        }
    }

    /// Receivers whose lane has `limit` or more batches waiting.
    func fullLanes(limit: Int) -> [String] {
        state.withLock { s in s.lanes.filter { $0.value.count >= limit }.map(\.key).sorted() }
    }

    func wantRoom(_ wants: Bool) { state.withLock { $0.wantsRoom = wants } }

    /// Whether a large amount of work has just drained (its memory can go back to the system).
    func trimDue() -> Bool {
        state.withLock { s in
            guard s.rows == 0, s.finishedSinceTrim >= 1_000 else { return false }
            s.finishedSinceTrim = 0
            return true
        }
    }

    /// Batches claimed and not finished (to give back when the run is cut off).
    func unfinished() -> [OutboxBatch] { state.withLock { Array($0.unfinished.values) } }

    /// The outbox rows of the batches claimed and not finished.
    func rowIDs() -> [String] { state.withLock { $0.unfinished.values.flatMap { $0.rows.map(\.id) } } }

}

/// Whether the dispatcher can record outcomes (see `Dispatcher.record`): open unless the last try
/// failed. The claimer and every sender wait for it to open (many waiters, so not a `Nudge`).
final class RecordingGate: Sendable {
    private let state = Mutex<(open: Bool, error: String?)>((true, nil))

    /// Returns when open, or after a short while (the caller checks again), or on cancellation.
    func waitOpen() async {
        guard !isOpen else { return }
        try? await Task.sleep(for: .milliseconds(100))
    }

    var isOpen: Bool { state.withLock { $0.open } }
    var lastError: String? { state.withLock { $0.error } }

    func open() {
        state.withLock { $0 = (true, nil) }
    }

    func close(_ error: (any Error)? = nil) {
        state.withLock { $0 = (false, error.map { ErrorWords.describe($0) } ?? $0.error) }
    }
}

/// A store call of the dispatcher that did not answer within `Settings.storeDeadline`.
struct DispatcherStoreTimeout: Error, CustomStringConvertible {
    var what: String
    var limit: Duration
    var description: String { "\(what): no answer from the database within \(limit.components.seconds) s" }
}

/// The dispatcher's claim loop has not turned for a while (`Settings.stallAfter`).
struct DispatcherStalled: Error, CustomStringConvertible {
    var seconds: Int
    var recording: String?
    var description: String {
        "delivery stalled: no dispatcher pass completed for \(seconds) s"
            + (recording.map { "; outcomes cannot be recorded: \($0)" } ?? "")
    }
}

/// Spaces sends to one receiver to at most `rate` per second, smoothing bursts instead of provoking 429s.
actor Pacer {
    private var next: [String: Int64] = [:]

    func wait(receiver: String, rate: Double, clock: @Sendable () -> Int64) async throws {
        let gap = Int64(1000 / rate)
        let now = clock()
        let slot = max(now, next[receiver] ?? now)
        next[receiver] = slot + gap
        if slot > now { try await Task.sleep(for: .milliseconds(slot - now)) }
    }
}

/// A wake-up that is not lost: `signal` before `wait` makes the next `wait` return at once. Unlike an
/// `AsyncStream`, a waiter's cancellation ends only its own wait, never the signal for the next one.
public final class Nudge: Sendable {
    private struct State {
        var signalled = false
        var waiter: (id: UInt64, continuation: CheckedContinuation<Void, Never>)? = nil
        var next: UInt64 = 0
    }
    private let state = Mutex(State())

    public init() {}

    public func signal() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let w = s.waiter else {
                s.signalled = true
                return nil
            }
            s.waiter = nil
            return w.continuation
        }
        waiter?.resume()
    }

    /// Returns after `milliseconds`, on a signal, or on cancellation, whichever comes first.
    public func wait(milliseconds: Int64) async {
        let id = state.withLock { s -> UInt64? in
            if s.signalled {
                s.signalled = false
                return nil
            }
            s.next &+= 1
            return s.next
        }
        guard let id else { return }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(milliseconds))
            self?.end(id)
        }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    // Signalled, timed out or cancelled before the continuation existed.
                    if s.signalled || s.next != id {
                        s.signalled = false
                        return true
                    }
                    s.waiter = (id, c)
                    return false
                }
                if now { c.resume() }
            }
        } onCancel: {
            self.end(id)
        }
    }

    /// Ends the wait `id` if it is still the one waiting.
    private func end(_ id: UInt64) {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if let w = s.waiter, w.id == id {
                s.waiter = nil
                return w.continuation
            }
            // Not waiting yet: mark the id spent so the wait does not start.
            if s.waiter == nil, s.next == id { s.next &+= 1 }
            return nil
        }
        waiter?.resume()
    }
}
