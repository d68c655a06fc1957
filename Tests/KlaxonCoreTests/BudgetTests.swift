import Foundation
import KlaxonCore
import Testing

/// Issue 41, "no storms": the budget's sliding window, the storm it folds, and the summary's words.
@Suite("a receiver's budget: the sliding window and the storm summary")
struct BudgetTests {
    static let budget = Budget(messages: 3, per: 600)
    static let minute: Int64 = 60_000

    static func flood(_ i: Int, station: String? = nil, place: String? = nil) -> FoldedAlert {
        FoldedAlert(
            alert: "river|S\(i)|gage_height", episode: Int64(i), subject: "gauge", station: station ?? "S\(i)",
            place: place ?? "Gauge \(i)", at: 0)
    }

    static func air(_ i: Int, station: String) -> FoldedAlert {
        FoldedAlert(
            alert: "aqi|\(station)|aqi", episode: Int64(100 + i), subject: "air", station: station, place: station,
            at: 0)
    }

    @Test("sends while the window has room, folds past it; a window later there is room again")
    func slidingWindow() {
        var w = BudgetWindow()
        let b = Self.budget
        #expect(w.admit(batch: "a", alerts: [Self.flood(1)], owed: false, now: 0, budget: b) == .send)
        #expect(w.admit(batch: "b", alerts: [Self.flood(2)], owed: false, now: 2 * Self.minute, budget: b) == .send)
        #expect(w.admit(batch: "c", alerts: [Self.flood(3)], owed: false, now: 4 * Self.minute, budget: b) == .send)
        #expect(w.changes.isEmpty)
        #expect(w.admit(batch: "d", alerts: [Self.flood(4)], owed: false, now: 5 * Self.minute, budget: b) == .fold)
        #expect(w.changes.add == [Self.flood(4)] && w.stormStart == 5 * Self.minute)
        w.changes = FoldChanges()
        // At 10:00 the first send (0:00) has left the window (it holds (0:00, 10:00]): room for one.
        #expect(w.admit(batch: "e", alerts: [Self.flood(5)], owed: false, now: 10 * Self.minute, budget: b) == .send)
        // A send during a storm takes its alerts out of the summary.
        #expect(w.changes.heard == ["river|S5|gage_height"])
        #expect(
            w.admit(batch: "f", alerts: [Self.flood(6)], owed: false, now: 10 * Self.minute + 1, budget: b) == .fold)
        #expect(w.sends.map(\.batch) == ["b", "c", "e"])
        // The window is exactly `per` long: 12:00 frees the 2:00 send, not 11:59.
        #expect(
            w.admit(batch: "g", alerts: [Self.flood(7)], owed: false, now: 12 * Self.minute - 1, budget: b) == .fold)
        #expect(w.admit(batch: "h", alerts: [Self.flood(8)], owed: false, now: 12 * Self.minute, budget: b) == .send)
    }

    @Test("a retry of a batch sent is sent again without counting twice")
    func retriesCountOnce() {
        var w = BudgetWindow()
        let b = Budget(messages: 1, per: 600)
        #expect(w.admit(batch: "a", alerts: [Self.flood(1)], owed: false, now: 0, budget: b) == .send)
        #expect(w.admit(batch: "a", alerts: [Self.flood(1)], owed: false, now: 1, budget: b) == .send)
        #expect(w.sends.count == 1)
        #expect(w.admit(batch: "b", alerts: [Self.flood(2)], owed: false, now: 2, budget: b) == .fold)
    }

    @Test("a resolve the receiver is owed is sent past the budget, and counts")
    func owedResolves() {
        var w = BudgetWindow()
        let b = Budget(messages: 1, per: 600)
        #expect(w.admit(batch: "a", alerts: [Self.flood(1)], owed: false, now: 0, budget: b) == .send)
        #expect(w.admit(batch: "r", alerts: [], owed: true, now: 1, budget: b) == .send)
        #expect(w.sends.count == 2)
        #expect(w.admit(batch: "c", alerts: [Self.flood(3)], owed: false, now: 2, budget: b) == .fold)
    }

    @Test("resolves of folded alerts change the summary only during a storm")
    func resolvesDuringAStorm() {
        var w = BudgetWindow()
        let b = Budget(messages: 1, per: 600)
        let r = [ResolvedFold(alert: "river|S2|gage_height", episode: 2)]
        var none = w
        let outside = none.resolved(r)
        #expect(!outside && none.changes.isEmpty)
        _ = w.admit(batch: "a", alerts: [Self.flood(1)], owed: false, now: 0, budget: b)
        _ = w.admit(batch: "b", alerts: [Self.flood(2)], owed: false, now: 1, budget: b)
        let version = w.version
        let during = w.resolved(r)
        #expect(during)
        #expect(w.changes.resolved == r && w.version == version + 1)
    }

    @Test("a storm ends after a whole window without a fold; the next fold starts a new one")
    func stormEnds() {
        var w = BudgetWindow()
        let b = Budget(messages: 1, per: 600)
        _ = w.admit(batch: "a", alerts: [Self.flood(1)], owed: false, now: 0, budget: b)
        _ = w.admit(batch: "b", alerts: [Self.flood(2)], owed: false, now: 1_000, budget: b)
        w.summaryShown(version: w.version, text: "1 more alert", posted: "m1", now: 1_000)
        w.changes = FoldChanges()
        #expect(w.summaryID == "m1" && w.stormStart == 1_000)
        w.prune(now: 601_000, budget: b)
        #expect(w.stormStart == nil && w.summaryID == nil && w.shownText == nil && w.changes.clear)
        w.changes = FoldChanges()
        _ = w.admit(batch: "c", alerts: [Self.flood(3)], owed: false, now: 601_001, budget: b)
        #expect(w.admit(batch: "d", alerts: [Self.flood(4)], owed: false, now: 601_002, budget: b) == .fold)
        #expect(w.stormStart == 601_002 && w.changes.add == [Self.flood(4)])
    }

    @Test("the summary: posted once, then edited where the receiver edits; one per window where it cannot")
    func summarySteps() {
        let b = Budget(messages: 1, per: 600)
        var w = BudgetWindow()
        _ = w.admit(batch: "a", alerts: [Self.flood(1)], owed: false, now: 0, budget: b)
        #expect(w.summaryStep(canEdit: true, now: 0, lease: 30_000, budget: b) == .none)  // no storm
        _ = w.admit(batch: "b", alerts: [Self.flood(2)], owed: false, now: 1, budget: b)
        var other = w
        #expect(w.summaryStep(canEdit: true, now: 1, lease: 30_000, budget: b) == .post)
        // While one sender posts, another (the other daemon) leaves it.
        #expect(w.summaryStep(canEdit: true, now: 2, lease: 30_000, budget: b) == .none)
        w.summaryShown(version: w.version, text: "x", posted: "m1", now: 3)
        #expect(w.summaryStep(canEdit: true, now: 4, lease: 30_000, budget: b) == .none)  // up to date
        _ = w.admit(batch: "c", alerts: [Self.flood(3)], owed: false, now: 5, budget: b)
        #expect(w.summaryStep(canEdit: true, now: 5, lease: 30_000, budget: b) == .edit("m1"))
        // A post that fails frees the mark; a post whose sender died frees it after the lease.
        #expect(other.summaryStep(canEdit: true, now: 1, lease: 30_000, budget: b) == .post)
        other.postFailed()
        #expect(other.summaryStep(canEdit: true, now: 2, lease: 30_000, budget: b) == .post)
        #expect(other.summaryStep(canEdit: true, now: 30_003, lease: 30_000, budget: b) == .post)
        // A receiver that cannot edit: one summary per window.
        var plain = BudgetWindow()
        _ = plain.admit(batch: "a", alerts: [Self.flood(1)], owed: false, now: 0, budget: b)
        _ = plain.admit(batch: "b", alerts: [Self.flood(2)], owed: false, now: 1, budget: b)
        #expect(plain.summaryStep(canEdit: false, now: 1, lease: 30_000, budget: b) == .post)
        plain.summaryShown(version: plain.version, text: "x", posted: "", now: 2)
        _ = plain.admit(batch: "c", alerts: [Self.flood(3)], owed: false, now: 3, budget: b)
        #expect(plain.summaryStep(canEdit: false, now: 3, lease: 30_000, budget: b) == .none)
        #expect(plain.summaryStep(canEdit: false, now: 599_999, lease: 30_000, budget: b) == .none)
        #expect(plain.summaryStep(canEdit: false, now: 600_002, lease: 30_000, budget: b) == .post)
        // An editing receiver whose platform gave no id: no new summary until a window has passed.
        var noID = BudgetWindow()
        _ = noID.admit(batch: "a", alerts: [Self.flood(1)], owed: false, now: 0, budget: b)
        _ = noID.admit(batch: "b", alerts: [Self.flood(2)], owed: false, now: 1, budget: b)
        #expect(noID.summaryStep(canEdit: true, now: 1, lease: 30_000, budget: b) == .post)
        noID.summaryShown(version: noID.version, text: "x", posted: "", now: 2)
        _ = noID.admit(batch: "c", alerts: [Self.flood(3)], owed: false, now: 3, budget: b)
        #expect(noID.summaryStep(canEdit: true, now: 3, lease: 30_000, budget: b) == .none)
    }

    @Test("the stored window is small and round-trips; what a decision changes is not stored")
    func stored() {
        var w = BudgetWindow()
        let b = Budget(messages: 1, per: 600)
        _ = w.admit(batch: "a", alerts: [Self.flood(0)], owed: false, now: 0, budget: b)
        for i in 1...1_000 {
            _ = w.admit(batch: "f\(i)", alerts: [Self.flood(i)], owed: false, now: 1, budget: b)
        }
        #expect(w.changes.add.count == 1_000)
        #expect(w.encoded().utf8.count < 400)
        var read = BudgetWindow.decode(w.encoded())
        #expect(read.changes.isEmpty)
        read.changes = w.changes
        #expect(read == w)
        #expect(BudgetWindow.decode("not json") == BudgetWindow())
        #expect(BudgetWindow.decode(nil) == BudgetWindow())
    }

    static func tally(_ rows: [(FoldedAlert, Bool)]) -> FoldTally {
        FoldTally.of(rows.map { (fold: $0.0, resolved: $0.1) })
    }

    @Test("the summary's words: by what the alerts are about, places counted, a few named, the list linked")
    func summaryText() {
        let b = Budget(messages: 20, per: 600)
        let folds =
            (1...30).map { (Self.flood($0, station: "G\($0 % 12)", place: "River \($0 % 12)"), false) }
            + (1...7).map { (Self.air($0, station: "City\($0 % 3)"), false) }
        let s = FoldSummary(Self.tally(folds), receiver: "pager", budget: b, externalURL: "https://klaxon.example/")
        #expect(s.headline == "37 more alerts")
        #expect(
            s.text
                == "37 more alerts: 30 floods on 12 gauges (River 1, River 2, River 3, …), 7 air alerts at 3 places (City1, City2, City0) — open the list: https://klaxon.example/alerts. Folded into this one message: pager is over its budget of 20 per 10m."
        )
        // Without `external_url`: no link. Some resolved since.
        let some = [(Self.flood(1), false), (Self.flood(2), true), (Self.flood(3), true), (Self.flood(4), false)]
        #expect(
            FoldSummary(Self.tally(some), receiver: "pager", budget: b, externalURL: "").text
                == "2 more alerts: 2 floods on 2 gauges (Gauge 1, Gauge 4) (2 resolved since). Folded into this one message: pager is over its budget of 20 per 10m."
        )
        let all = [(Self.flood(1), true), (Self.air(1, station: "X"), true)]
        let done = FoldSummary(Self.tally(all), receiver: "pager", budget: b, externalURL: "")
        #expect(done.headline == "all 2 folded alerts resolved")
        #expect(done.text.hasPrefix("All 2 alerts folded in this storm have resolved."))
    }

    @Test("a hostile place is kept as text (each destination escapes it) and bounded")
    func hostilePlaces() {
        let long = String(repeating: "x", count: 500)
        #expect(
            FoldedAlert(alert: "a", episode: 1, subject: "gauge", station: "s", place: long, at: 0).place.count == 80)
        let text = FoldSummary(
            Self.tally([(Self.flood(1, place: "<!channel> @everyone [x](http://evil) *b*"), false)]), receiver: "r",
            budget: Self.budget, externalURL: ""
        ).text
        #expect(text.contains("<!channel> @everyone [x](http://evil) *b*"))
        #expect(Escape.slack(text).contains("&lt;!channel&gt;"))
        #expect(!Escape.discord(text).contains("](http"))
    }
}
