import KlaxonCore
import Synchronization

/// The polled sources' `SourceStreak`s, by source. A streak starts from the store's count of
/// failures (a daemon restarted while a source fails goes on counting); when it began is known
/// for streaks that began in this process.
final class SourceStreaks: Sendable {
    private let streaks = Mutex<[String: SourceStreak]>([:])
    /// Sources that have fetched successfully since the daemon started.
    private let succeeded = Mutex<Set<String>>([])

    /// Whether this is `source`'s first successful fetch in this process (and notes it).
    func firstSuccess(_ source: String) -> Bool {
        succeeded.withLock { $0.insert(source).inserted }
    }

    /// Records a fetch's outcome at `now` (seconds); the line to log, if the state changed.
    func record(_ o: Fetch.Outcome, at now: Int64) -> SourceStreak.Line? {
        streaks.withLock { all in
            var streak =
                all[o.source]
                ?? SourceStreak(failures: o.failuresBefore, lastError: o.errorBefore)
            if streak.failures != o.failuresBefore {
                // Another instance fetched in between (PostgreSQL, duties moved): the store knows best.
                streak = SourceStreak(failures: o.failuresBefore, lastError: o.errorBefore)
            }
            defer { all[o.source] = streak }
            if let error = o.error { return streak.failed(source: o.source, error: error, at: now) }
            return streak.succeeded(source: o.source, at: now)
        }
    }
}
