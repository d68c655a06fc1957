import Foundation
import Synchronization

/// A child process's end, awaited without blocking a thread. Make it before the process runs: it
/// installs the process's termination handler.
public final class ProcessExit: Sendable {
    private enum State {
        case running([CheckedContinuation<Void, Never>])
        case exited
    }

    private let state = Mutex(State.running([]))

    public init(_ process: Process) {
        process.terminationHandler = { [self] _ in
            let waiters = state.withLock { state in
                defer { state = .exited }
                if case .running(let waiters) = state { return waiters }
                return []
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    public var hasExited: Bool {
        state.withLock {
            if case .exited = $0 { return true }
            return false
        }
    }

    /// Waits for the exit; true if it came within `limit` (false too if the caller is cancelled first).
    public func wait(within limit: Duration) async -> Bool {
        await ended(Task { await self.exit() }, within: limit)
    }

    private func exit() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                guard case .running(let waiters) = state else { return true }
                state = .running(waiters + [continuation])
                return false
            }
            if now { continuation.resume() }
        }
    }
}
