import Foundation
import Synchronization

/// Starts `p` while no other test starts a process. Foundation's `Process.run()` on Linux sets up the
/// child's file actions and environment from process-wide state; a soak crashed inside it (a bad
/// read in `memcpy`) while many tests spawned `klaxon`, `python3` and `postgres` at once. Launches are
/// quick, so taking them one at a time costs nothing measurable; waiting for the child stays
/// concurrent.
public func launchProcess(_ p: Process) throws {
    try launchLock.withLock { _ in try p.run() }
}

private let launchLock = Mutex(())
