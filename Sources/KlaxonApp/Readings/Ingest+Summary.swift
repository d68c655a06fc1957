import KlaxonStore

extension Ingest.Summary {
    /// `klaxon ingest`'s closing line, `ingest: N new, N revised, N unchanged, N rejected` and what
    /// else happened (the command adds the time it took).
    public var line: String {
        var line =
            "ingest: \(stats.newTotal) new, \(stats.revisedTotal) revised, \(stats.unchangedTotal) unchanged, "
            + "\(rejected) rejected"
        if gaps > 0 { line += ", \(gaps) missing values skipped" }
        if stats.suspect > 0 { line += ", \(stats.suspect) marked suspect" }
        if stations > 0 { line += ", \(stations) station records" }
        let issuances = stats.issuances
        if issuances != ForecastCounts() {
            line += ", \(issuances.new + issuances.replaced + issuances.unchanged) forecast issuances"
            if issuances.older > 0 { line += " (\(issuances.older) older than the stored forecast, kept as history)" }
        }
        if forecastSkips > 0 { line += ", \(forecastSkips) forecast items skipped" }
        if !stats.quakeConflicts.isEmpty {
            line += ", \(stats.quakeConflicts.count) quake id conflicts (kept as separate events)"
        }
        return line
    }

    /// The command's exit status: 1 when any row or file was rejected.
    public var status: Int32 { rejected > 0 ? 1 : 0 }
}
