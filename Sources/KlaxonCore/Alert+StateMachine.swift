/// The condition lifecycle shared by condition-style kinds (`threshold`, later `rate`):
/// inactive → pending → firing → inactive, with a hold time (`for`) and a separate clear condition
/// (hysteresis). Semantics match Prometheus alerting rules with `for:` on evenly spaced readings.
extension AlertState {
    public enum ConditionAction: Sendable, Equatable {
        case none
        /// The condition became true; the alert waits out `for`.
        case startedPending
        /// The condition broke before `for` was reached; the alert never fired.
        case cancelledPending(since: Int64)
        /// The alert fired; `since` is when the condition first held.
        case fired(since: Int64)
        /// A firing alert met its clear condition; `since` is when it fired.
        case resolved(since: Int64)
    }

    /// Feeds one reading's verdicts into the lifecycle.
    /// - Parameters:
    ///   - active: the alerting condition holds for this reading.
    ///   - cleared: the clear condition holds (only looked at while firing).
    ///   - holdFor: seconds the condition must hold before firing (0 = fire at once).
    public mutating func observe(time: Int64, active: Bool, cleared: Bool, holdFor: Int64) -> ConditionAction {
        switch status {
        case .inactive:
            guard active else { return .none }
            if holdFor <= 0 {
                status = .firing
                since = time
                return .fired(since: time)
            }
            status = .pending
            since = time
            return .startedPending
        case .pending:
            let start = since ?? time
            guard active else {
                status = .inactive
                since = nil
                return .cancelledPending(since: start)
            }
            guard time.subtractingClamped(start) >= holdFor else { return .none }
            status = .firing
            since = time
            return .fired(since: start)
        case .firing:
            guard cleared else { return .none }
            let firedAt = since ?? time
            status = .inactive
            since = nil
            return .resolved(since: firedAt)
        }
    }

    /// The series' sampling interval at a reading at `time` (called before the engine records it):
    /// the shorter of the gap since the last reading and the gap before it (one long gap, a feed
    /// that stopped for an hour, does not make a five-minute series hourly); for a revision of the
    /// last reading, the gap that led to it. Nil before two readings.
    func cadence(at time: Int64) -> Int64? {
        guard let last = lastTime else { return nil }
        guard time > last else { return interval }
        let gap = time.subtractingClamped(last)
        return interval.map { min($0, gap) } ?? gap
    }

    /// Moves a `levels` alert to the level at `target` (nil = below every level), waiting out `minDwell`.
    /// Returns the announced move (from, to), or nil when nothing is announced yet.
    ///
    /// The dwell is measured in data time. A series sampled less often than `minDwell` (`cadence`
    /// longer than it: an hourly AQI against the 10-minute default) has one reading stand for more
    /// than the whole dwell, so the first reading of a new level meets it: waiting for the next
    /// sample would only announce the level a sampling interval late. A dwell as long as the
    /// interval or longer still waits for readings that span it.
    public mutating func observeLevel(
        time: Int64, current: Int?, target: Int?, names: [String], minDwell: Int64
    ) -> (from: Int?, to: Int?, heldSince: Int64)? {
        if target == current {
            candidate = nil
            candidateSince = nil
            return nil
        }
        var heldSince = time
        if minDwell > 0 {
            // Keep the clock running while the value stays on the same side of the announced level,
            // even if the exact target moves (a river rising through two levels inside the dwell time).
            let rising = (target ?? -1) > (current ?? -1)
            if let cs = candidateSince, let previous = candidate,
                let previousIndex = previous == "" ? -1 : names.firstIndex(of: previous),
                (previousIndex > (current ?? -1)) == rising
            {
                heldSince = cs
            }
            candidate = target.map { names[$0] } ?? ""
            candidateSince = heldSince
            guard time.subtractingClamped(heldSince) >= minDwell || (cadence(at: time) ?? 0) > minDwell else {
                return nil
            }
        }
        candidate = nil
        candidateSince = nil
        level = target.map { names[$0] }
        if target == nil {
            status = .inactive
            since = nil
        } else if current == nil {
            status = .firing
            since = time
        }
        return (current, target, heldSince)
    }
}
