import KlaxonCore

/// The firing alerts of rules a reload removed, resolved, written once for every backend. A rule
/// that is gone (its file deleted, or its name changed: a name is all an alert knows) will never
/// evaluate its alerts again, so they would fire forever and their receivers never hear the end. A
/// backend's transaction reads each firing alert of the removed rules with its newest transition,
/// runs `resolves`, and saves and logs what it made as an evaluation does (`TransitionLog`, the
/// outbox in the same transaction), so the resolves take the path of any resolve: silences, quiet
/// hours and "only to a receiver that heard it firing" apply at delivery.
///
///     let run = RemovedRules.resolves(<firing alerts of `rules`: newest transition and alert state>, e)
///     <save run.states>; return <log run.transitions>
public enum RemovedRules {
    /// The annotation that says why the alert resolved.
    public static let reasonAnnotation = "resolve_reason"

    /// Why an alert of `rule` resolved.
    public static func reason(rule: String) -> String {
        // A person's watch (issue 43) is removed by its owner or an operator, not by a reload.
        rule.hasPrefix("watch-") ? "watch \(rule.dropFirst(6)) was removed" : "rule \(rule) was removed by a reload"
    }

    /// Resolves for each firing alert (`latest`: its newest transition; `state`: its stored state),
    /// dated `e.now`, and the states to save: inactive, keeping the last reading seen (a rule added
    /// back under the name resumes after it instead of stepping old readings again).
    public static func resolves<P: TransitionPlanner>(
        _ firing: [(latest: Transition, state: AlertState)], _ e: Evaluation<P>
    ) -> (states: [AlertStateRecord], transitions: [Transition]) {
        var states: [AlertStateRecord] = []
        var transitions: [Transition] = []
        for (latest, stored) in firing {
            let why = reason(rule: latest.rule)
            var t = latest
            t.state = .resolved
            t.fromLevel = latest.level
            t.level = nil
            t.at = e.now
            t.value = nil
            t.summary = "resolved: \(why)"
            t.explanation = "The alert resolved because \(why); it is no longer evaluated."
            t.headline = "resolved, \(why)"
            t.details = ""
            t.annotations[reasonAnnotation] = why
            transitions.append(t)
            var state = AlertState()
            state.lastTime = stored.lastTime
            state.lastValue = stored.lastValue
            states.append(AlertStateRecord(key: t.alertKey, state: state, updatedAt: e.now))
        }
        return (states, transitions)
    }

    /// The firing alerts of the rules in `ruleList` (a backend's expression for a set of names, e.g.
    /// `SELECT value FROM json_each(?)`): each one's newest transition `t` (selecting `select`) and
    /// its alert state `a`, in alert order.
    public static func firingLatest(select: String, ruleList: String) -> String {
        """
        SELECT \(select) FROM transitions t
        JOIN alert_states a ON a.rule = t.rule AND a.station = t.station AND a.metric = t.metric
        WHERE a.status = 'firing' AND a.rule IN (\(ruleList))
          AND t.id = (SELECT max(x.id) FROM transitions x
                      WHERE x.rule = a.rule AND x.station = a.station AND x.metric = a.metric)
        ORDER BY a.rule, a.station, a.metric
        """
    }
}
