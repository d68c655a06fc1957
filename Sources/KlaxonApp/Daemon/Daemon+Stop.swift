import Foundation
import KlaxonCore
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

extension Daemon {
    /// How long a stop of `run` may take, from the moment it is asked for (a signal, `until`
    /// returning, the caller's cancellation): the services shut down gracefully for `graceful`,
    /// are then cancelled, and whatever still runs at `limit` is logged and abandoned.
    public struct StopBudget: Sendable {
        public var graceful: Duration
        public var limit: Duration

        public init(graceful: Duration, limit: Duration) {
            self.graceful = graceful
            self.limit = max(limit, graceful)
        }

        /// The dispatcher drains for 10 s; a service that holds the shutdown past 15 s is cancelled,
        /// and `run` returns by 17 s, inside the executable's 20 s watchdog.
        public static let standard = StopBudget(graceful: .seconds(15), limit: .seconds(17))
    }

    /// Why and when a stop was asked for.
    struct StopRequest: Sendable {
        var reason: String
        var at: ContinuousClock.Instant = .now
    }

    /// Runs `services` in a service group until SIGTERM or SIGINT (SIGHUP calls `onHangup`: a
    /// reload), until `until` returns, or until the services end or the caller is cancelled. From
    /// the moment a stop is asked for, the services shut down gracefully, are cancelled after
    /// `budget.graceful`, and whatever still runs at `budget.limit` is logged (by service) and
    /// abandoned: this returns by then whatever a service does. `until` is cut short (cancelled)
    /// when the stop comes from elsewhere. A second signal cancels the services at once. A
    /// service's error other than cancellation is rethrown.
    static func supervise(
        _ services: [any Service], logger: Logger, stop budget: StopBudget,
        until: (@Sendable () async -> Void)? = nil, onHangup: (@Sendable () -> Void)? = nil
    ) async throws {
        let tracker = ServiceTracker()
        // No signals for the group (`gracefulShutdownSignals`): SIGTERM and SIGINT are watched below,
        // where the stop's clock starts and its reason is logged, a second one cuts the stop short
        // (ServiceLifecycle ignores it, and its cancellation signals may not be the same ones), and
        // one received before the group started (`SignalWatch.firstReceived`) still stops it.
        var configuration = ServiceGroupConfiguration(
            services: services.map { .init(service: tracker.track($0)) }, logger: logger)
        configuration.maximumGracefulShutdownDuration = budget.graceful
        let group = ServiceGroup(configuration: configuration)

        let stop = OneShot<StopRequest>()
        // Unstructured, so that a service that ignores cancellation can be left behind.
        let running = Task {
            defer { stop.set(StopRequest(reason: "services ended")) }
            try await group.run()
        }
        // SIGHUP never ends the daemon: it reloads the config and rules (Prometheus' and
        // Alertmanager's habit). Watched through ServiceLifecycle's `UnixSignalsSequence`, registered
        // before this goes on (no SIGHUP sent later is missed; one sent meanwhile waits in it), and
        // counted as a watch, so the executable's own watch leaves SIGHUP to the daemon meanwhile.
        let hangupSignals = await UnixSignalsSequence(trapping: .sighup)
        SignalWatch.startedWatching(SIGHUP)
        let hangups = Task {
            for await _ in hangupSignals {
                if let onHangup { onHangup() } else { logger.notice("SIGHUP received; nothing to reload, carrying on") }
            }
        }
        defer {
            hangups.cancel()
            SignalWatch.stoppedWatching(SIGHUP)
        }
        // A second signal cuts the stop short; `run` then throws `SecondSignal`, so the exit status
        // is 128 + its number whichever ends the process first: the executable's watchdog or this.
        let again = Mutex<Int32?>(nil)
        let signals = await SignalWatch.start([SIGTERM, SIGINT]) { signo in
            if stop.set(StopRequest(reason: SignalWatch.name(signo))) {
                Task { await group.triggerGracefulShutdown() }
            } else {
                again.withLock { $0 = $0 ?? signo }
                running.cancel()
            }
        }
        defer { signals.cancel() }
        if let signo = SignalWatch.firstReceived, stop.set(StopRequest(reason: SignalWatch.name(signo))) {
            // Asked for before this watch started (the executable watches from its start).
            await group.triggerGracefulShutdown()
        }
        let story = until.map { until in
            Task {
                await until()
                if stop.set(StopRequest(reason: "until returned")) { await group.triggerGracefulShutdown() }
            }
        }

        let request = await withTaskCancellationHandler {
            await stop.value()
        } onCancel: {
            stop.set(StopRequest(reason: "cancelled"))
            running.cancel()
        }
        logger.info("klaxon stopping", metadata: ["reason": "\(request.reason)"])
        story?.cancel()
        let deadline = request.at + budget.limit
        let outcome = await Bounded.result(of: running, within: deadline - .now)
        if outcome == nil {
            running.cancel()
            logger.error(
                "services did not stop in time; left running",
                metadata: [
                    "services": "\(tracker.stillRunning.joined(separator: ", "))", "limit": "\(budget.limit)",
                    "reason": "\(request.reason)",
                ])
        }
        if let story, await !Bounded.wait(for: story, within: max(.milliseconds(100), deadline - .now)) {
            logger.error("the daemon's until did not end in time; left running")
        }
        if let signo = again.withLock({ $0 }) { throw SecondSignal(signo: signo) }
        // A service cut short by the shutdown is no failure: the shutdown itself went as planned.
        if case .failure(let error)? = outcome, !(error is CancellationError) { throw error }
    }
}

