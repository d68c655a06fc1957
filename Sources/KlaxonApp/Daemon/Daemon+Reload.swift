import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import Logging
import Synchronization

/// The config and rules a daemon runs with, and what is built from them once per set.
struct RunningSet: Sendable {
    var config: Config
    var rules: [Rule]
    /// The rules' templates, compiled once (the rules were checked when they were loaded).
    var renderer: MessageRenderer?
    /// The routing, or nil without receivers (transitions are then printed).
    var routing: Routing? { config.receivers.isEmpty ? nil : config.routing }

    init(config: Config, rules: [Rule]) {
        self.config = config
        self.rules = rules
        renderer = try? MessageRenderer(rules: rules)
    }
}

extension Daemon {
    /// What a reload reads: the config and rule files again, checked as at the start. It throws what
    /// the start would have refused (`DiagnosticsError`, with FILE:LINE:COL); `warnings` are logged.
    /// It runs off the cooperative pool (it reads files).
    public typealias Loader = @Sendable () throws -> (config: Config, rules: [Rule], warnings: [String])

    /// What a reload did.
    public enum ReloadOutcome: Sendable, Equatable {
        /// The new set is in force. `restartNeeded`: settings that only a restart applies (they keep
        /// their running values until then). `warnings`: what the operator should know of it (a
        /// receiver removed with notifications still queued for it), also logged.
        case reloaded(rules: Int, sources: Int, receivers: Int, restartNeeded: [String], warnings: [String] = [])
        /// A file was bad (or there is nothing to reload from): the running set stays.
        case failed([String])

        public var succeeded: Bool { if case .reloaded = self { true } else { false } }
    }

    /// Reads the config and the rules again (SIGHUP, `POST /-/reload`) and puts them in force whole,
    /// or not at all: a file that does not load or check keeps the running set, its errors are logged
    /// with FILE:LINE:COL, and `klaxon_config_last_reload_successful` becomes 0.
    ///
    /// What takes effect at once: rules (alert states of rules that keep their name carry over, as
    /// across a restart: they live in the store), receivers and routing (from the dispatcher's next
    /// batch), sources (a source added, removed or changed starts or stops its poller; the others
    /// poll on undisturbed), retention, quiet hours, templates. What needs a restart: `listen:`,
    /// `database:`, and the HTTP server's settings (`api:`, `chat:`, `site:`); a change to them is
    /// logged and the running values stay.
    public func reload(trigger: String) async -> ReloadOutcome {
        await reloads.run { await self.reloadNow(trigger: trigger) }
    }

    private func reloadNow(trigger: String) async -> ReloadOutcome {
        let outcome: ReloadOutcome
        let now = Date()
        do {
            guard let loader else { throw UserError("this daemon was not started from a config file") }
            let (config, rules, warnings) = try await offPool(loader)
            for w in warnings { logger.warning("\(w)") }
            let old = running.withLock { $0 }
            let restart = Self.restartOnly(old: old.config, new: config)
            // What only a restart applies keeps its running value, so the set in force says what runs.
            var next = config
            next.listen = old.config.listen
            next.store = old.config.store
            next.apiToken = old.config.apiToken
            next.ownerTokens = old.config.ownerTokens
            next.slackSigningSecret = old.config.slackSigningSecret
            next.mattermostToken = old.config.mattermostToken
            next.telegramSecretToken = old.config.telegramSecretToken
            next.slackResponseURLPrefixes = old.config.slackResponseURLPrefixes
            next.site = old.config.site
            // Built before anything is swapped: a receiver that cannot be built fails the reload.
            let delivery = try dispatcher.value.map { _ in
                (
                    notifiers: try DeliveryWiring.notifiers(next, charts: emailCharts(next)),
                    settings: DeliveryWiring.settings(
                        next, observeSend: observeSend, observeFailure: observeFailure,
                        observeUnsentResolve: observeUnsentResolve, observeFold: observeFold)
                )
            }
            // Receivers that are gone (removed, or renamed: a name is all the outbox knows): their
            // queued notifications will go dead. Counted before the swap, said in the log and the answer.
            let orphaned = await orphanedRows(old: old.config, new: next)
            let set = RunningSet(config: next, rules: rules)
            running.withLock { $0 = set }
            metrics.rules(rules)
            if let delivery, let dispatcher = dispatcher.value {
                dispatcher.reconfigure(
                    notifiers: delivery.notifiers, routing: next.routing, settings: delivery.settings)
                metrics.receivers(delivery.notifiers.mapValues(\.integration))
            }
            reloaded.advance()
            // Rules that are gone (removed, or renamed: a name is all an alert knows): their firing
            // alerts are resolved now, saying why, between this daemon's evaluations.
            removedRules.note(old: old.rules, new: rules)
            let resolved = await evaluations.run { await self.resolveRemovedRules(trigger: trigger) }
            wake.yield()
            for setting in restart {
                logger.warning("changed in the config; takes effect at a restart", metadata: ["setting": "\(setting)"])
            }
            var notes: [String] = []
            for (receiver, count) in orphaned {
                let queued = count.atLeast ? "at least \(count.rows)" : "\(count.rows)"
                notes.append(
                    "receiver \(receiver) is no longer in the config: its \(queued) queued notification\(count.rows == 1 && !count.atLeast ? "" : "s") will go dead (a renamed receiver does not take them over)"
                )
                logger.warning(
                    "receiver removed by the reload; its queued notifications will go dead",
                    metadata: ["receiver": "\(receiver)", "queued": .stringConvertible(queued)])
            }
            for (rule, n) in resolved {
                notes.append(
                    "rule \(rule) is no longer in the rules: its \(n) firing alert\(n == 1 ? " was" : "s were") resolved"
                )
            }
            outcome = .reloaded(
                rules: rules.count, sources: next.sources.count, receivers: next.receivers.count,
                restartNeeded: restart, warnings: notes)
            logger.notice(
                "configuration reloaded",
                metadata: [
                    "trigger": "\(trigger)", "rules": .stringConvertible(rules.count),
                    "sources": .stringConvertible(next.sources.count),
                    "receivers": .stringConvertible(next.receivers.count),
                    "resolved": .stringConvertible(resolved.reduce(0) { $0 + $1.alerts }),
                ])
        } catch let error as DiagnosticsError {
            outcome = .failed(error.diagnostics.map(\.description))
        } catch {
            outcome = .failed(["\(error)"])
        }
        if case .failed(let errors) = outcome {
            for e in errors {
                logger.error(
                    "reload failed; the running configuration stays",
                    metadata: ["trigger": "\(trigger)", "error": "\(e)"])
            }
        }
        metrics.configReloaded(success: outcome.succeeded, at: now)
        return outcome
    }

