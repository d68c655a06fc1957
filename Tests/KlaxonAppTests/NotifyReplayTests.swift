import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import Testing

/// `NotifyReplay`: readings through the real store and dispatcher on a moved clock, so `dry-run
/// --config` and `klaxon test`'s `sent:` show what a team would receive.
@Suite("notify replay: what a team would receive, through the store and the dispatcher", .timeLimit(.minutes(10)))
struct NotifyReplayTests {
    let t0 = Timestamp.parse("2026-01-01T00:00:00Z")!
    let high = Rule(
        name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10), severity: .warning)

    static func reading(_ station: String, _ time: Int64, _ value: Double) -> Reading {
        Reading(station: station, metric: "gage_height", time: time, value: value)
    }

    /// Each notification as `time receiver: headline; headline…`.
    static func show(_ sent: [NotifyReplay.Sent]) -> [String] {
        sent.map { s in
            "\(Timestamp.format(s.at / 1000)) \(s.notification.receiver): "
                + s.notification.alerts.map(WebhookPayloads.title).joined(separator: "; ")
        }
    }

    @Test("a group_wait timer fires between two evaluations, at its own time; flush(until:) stops at its bound")
    func groupWaitFiresBetweenSteps() async throws {
        let routing = Routing(routes: [Route(receivers: ["team"], groupWait: 600)])
        let t0 = self.t0
        let (early, sent) = try await NotifyReplay.with(rules: [high], routing: routing, receivers: ["team"]) {
            replay in
            try await replay.step(readings: [Self.reading("G1", t0, 12)], at: t0)
            let early = try await replay.flush(until: t0 + 599)
            try await replay.step(readings: [Self.reading("G1", t0 + 900, 12)], at: t0 + 900)
            return (early, try await replay.flush(until: t0 + 900))
        }
        #expect(early.isEmpty, "not before group_wait")
        #expect(sent.map(\.at) == [(t0 + 600) * 1000], "sent when the timer fell due, not at the next evaluation")
        #expect(Self.show(sent) == ["2026-01-01T00:10:00Z team: 🟠 G1: gage height 12, at or above 10"])
    }

    @Test("a firing and its resolve inside group_wait: folded into one row, and the resolve nobody heard is not sent")
    func unheardResolveIsNotSent() async throws {
        let routing = Routing(routes: [Route(receivers: ["team"], groupWait: 600)])
        let t0 = self.t0
        let (sent, counts) = try await NotifyReplay.with(rules: [high], routing: routing, receivers: ["team"]) {
            replay in
            (
                try await replay.replay([Self.reading("G1", t0, 12), Self.reading("G1", t0 + 300, 9)]),
                try await replay.outboxCounts()
            )
        }
        #expect(sent.isEmpty)
        #expect(counts[.superseded] == 1 && counts[.skipped] == 1, "\(counts)")
    }

    @Test(
        "replay() evaluates readings that record nothing together with the next ones, and sends exactly what stepping every reading time does"
    )
    func chunkedReplayMatchesEveryStep() async throws {
        let rules = [
            Rule(
                name: "stages",
                kind: LevelsRule(
                    metric: "gage_height",
                    levels: [
                        .init(name: "action", at: 9), .init(name: "minor", at: 11), .init(name: "moderate", at: 13),
                    ]),
                severity: .critical),
            Rule(name: "quiet", kind: StaleRule(metric: "gage_height", after: 3600), severity: .info),
        ]
        let routing = Routing(routes: [
            Route(receivers: ["chat", "pager"], groupBy: ["rule"], groupWait: 120, groupInterval: 1800)
        ])
        var readings: [Reading] = []
        let shapes: [String: [Double]] = [
            "A": [8, 9.5, 9.6, 11.5, 13.5, 13.2, 11.2, 9.2, 8, 8, 8, 8, 8, 8, 8, 8],
            "B": [8, 8, 8, 9.5, 9.5, 9.5, 11.5, 11.5, 8],  // then quiet: the stale rule fires
            "C": [12, 12, 12, 12, 12, 12, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8],
        ]
        for (station, values) in shapes {
            for (i, v) in values.enumerated() { readings.append(Self.reading(station, t0 + Int64(i) * 900, v)) }
        }
        let end = t0 + 16 * 900
        let chunked = try await NotifyReplay.with(
            rules: rules, routing: routing, receivers: ["chat", "pager"]
        ) { replay in
            try await replay.replay(readings.shuffled(), end: end)
        }
        let stepped = try await NotifyReplay.with(
            rules: rules, routing: routing, receivers: ["chat", "pager"]
        ) { replay in
            let byTime = Dictionary(grouping: readings, by: \.time)
            for time in byTime.keys.sorted() { try await replay.step(readings: byTime[time]!, at: time) }
            try await replay.step(readings: [], at: end)
            return try await replay.flush()
        }
        #expect(!chunked.isEmpty)
        #expect(Self.show(chunked) == Self.show(stepped))
        #expect(Set(chunked.map(\.notification.receiver)) == ["chat", "pager"])
        #expect(
            Self.show(chunked).contains { $0.contains("B: no gage height readings for 1h") }, "\(Self.show(chunked))")
    }

    @Test("dry-run --config: the transitions recorded, then what each receiver would get, and how many were folded")
    func dryRunShowsRecordedAndSent() async throws {
        let s = try Scratch()
        try s.write("rules/r.yaml", levelsRule + "\nnotify: [ops]\n")
        try s.write(
            "r.csv",
            """
            station,metric,time,value
            G1,gage_height,2026-01-01T00:00:00Z,9
            G1,gage_height,2026-01-01T00:15:00Z,10.5
            G1,gage_height,2026-01-01T00:30:00Z,12.5
            G1,gage_height,2026-01-01T00:45:00Z,12.5
            G1,gage_height,2026-01-01T01:00:00Z,9
            """)
        let config = try s.write(
            "klaxon.yaml",
            """
            rules: rules
            receivers:
              - {name: ops, type: stdout}
            routes:
              - {receivers: [ops], group_interval: 1h}
            """)
        let text = await InProcess.dryRun(readings: [s.path("r.csv")], config: config)
        #expect(text.status == 0, "\(text.stderr)")
        // Three transitions recorded; two messages: the firing at once, then (after group_interval)
        // the resolve, which took the place of the change to minor.
        #expect(text.lines.filter { $0.contains("  stages  ") }.count == 3, "\(text.stdout)")
        let section = Array(text.lines.drop { $0 != "what would be sent:" })
        #expect(section.count == 4, "\(text.stdout)")
        #expect(section.dropFirst().first?.hasPrefix("AT") == true)
        #expect(section.dropFirst(2).first?.hasPrefix("2026-01-01T00:15:00Z  ops       firing    ") == true)
        #expect(section.dropFirst(2).first?.hasSuffix("G1: action stage") == true, "\(section)")
        #expect(section.dropFirst(3).first?.hasPrefix("2026-01-01T01:15:00Z  ops       resolved  ") == true)
        #expect(section.dropFirst(3).first?.hasSuffix("G1: below action stage again") == true, "\(section)")
        #expect(
            text.errorLines.contains(
                "dry-run: 3 transitions recorded; 2 notifications would be sent (1 folded, 0 not sent)"),
            "\(text.stderr)")

        let json = await InProcess.dryRun(readings: [s.path("r.csv")], format: .json, config: config)
        let objects = try jsonObjects(json.lines)
        #expect(objects.filter { $0["type"] == nil }.count == 3, "the transition lines are unchanged")
        let notes = objects.filter { $0["type"] as? String == "notification" }
        #expect(notes.map { $0["receiver"] as? String } == ["ops", "ops"])
        #expect(notes.map { $0["status"] as? String } == ["firing", "resolved"])
        #expect(notes.map { $0["at"] as? String } == ["2026-01-01T00:15:00Z", "2026-01-01T01:15:00Z"])

        // Without --config nothing changes.
        let plain = await InProcess.dryRun(rules: [s.path("rules")], readings: [s.path("r.csv")])
        #expect(plain.status == 0)
        #expect(!plain.stdout.contains("what would be sent"))
        #expect(!plain.stderr.contains("would be sent"))
    }
}
