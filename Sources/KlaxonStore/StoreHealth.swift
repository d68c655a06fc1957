import Foundation
import KlaxonCore
import Logging
import Synchronization

/// How the daemon's services are faring with the database. A service whose store call fails waits
/// and tries again (`StoreHealth.persist`); this records who is waiting and why, for `/readyz` and for
/// logs that say once when trouble starts and once when it ends.
public final class StoreHealth: Sendable {
    public struct Trouble: Sendable, Equatable {
        /// Milliseconds since the epoch.
        public var since: Int64
        public var error: String
        /// The database was locked by another connection (SQLITE_BUSY or SQLITE_LOCKED).
        public var busy: Bool
    }

    private let failing = Mutex<[String: Trouble]>([:])
    /// The database file's last check (see `noteFile`).
    private let fileCheck = Mutex<StoreFileCheck>(.ok)

    /// The duties this instance takes part in (see `Store.holding(duty:_:)`), and which it holds now.
    public let duties = Duties()

    public init() {}

    /// Services in trouble now, by name.
    public var troubles: [String: Trouble] { failing.withLock { $0 } }

    /// The database file's state as last checked: ok, deleted, replaced or truncated.
    public var file: StoreFileCheck { fileCheck.withLock { $0 } }

    /// Records a check of the database file; true when its state changed.
    public func noteFile(_ check: StoreFileCheck) -> Bool {
        fileCheck.withLock { old in
            defer { old = check }
            return old.state != check.state
        }
    }

    /// `ok`, `deleted`, `replaced` or `truncated` (the database file changed under the process), `busy` (another
    /// process holds the write lock) or `failing`.
    public var state: String {
        if file.state != .ok { return file.state.rawValue }
        let all = troubles.values
        if all.isEmpty { return "ok" }
        return all.contains { $0.busy } ? "busy" : "failing"
    }

    /// Records a failure of `service`; true when it starts a spell of trouble.
    func fail(_ service: String, _ error: any Error, now: Int64) -> Bool {
        failing.withLock { map in
            let isNew = map[service] == nil
            map[service] = Trouble(
                since: map[service]?.since ?? now, error: StoreHealth.describe(error), busy: StoreHealth.isBusy(error))
            return isNew
        }
    }

    /// Records a success; returns the trouble it ends, if any.
    func recover(_ service: String) -> Trouble? {
        failing.withLock { $0.removeValue(forKey: service) }
    }

    /// An error in words for people: what a database failure means (disk full, file deleted), else as is.
    public static func describe(_ error: any Error) -> String {
        StoreFailure.classify(error)?.words ?? ErrorWords.describe(error)
    }

    /// Records a failed store call of `service` (an HTTP request, say) that is not retried here: the
    /// first of a spell is logged at error level; `/readyz` says `failing` until `succeeded`.
    /// `message` is the error line's text.
    public func failed(_ service: String, _ error: any Error, logger: Logger, message: String = "database write failed")
    {
        if fail(service, error, now: Int64(Date().timeIntervalSince1970 * 1000)) {
            logger.error(
                "\(message)", metadata: ["service": "\(service)", "error": "\(StoreHealth.describe(error))"])
        }
    }

    /// Records that `service`'s store calls work again (logged if it ends a spell).
    public func succeeded(_ service: String, logger: Logger) {
        guard let ended = recover(service) else { return }
        let ms = Int64(Date().timeIntervalSince1970 * 1000) - ended.since
        logger.notice("database usable again", metadata: ["service": "\(service)", "after_ms": .stringConvertible(ms)])
    }

    /// Whether an error is the database saying another connection holds the lock.
    public static func isBusy(_ error: any Error) -> Bool {
        StoreFailure.classify(error)?.kind == .busy
    }

    /// Runs `body` until it succeeds: after a failure it waits (exponential, from 100 ms to `cap`
    /// seconds) and tries again, logging once when the trouble starts and once when it ends. Only
    /// cancellation ends it early (rethrown). A service's store error never ends the daemon.
    public func persist<T: Sendable>(
        _ service: String, logger: Logger, cap: Double = 5, stop: @Sendable () -> Bool = { false },
        _ body: () async throws -> T
    ) async throws -> T {
        var attempt = 0
        while true {
            do {
                let value = try await body()
                if let ended = recover(service) {
                    let ms = Int64(Date().timeIntervalSince1970 * 1000) - ended.since
                    logger.notice(
                        "database usable again",
                        metadata: [
                            "service": "\(service)", "after_ms": .stringConvertible(ms),
                            "attempts": .stringConvertible(attempt + 1),
                        ])
                }
                return value
            } catch let error as CancellationError {
                throw error
            } catch {
                if Task.isCancelled || stop() { throw error }
                attempt += 1
                if fail(service, error, now: Int64(Date().timeIntervalSince1970 * 1000)) {
                    logger.warning(
                        StoreHealth.isBusy(error)
                            ? "database busy (another process holds it); waiting and retrying"
                            : "database error; waiting and retrying",
                        metadata: ["service": "\(service)", "error": "\(StoreHealth.describe(error))"])
                }
                let delay = min(cap, 0.1 * pow(2, Double(min(attempt - 1, 16))))
                try await Task.sleep(for: .milliseconds(Int64(delay * 1000)))
            }
        }
    }
}

/// The duties an instance takes part in — each source's polling, the evaluator, the pruner — and
/// whether it holds each one now or waits on standby while another instance holds it. On SQLite
/// every duty is held; with several daemons on one PostgreSQL database, one instance holds each.
public final class Duties: Sendable {
    private let state = Mutex<[String: Bool]>([:])

    public init() {}

    /// `duty` is one this instance takes part in; it is on standby until `took`.
    public func want(_ duty: String) { state.withLock { if $0[duty] == nil { $0[duty] = false } } }

    /// This instance holds `duty` now.
    public func took(_ duty: String) { state.withLock { $0[duty] = true } }

    /// This instance no longer holds `duty` (it let it go, lost it, or never got it).
    public func released(_ duty: String) { state.withLock { $0[duty] = false } }

    /// Every duty, sorted by name, with whether it is held.
    public var all: [(duty: String, held: Bool)] {
        state.withLock { $0 }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Duties held now, sorted.
    public var held: [String] { all.filter(\.held).map(\.duty) }

    /// Duties waited for (another instance holds them), sorted.
    public var standby: [String] { all.filter { !$0.held }.map(\.duty) }
}
