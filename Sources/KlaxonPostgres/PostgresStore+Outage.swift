import Foundation
import KlaxonCore
import KlaxonStore
import Logging
import PostgresNIO
import Synchronization

/// Whether the server can be reached, as the store last found: while it cannot, a call fails at once
/// ("unreachable") instead of waiting in the pool, which holds a request for up to a minute while it
/// retries a server that is down. A call that meets a lost connection, or a read still waiting
/// after a second, has the server probed with a connection of its own (outside the pool); a probe
/// every second while it is down ends the outage as soon as the server answers.
final class Outage: Sendable {
    private struct State {
        var down = false
        var probing = false
        var reason = ""
    }
    private let state = Mutex(State())

    var isDown: Bool { state.withLock { $0.down } }
    var reason: String { state.withLock { $0.reason } }

    /// Whether a connection error (the server closed it, refused it, or could not be reached).
    static func isConnectionLoss(_ error: any Error) -> Bool {
        // The pool's own errors (its circuit breaker tripped: no connection could be made); its
        // module is not one PostgresNIO exports.
        if String(reflecting: type(of: error)).hasSuffix("ConnectionPoolError") { return true }
        guard let e = error as? PSQLError else { return false }
        if let state = e.serverInfo?[.sqlState] {
            // Class 08 (connection exception); 57P01-57P03 (admin/crash shutdown, cannot connect now).
            return state.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(state)
        }
        switch e.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown: return true
        default: return false
        }
    }

    /// The server may be gone: probe it (once at a time) with `check`; down until a probe succeeds.
    func suspect(_ why: String, check: @escaping @Sendable () async -> Bool, logger: Logger) {
        let start = state.withLock { s -> Bool in
            if s.reason.isEmpty || !s.down { s.reason = why }
            guard !s.probing else { return false }
            s.probing = true
            return true
        }
        guard start else { return }
        Task.detached { [self] in
            while true {
                let ok = await check()
                let wasDown = state.withLock { s -> Bool? in
                    let was = s.down
                    if ok {
                        s.down = false
                        s.probing = false
                        s.reason = ""
                        return was
                    }
                    s.down = true
                    return nil
                }
                if let wasDown {
                    if wasDown { logger.notice("database reachable again") }
                    return
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }
}

extension PostgresStore {
    /// Fails at once while the server is known to be unreachable.
    func checkReachable() throws {
        guard outage.isDown else { return }
        throw PostgresStoreError.unreachable(path: path, message: outage.reason)
    }

    /// Notes an error of a call: a lost connection has the server probed.
    func noteFailure(_ error: any Error) {
        guard Outage.isConnectionLoss(error) else { return }
        suspectOutage(PostgresStore.connectFailure(error))
    }

    func suspectOutage(_ why: String) {
        let configuration = self.configuration
        let logger = self.logger
        outage.suspect(
            why,
            check: {
                await Self.first(within: Self.reachableWithin, otherwise: false) {
                    (try? await Self.checkConnection(configuration, logger: logger)) != nil
                }
            }, logger: logger)
    }

    /// `work` (a read on a connection of the pool), but a wait that outlasts a second has the server
    /// probed, and the wait ends as soon as it is found unreachable.
    func racingOutage<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        try checkReachable()
        let task = Task { try await work() }
        var waited = 0
        while true {
            if let result = await Bounded.result(of: task, within: .seconds(1), orUntilCancelled: true) {
                return try result.get()
            }
            if Task.isCancelled {
                task.cancel()
                throw CancellationError()
            }
            waited += 1
            if waited == 1 { suspectOutage("no connection within 1 s") }
            if outage.isDown {
                task.cancel()
                throw PostgresStoreError.unreachable(path: path, message: outage.reason)
            }
        }
    }
}
