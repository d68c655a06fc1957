import KlaxonRegex

extension Silence {
    /// The silences among `silences` that mute `labels` at `t`, in order, within `budget` (`first`:
    /// stop at the first). `decided` is false when the budget ran out on one: the list then holds
    /// those known to mute, and the caller says the rest were not checked.
    public static func muting(
        _ silences: [Silence], _ labels: [String: String], at t: Int64, budget: inout MatchBudget,
        first: Bool = false
    ) -> (silences: [Silence], decided: Bool) {
        var out: [Silence] = []
        var decided = true
        for s in silences {
            switch s.mutes(labels, at: t, budget: &budget) {
            case true?:
                out.append(s)
                if first { return (out, true) }
            case false?: continue
            case nil: decided = false
            }
        }
        return (out, decided)
    }

    /// Whether any of `silences` mutes `labels` at `t`, within one batch's `MatchBudget`; a silence
    /// the budget leaves undecided counts as muting (the caller holds back, and looks again later).
    public static func anyMutes(_ silences: [Silence], _ labels: [String: String], at t: Int64) -> Bool {
        var budget = MatchBudget(steps: MatchBudget.batchSteps)
        let (found, decided) = muting(silences, labels, at: t, budget: &budget, first: true)
        return !found.isEmpty || !decided
    }

    /// How many of these alerts (`Transition.matchLabels`) the silence mutes at `t`, within `budget`;
    /// `complete` is false when the budget ran out (the count is then a lower bound).
    public func muteCount(
        _ alerts: some Sequence<[String: String]>, at t: Int64, budget: inout MatchBudget
    ) -> (count: Int, complete: Bool) {
        guard isActive(at: t) else { return (0, true) }
        var count = 0
        var complete = true
        for labels in alerts {
            switch mutes(labels, at: t, budget: &budget) {
            case true?: count += 1
            case false?: break
            case nil: complete = false
            }
        }
        return (count, complete)
    }
}
