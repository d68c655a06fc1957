import Foundation
import KlaxonCore
import KlaxonServer
import KlaxonStore
import Logging
import ServiceLifecycle

/// Every few seconds: is the database file still the one the daemon opened (not deleted, not
/// replaced)? A change is logged once (error level when it goes wrong), `klaxon_database_file_ok`
/// says it, and `/readyz` fails meanwhile (the writer already refuses to commit to a lost file).
/// While HTTP requests' writes have failed (a full disk), it also tries a small write, so `/readyz`
/// is ready again once writes work.
struct DatabaseWatchService: Service {
    let daemon: Daemon
    var every: Duration = .seconds(2)

    func run() async throws {
        try await untilGracefulShutdown {
            while !Task.isCancelled {
                await daemon.checkDatabaseFile()
                try await Task.sleep(for: every)
            }
        }
    }
}

extension Daemon {
    /// One check of the database file (a `stat`, off the pool), and of whether writes work again.
    func checkDatabaseFile() async {
        let store = self.store
        let check = (try? await offPool { store.storeFile() }) ?? .ok
        if health.noteFile(check) {
            if let message = check.message {
                logger.error(
                    "database file \(check.state.rawValue)",
                    metadata: ["database": "\(store.path)", "error": "\(message)"])
            } else {
                logger.notice("database file is the one opened again", metadata: ["database": "\(store.path)"])
            }
        }
        metrics.databaseFile(ok: check.state == .ok)
        await KlaxonHTTP.recordWriteWorks(store: store, health: health, logger: logger)
    }
}
