import Foundation
import KlaxonCore
import Testing

/// Issue 43: a person's own quiet hours (`quiet 22:00-07:00 Europe/Berlin`): parsed with an IANA
/// zone (UTC when none), hostile zones refused clearly, carried on their watches' rules as a label
/// that reads back, and left out of the alert's identifying labels.
@Suite struct WatchQuietHoursTests {
    func parse(_ text: String) -> Result<WatchCommand, WatchProblem>? {
        WatchCommand.parse(text, catalog: WatchCatalog())
    }

    func problem(_ text: String) -> String? {
        if case .failure(let p)? = parse(text) { return p.message }
        return nil
    }

    @Test("quiet FROM-TO takes an IANA zone in any case, spelled back as the zone database spells it; UTC by default")
    func zones() throws {
        #expect(parse("quiet 22:00-07:00") == .success(.quiet(WatchQuietHours(from: 1320, to: 420, timeZone: "UTC")!)))
        guard case .success(.quiet(let berlin))? = parse("quiet 22:00-07:00 europe/berlin") else {
            Issue.record("not parsed")
            return
        }
        #expect(berlin.timeZone == "Europe/Berlin")
        #expect(berlin.words == "22:00–07:00 Europe/Berlin")
        #expect(berlin.from == 22 * 60 && berlin.to == 7 * 60)
        // The window in Berlin's wall clock: 2026-01-01 is CET (UTC+1); quiet ends at 06:00Z.
        let q = berlin.quietHours
        #expect(q.policy == .defer)
        #expect(q.isQuiet(at: Timestamp.parse("2026-01-01T05:59:00Z")!))
        #expect(!q.isQuiet(at: Timestamp.parse("2026-01-01T06:00:00Z")!))
        #expect(q.end(of: Timestamp.parse("2026-01-01T00:00:00Z")!) == Timestamp.parse("2026-01-01T06:00:00Z")!)
        // In July (CEST, UTC+2) it ends at 05:00Z: the zone's own clock, not a fixed offset.
        #expect(q.end(of: Timestamp.parse("2026-07-01T00:00:00Z")!) == Timestamp.parse("2026-07-01T05:00:00Z")!)
        #expect(parse("quiet 00:00-24:00 America/New_York") != nil)
    }

    @Test("bad times, absurd zones and huge text get clear answers")
    func hostile() {
        for bad in ["quiet 22:00-07:00 Europe/Berlin extra", "quiet 7:00-22:00", "quiet 22:00–07:00", "quiet off now"] {
            #expect(problem(bad)?.hasPrefix("usage: `quiet") == true, "\(bad)")
        }
        #expect(
            problem("quiet 22:00-07:00 Europe/Berln")
                == "I don't know the time zone \"Europe/Berln\"; did you mean `Europe/Berlin`?")
        for zone in ["../../../etc/passwd", "/etc/localtime", "Mars/Olympus_Mons", "+05:00", "Europe/", "<@U1>"] {
            let answer = problem("quiet 22:00-07:00 \(zone)")
            #expect(answer?.hasPrefix("I don't know the time zone") == true, "\(zone): \(answer ?? "nil")")
            #expect(answer?.contains("<@U") != true, "a mention is defused: \(answer ?? "")")
        }
        let huge = "quiet 22:00-07:00 " + String(repeating: "Europe/Berlin", count: 30)
        #expect(problem(huge)?.hasPrefix("I don't know the time zone") == true)
        #expect((problem(huge)?.count ?? 0) < 200, "the answer repeats a cut piece of the zone")
        #expect(WatchQuietHours.zone(named: String(repeating: "a", count: 10_000)) == nil)
        #expect(problem("quiet " + String(repeating: "x", count: 5_000))?.hasPrefix("That command is too long") == true)
        #expect(WatchQuietHours(from: 0, to: 1441) == nil)
        #expect(WatchQuietHours(from: 60, to: 60) == nil)
    }

    @Test("a watch's rule carries its owner's quiet hours as a label that reads back; not an identifying label")
    func label() throws {
        let quiet = try #require(WatchQuietHours(from: 22 * 60, to: 7 * 60, timeZone: "Asia/Tokyo"))
        #expect(quiet.labelValue == "22:00-07:00 Asia/Tokyo")
        #expect(WatchQuietHours(labelValue: quiet.labelValue) == quiet)
        for bad in [
            "", "22:00-07:00", "22:00-07:00 Nowhere/City", "22:00 07:00 UTC", String(repeating: "9", count: 500),
        ] {
            #expect(WatchQuietHours(labelValue: bad) == nil, "\(bad)")
        }
        let w = Watch(
            id: 7, number: 1, owner: WatchOwner(platform: "slack", id: "T1:U1", name: "ana"),
            target: .gauge(station: "S1", name: nil, level: .value(10)),
            destination: .channel(platform: "slack", channel: "C1"), createdAt: 0)
        #expect(w.rule(receiver: "r").labels[WatchQuietHours.label] == nil)
        let rule = w.rule(receiver: "r", quiet: quiet)
        #expect(rule.labels[WatchQuietHours.label] == "22:00-07:00 Asia/Tokyo")
        #expect(rule.labels["watch"] == "7")
        let t = Transition(
            rule: rule.name, kind: "levels", station: "S1", metric: "gage_height", state: .firing, at: 0, value: 11,
            severity: .warning, labels: rule.labels, summary: "s", explanation: "e")
        #expect(!AlertIdentity.labels(t).contains { $0.key == WatchQuietHours.label })
        #expect(AlertIdentity.labels(t).contains { $0.key == "watch" && $0.value == "7" })
    }
}
