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
        #expect(w.admit(batch: "d", alerts: [Self.flood(4)], owed: false, now: 5 * Self.minute, budget: b) == .fold)
        #expect(w.folded.map(\.episode) == [4] && w.stormStart == 5 * Self.minute)
        // At 10:00 the first send (0:00) has left the window (it holds (0:00, 10:00]): room for one.
        #expect(w.admit(batch: "e", alerts: [Self.flood(5)], owed: false, now: 10 * Self.minute, budget: b) == .send)
        #expect(
            w.admit(batch: "f", alerts: [Self.flood(6)], owed: false, now: 10 * Self.minute + 1, budget: b) == .fold)
        #expect(w.sends.map(\.batch) == ["b", "c", "e"])
        // The window is exactly `per` long: 12:00 frees the 2:00 send, not 11:59.
        #expect(
            w.admit(batch: "g", alerts: [Self.flood(7)], owed: false, now: 12 * Self.minute - 1, budget: b) == .fold)
        #expect(w.admit(batch: "h", alerts: [Self.flood(8)], owed: false, now: 12 * Self.minute, budget: b) == .send)
    }

    @Test("a retry of a batch sent is sent again without counting twice; a folded batch folds its alert once")
    func retriesCountOnce() {
        var w = BudgetWindow()
        let b = Budget(messages: 1, per: 600)
        #expect(w.admit(batch: "a", alerts: [Self.flood(1)], owed: false, now: 0, budget: b) == .send)
        #expect(w.admit(batch: "a", alerts: [Self.flood(1)], owed: false, now: 1, budget: b) == .send)
        #expect(w.sends.count == 1)
        #expect(w.admit(batch: "b", alerts: [Self.flood(2)], owed: false, now: 2, budget: b) == .fold)
        #expect(w.admit(batch: "b", alerts: [Self.flood(2)], owed: false, now: 3, budget: b) == .fold)
        #expect(w.folded.count == 1 && w.total == 1)
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

    @Test("a folded alert that resolves leaves the summary; one sent later leaves it too")
    func resolvesLowerTheCount() {
        var w = BudgetWindow()
        let b = Budget(messages: 1, per: 600)
        _ = w.admit(batch: "a", alerts: [Self.flood(1)], owed: false, now: 0, budget: b)
        for i in 2...5 { _ = w.admit(batch: "f\(i)", alerts: [Self.flood(i)], owed: false, now: Int64(i), budget: b) }
        #expect(w.folded.count == 4 && w.version == 4)
        let resolved = w.resolved([("river|S2|gage_height", 2)])
        #expect(resolved)
        #expect(w.folded.count == 3 && w.total == 4 && w.version == 5)
        // Another episode of the alert is not this one.
        let other = w.resolved([("river|S3|gage_height", 99)])
        #expect(!other)
        #expect(w.version == 5)
        // A window later the alert's change is sent: the receiver hears of it, it leaves the summary.
        #expect(w.admit(batch: "x", alerts: [Self.flood(3)], owed: false, now: 600_001, budget: b) == .send)
        #expect(w.folded.map(\.episode) == [4, 5])
    }

    @Test("a storm ends after a whole window without a fold; the next fold starts a new one")
    func stormEnds() {
        var w = BudgetWindow()
        let b = Budget(messages: 1, per: 600)
        _ = w.admit(batch: "a", alerts: [Self.flood(1)], owed: false, now: 0, budget: b)
        _ = w.admit(batch: "b", alerts: [Self.flood(2)], owed: false, now: 1_000, budget: b)
        w.summaryShown(version: w.version, posted: "m1", now: 1_000)
        #expect(w.summaryID == "m1" && w.stormStart == 1_000)
        w.prune(now: 601_000, budget: b)
        #expect(w.stormStart == nil && w.folded.isEmpty && w.summaryID == nil && w.total == 0)
        _ = w.admit(batch: "c", alerts: [Self.flood(3)], owed: false, now: 601_001, budget: b)
        #expect(w.admit(batch: "d", alerts: [Self.flood(4)], owed: false, now: 601_002, budget: b) == .fold)
        #expect(w.stormStart == 601_002 && w.folded.map(\.episode) == [4])
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
        w.summaryShown(version: w.version, posted: "m1", now: 3)
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
        plain.summaryShown(version: plain.version, posted: "", now: 2)
        _ = plain.admit(batch: "c", alerts: [Self.flood(3)], owed: false, now: 3, budget: b)
        #expect(plain.summaryStep(canEdit: false, now: 3, lease: 30_000, budget: b) == .none)
        #expect(plain.summaryStep(canEdit: false, now: 599_999, lease: 30_000, budget: b) == .none)
        #expect(plain.summaryStep(canEdit: false, now: 600_002, lease: 30_000, budget: b) == .post)
        // An editing receiver whose platform gave no id: no new summary until a window has passed.
        var noID = BudgetWindow()
        _ = noID.admit(batch: "a", alerts: [Self.flood(1)], owed: false, now: 0, budget: b)
        _ = noID.admit(batch: "b", alerts: [Self.flood(2)], owed: false, now: 1, budget: b)
        #expect(noID.summaryStep(canEdit: true, now: 1, lease: 30_000, budget: b) == .post)
        noID.summaryShown(version: noID.version, posted: "", now: 2)
        _ = noID.admit(batch: "c", alerts: [Self.flood(3)], owed: false, now: 3, budget: b)
        #expect(noID.summaryStep(canEdit: true, now: 3, lease: 30_000, budget: b) == .none)
    }

    @Test("the folded alerts kept by name are bounded; the rest are counted")
    func bounded() {
        var w = BudgetWindow()
        let b = Budget(messages: 1, per: 600)
        _ = w.admit(batch: "a", alerts: [Self.flood(0)], owed: false, now: 0, budget: b)
        for i in 1...(BudgetWindow.foldedLimit + 50) {
            _ = w.admit(batch: "f\(i)", alerts: [Self.flood(i)], owed: false, now: 1, budget: b)
        }
        #expect(w.folded.count == BudgetWindow.foldedLimit && w.overflow == 50)
        #expect(FoldSummary(w, receiver: "r", budget: b, externalURL: "").firing == BudgetWindow.foldedLimit + 50)
        // The stored form stays small: about a hundred bytes an alert.
        #expect(w.encoded().utf8.count < BudgetWindow.foldedLimit * 120)
        #expect(BudgetWindow.decode(w.encoded()) == w)
        #expect(BudgetWindow.decode("not json") == BudgetWindow())
        #expect(BudgetWindow.decode(nil) == BudgetWindow())
    }

    @Test("the summary's words: by what the alerts are about, places counted, a few named, the list linked")
    func summaryText() {
        var w = BudgetWindow()
        let b = Budget(messages: 20, per: 600)
        w.folded =
            (1...30).map { Self.flood($0, station: "G\($0 % 12)", place: "River \($0 % 12)") }
            + (1...7).map { Self.air($0, station: "City\($0 % 3)") }
        w.total = 37
        let s = FoldSummary(w, receiver: "pager", budget: b, externalURL: "https://klaxon.example/")
        #expect(s.headline == "37 more alerts")
        #expect(
            s.text
                == "37 more alerts: 30 floods on 12 gauges (River 1, River 2, River 3, …), 7 air alerts at 3 places (City1, City2, City0) — open the list: https://klaxon.example/alerts. Folded into this one message: pager is over its budget of 20 per 10m."
        )
        // Without `external_url`: no link. Some resolved since; one counted only.
        w.folded = [Self.flood(1)]
        w.overflow = 1
        w.total = 5
        let t = FoldSummary(w, receiver: "pager", budget: b, externalURL: "")
        #expect(
            t.text
                == "2 more alerts: 1 flood on 1 gauge (Gauge 1), 1 more not itemised (3 resolved since). Folded into this one message: pager is over its budget of 20 per 10m."
        )
        w.folded = []
        w.overflow = 0
        #expect(
            FoldSummary(w, receiver: "pager", budget: b, externalURL: "").headline == "all 5 folded alerts resolved")
    }

    @Test("a hostile place is kept as text (each destination escapes it) and bounded")
    func hostilePlaces() {
        let long = String(repeating: "x", count: 500)
        #expect(
            FoldedAlert(alert: "a", episode: 1, subject: "gauge", station: "s", place: long, at: 0).place.count == 80)
        var w = BudgetWindow()
        w.folded = [Self.flood(1, place: "<!channel> @everyone [x](http://evil) *b*")]
        let text = FoldSummary(w, receiver: "r", budget: Self.budget, externalURL: "").text
        #expect(text.contains("<!channel> @everyone [x](http://evil) *b*"))
        #expect(Escape.slack(text).contains("&lt;!channel&gt;"))
        #expect(!Escape.discord(text).contains("](http"))
    }
}
