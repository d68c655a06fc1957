import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonStore

/// `klaxon alerts`: the firing alerts, as `amtool alert query` lists Alertmanager's.
struct AlertsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alerts",
        abstract: "List firing alerts with their ids (for ack), severity, since when, acks and silences.",
        discussion: """
            Like `amtool alert query`: matchers filter on the labels routes and silences match (rule, station, \
            metric, severity, level and the rule's labels), e.g. `klaxon alerts rule=river-levels \
            severity=~"warn.*"`. Reads the database (never creates one). With -o json: an array of objects \
            with the fields id, rule, station, place, metric, state, severity, level, since, level_since, \
            value, unit, summary, acked_by, acked_at, silenced, silenced_by, labels.
            """)

    @OptionGroup var store: StoreOptions

    @Option(
        name: [.customShort("o"), .customLong("output"), .customLong("format")],
        help: "Output format: text (aligned columns) or json.")
    var output: OutputFormat = .text

    @Option(help: "At most this many alerts, most severe and newest first (1 to 100000).")
    var limit: Int = 10_000

    @Argument(
        help: "Matchers: KEY=VALUE, KEY!=VALUE, KEY=~REGEX or KEY!~REGEX; an alert must match them all.",
        completion: .custom { words, index, prefix in ConfigCompletion.labels(words, index, prefix) })
    var matchers: [String] = []

    struct Row: Encodable {
        var id: Int64
        var rule: String
        var station: String
        var place: String?
        var metric: String
        var state: String
        var severity: String
        var level: String?
        var since: String
        var level_since: String
        var value: Double?
        var unit: String?
        var summary: String
        var acked_by: String?
        var acked_at: String?
        var silenced: Bool
        var silenced_by: [String]
        var labels: [String: String]
    }

    func run() async throws {
        try await guarded {
            guard (1...100_000).contains(limit) else { throw ValidationError("--limit must be from 1 to 100000") }
            let filters = try matchers.map { text in
                do { return try Matcher.parse(text) } catch { throw ValidationError("\(error)") }
            }
            let now = nowSeconds()
            let rows: [Row] = try await store.withStore(readOnly: true) { db in
                let silences = try await db.activeSilences(now: now)
                var out: [Row] = []
                var cursor: FiringCursor? = nil
                // Pages of the store's own order (most severe, then newest), filtered here: matchers
                // may name any label, which the store does not index.
                repeat {
                    let page = try await db.firingAlerts(limit: 1000, after: cursor)
                    for a in page.alerts where out.count < limit {
                        let labels = a.transition.matchLabels
                        guard filters.allSatisfy({ $0.matches(labels) }) else { continue }
                        let muting = silences.filter { $0.mutes(labels, at: now) }.map(\.id)
                        out.append(
                            Row(
                                id: a.episode, rule: a.key.rule, station: a.key.station, place: a.transition.place,
                                metric: a.key.metric, state: "firing", severity: a.transition.severity.rawValue,
                                level: a.transition.level, since: Timestamp.format(a.startedAt),
                                level_since: Timestamp.format(a.transition.at), value: a.transition.value,
                                unit: a.transition.unit, summary: a.transition.summary, acked_by: a.ack?.by,
                                acked_at: a.ack.map { Timestamp.format($0.at) }, silenced: !muting.isEmpty,
                                silenced_by: muting, labels: a.transition.labels))
                    }
                    cursor = page.next
                } while cursor != nil && out.count < limit
                return out
            }
            switch output {
            case .json:
                try printJSON(rows)
            case .text:
                if rows.isEmpty {
                    print(matchers.isEmpty ? "(nothing is firing)" : "(no firing alert matches)")
                    return 0
                }
                print(
                    table(
                        ["ID", "RULE", "STATION", "PLACE", "STATE", "SEVERITY", "SINCE", "ACKED BY", "SILENCED"],
                        rows.map { r in
                            [
                                "\(r.id)", r.rule, r.station, r.place ?? "-",
                                r.level.map { "\(r.state) (\($0))" } ?? r.state,
                                r.severity, r.since, r.acked_by ?? "-",
                                r.silenced_by.isEmpty
                                    ? "no" : r.silenced_by.map { String($0.prefix(8)) }.joined(separator: ","),
                            ]
                        }))
            }
            if rows.count == limit { printError("alerts: the first \(limit); --limit shows more") }
            return 0
        }
    }
}
