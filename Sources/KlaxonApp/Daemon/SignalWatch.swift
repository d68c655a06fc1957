import Dispatch
import Foundation
import Synchronization

/// Signals (SIGTERM, SIGINT, SIGHUP) handed to a closure on a dispatch queue of the watch's own, never
/// on the cooperative pool. Every watch of a signal sees each delivery: the daemon and the executable
/// can watch the same signals.
///
/// On Linux, libdispatch receives a watched signal through a signalfd and installs a handler that
/// redirects the signal to its manager thread; that handler stays installed after the last watch is
/// cancelled, so from then on the signal neither runs its default action (ending the process) nor
/// reaches anyone. A program that watches a signal once must therefore keep watching it for as long
/// as it should react to it (the executable does, for its whole life).
public final class SignalWatch: @unchecked Sendable {
    // @unchecked: dispatch sources are thread-safe; the array never changes after init.
    private let sources: [any DispatchSourceSignal]

    /// Starts watching `signals`; returns once every watch is registered, so no signal sent after
    /// this returns is missed. `stops`: the signals ask for a stop, so the first one received is
    /// remembered (`firstReceived`); a signal that stops nothing (SIGHUP) passes false.
    public static func start(
        _ signals: [Int32], stops: Bool = true, handler: @escaping @Sendable (Int32) -> Void
    ) async -> SignalWatch {
        let queue = DispatchQueue(label: "klaxon.signals")
        var sources: [any DispatchSourceSignal] = []
        for signo in signals {
            #if canImport(Darwin)
                // kqueue reports only signals that signal() does not act on.
                signal(signo, SIG_IGN)
            #endif
            let source = DispatchSource.makeSignalSource(signal: signo, queue: queue)
            source.setEventHandler {
                if stops { SignalWatch.first.withLock { $0 = $0 ?? signo } }
                handler(signo)
            }
            await withCheckedContinuation { (registered: CheckedContinuation<Void, Never>) in
                source.setRegistrationHandler { registered.resume() }
                source.resume()
            }
            sources.append(source)
            watching.withLock { $0[signo, default: 0] += 1 }
        }
        return SignalWatch(sources: sources, signals: signals)
    }

    private let signals: [Int32]
    private let cancelled = Mutex(false)

    private init(sources: [any DispatchSourceSignal], signals: [Int32]) {
        self.sources = sources
        self.signals = signals
    }

    private static let first = Mutex<Int32?>(nil)
    private static let watching = Mutex<[Int32: Int]>([:])

    /// How many watches of `signo` are running (not cancelled) in this process.
    public static func watches(of signo: Int32) -> Int { watching.withLock { $0[signo] ?? 0 } }

    /// A watch of `signo` kept by other means (ServiceLifecycle's `UnixSignalsSequence`), counted in
    /// `watches(of:)` from now until `stoppedWatching(_:)`.
    static func startedWatching(_ signo: Int32) { watching.withLock { $0[signo, default: 0] += 1 } }

    static func stoppedWatching(_ signo: Int32) { watching.withLock { $0[signo, default: 1] -= 1 } }

    /// The first signal any watch of this process received, if any: a watch started later (the
    /// daemon's, after the executable's) learns of a stop asked for before it started.
    public static var firstReceived: Int32? { first.withLock { $0 } }

    /// Stops watching (see the type's note on what that leaves behind on Linux).
    public func cancel() {
        let first = cancelled.withLock { was in
            defer { was = true }
            return !was
        }
        guard first else { return }
        for source in sources { source.cancel() }
        Self.watching.withLock { counts in
            for signo in signals { counts[signo, default: 1] -= 1 }
        }
    }

    deinit { cancel() }

    /// `SIGTERM`, `SIGINT`, … for logs.
    public static func name(_ signo: Int32) -> String {
        switch signo {
        case SIGTERM: "SIGTERM"
        case SIGINT: "SIGINT"
        case SIGHUP: "SIGHUP"
        case SIGQUIT: "SIGQUIT"
        default: "signal \(signo)"
        }
    }
}