/// A second SIGTERM or SIGINT cut a stop short: the process exits with 128 + `signo` (130 for a
/// second Ctrl-C), as a shell reports a process ended by the signal.
public struct SecondSignal: Error, CustomStringConvertible, Sendable {
    public var signo: Int32
    public var description: String { "stopped at once by a second \(SignalWatch.name(signo))" }
}

/// The services of one `Daemon.run`, by name, and which of them are still running: a stop that runs
/// out of time says which service held it.
final class ServiceTracker: Sendable {
    private let running = Mutex<[String: Int]>([:])

    /// `service`, reporting its start and end here.
    func track(_ service: any Service) -> any Service {
        TrackedService(name: Self.name(of: service), base: service, tracker: self)
    }

    func started(_ name: String) { running.withLock { $0[name, default: 0] += 1 } }

    func ended(_ name: String) {
        running.withLock {
            $0[name, default: 0] -= 1
            if $0[name] == 0 { $0[name] = nil }
        }
    }

    /// The services that have started and not ended, by name.
    var stillRunning: [String] { running.withLock { $0.keys.sorted() } }

    /// `PollerService`, `EvaluatorService`, `DispatcherService`; the Hummingbird application, whose
    /// type is a long generic one, is `HTTPServer`.
    static func name(of service: any Service) -> String {
        let type = String(describing: Swift.type(of: service))
        let base = String(type.prefix { $0 != "<" })
        return base == "Application" ? "HTTPServer" : base
    }
}

/// A service that tells its tracker when it starts and ends. The graceful-shutdown hooks are
/// task-locals, so the wrapped service sees the group's shutdown as before.
struct TrackedService: Service, CustomStringConvertible {
    let name: String
    let base: any Service
    let tracker: ServiceTracker

    var description: String { name }

    func run() async throws {
        tracker.started(name)
        defer { tracker.ended(name) }
        try await base.run()
    }
}

/// Runs `operation` until the service group's graceful shutdown reaches this service, then returns.
///
/// `cancelWhenGracefulShutdown` ends the operation by cancelling it, and the `CancellationError`
/// that comes out is the planned end, not a failure: thrown on, the group took it as a failure and
/// cancelled every other service (the HTTP server logged "Waiting on child channel:
/// CancellationError()" at every stop, cut off instead of closing its connections).
func untilGracefulShutdown(_ operation: @escaping @Sendable () async throws -> Void) async throws {
    do {
        try await cancelWhenGracefulShutdown(operation)
    } catch is CancellationError where Task.isShuttingDownGracefully {
        // The shutdown asked for it.
    }
}