    /// The most queued rows read to count a removed receiver's: past it, the count says "at least".
    static let orphanCountLimit = 100_000

    /// For each receiver of `old` that `new` no longer has, how many notifications are queued for it
    /// (pending or being sent), if any. Rows are read only when a receiver went away, and at most
    /// `orphanCountLimit` of each state. A store that cannot answer makes no warning: the reload
    /// itself does not depend on it.
    func orphanedRows(old: Config, new: Config) async -> [(receiver: String, count: (rows: Int, atLeast: Bool))] {
        let gone = Set(old.receivers.map(\.name)).subtracting(new.receivers.map(\.name))
        guard !gone.isEmpty else { return [] }
        var counts: [String: Int] = [:]
        var atLeast = false
        for state in [OutboxRecord.State.pending, .sending] {
            guard let rows = try? await store.outbox(state: state, limit: Self.orphanCountLimit) else { return [] }
            if rows.count >= Self.orphanCountLimit { atLeast = true }
            for row in rows where gone.contains(row.receiver) { counts[row.receiver, default: 0] += 1 }
        }
        return counts.sorted { $0.key < $1.key }.map { ($0.key, ($0.value, atLeast)) }
    }

    /// The settings that changed and that only a restart applies.
    static func restartOnly(old: Config, new: Config) -> [String] {
        var out: [String] = []
        if old.listen != new.listen { out.append("listen") }
        if !same(old.store, new.store) { out.append("database") }
        if !same(old.apiToken, new.apiToken) || !same(old.ownerTokens, new.ownerTokens) { out.append("api") }
        if !same(ChatWiring.settings(old), ChatWiring.settings(new)) { out.append("chat") }
        if !same(old.site, new.site) { out.append("site") }
        return out
    }

    /// Whether two values hold the same data, field by field (through `dump`, which reaches every
    /// stored property, also of types that are not `Equatable`). Compared in memory, never logged:
    /// the values may hold secrets.
    static func same<T>(_ a: T, _ b: T) -> Bool {
        var x = ""
        var y = ""
        dump(a, to: &x)
        dump(b, to: &y)
        return x == y
    }
}

/// Runs one operation at a time, in the order asked (a reload waits for the one in flight).
final class ReloadQueue: Sendable {
    private let busy = Mutex<(running: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func run<T: Sendable>(_ body: @Sendable () async -> T) async -> T {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let go = busy.withLock { state -> Bool in
                if state.running {
                    state.waiters.append(c)
                    return false
                }
                state.running = true
                return true
            }
            if go { c.resume() }
        }
        defer {
            let next = busy.withLock { state -> CheckedContinuation<Void, Never>? in
                if state.waiters.isEmpty {
                    state.running = false
                    return nil
                }
                return state.waiters.removeFirst()
            }
            next?.resume()
        }
        return await body()
    }
}

/// A counter that several tasks can wait on: `next(after:)` returns once the value passed the one
/// given (at once if it already has), or when the waiting task is cancelled.
final class Generation: Sendable {
    private struct State {
        var value = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextID: UInt64 = 0
    }
    private let state = Mutex(State())

    var value: Int { state.withLock { $0.value } }

    func advance() {
        let waiters = state.withLock { s in
            s.value += 1
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for w in waiters { w.resume() }
    }

    /// The value once it is past `seen` (or the current one, if cancelled).
    @discardableResult
    func next(after seen: Int) async -> Int {
        let id = state.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.value > seen || Task.isCancelled { return true }
                    s.waiters[id] = c
                    return false
                }
                if now { c.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
        return value
    }
}
