import KlaxonCore
import Testing

@Suite struct QuakeIdentityTests {
    func event(_ id: String, _ ids: [String], updated: Int64 = 1, magnitude: Double = 3) -> QuakeEvent {
        QuakeEvent(id: id, ids: ids, time: 0, updated: updated, magnitude: magnitude, latitude: 18, longitude: -67)
    }

    @Test func ownIDsLinkEventsAThirdSharedIDDoesNot() {
        let stored = event("pr71500101", ["pr71500101", "at00t1aaaa"])
        // Same preferred id; the newer lists the stored id (us → pr); the stored lists the newer's id.
        #expect(QuakeIdentity.link(event("pr71500101", ["pr71500101"]), to: stored, key: "pr71500101") == .sameID)
        #expect(
            QuakeIdentity.link(event("us7000r1aa", ["us7000r1aa", "pr71500101"]), to: stored, key: "pr71500101")
                == .listsStoredID)
        #expect(
            QuakeIdentity.link(event("at00t1aaaa", ["at00t1aaaa"]), to: stored, key: "pr71500101") == .listedByStored)
        // The key the event was first stored under counts as its own id too.
        #expect(
            QuakeIdentity.link(event("us7000r1aa", ["us7000r1aa", "us0first"]), to: stored, key: "us0first")
                == .listsStoredID)
        // Only the third id in common: two events.
        let other = event("us7000r2bb", ["us7000r2bb", "at00t1aaaa"])
        #expect(QuakeIdentity.link(other, to: stored, key: "pr71500101") == nil)
        let match = QuakeIdentity.match(other, among: [("pr71500101", stored)])
        #expect(match.key == nil)
        #expect(
            match.conflicts == [
                QuakeIDConflict(
                    id: "us7000r2bb", storedKey: "pr71500101", storedID: "pr71500101", shared: ["at00t1aaaa"])
            ])
        #expect("\(match.conflicts[0])".contains("kept as two events"))
    }

    @Test func theStrongestLinkWinsAndSilencesTheConflict() {
        let a = event("pr71500101", ["pr71500101", "at00t1aaaa"])
        let b = event("us7000r2bb", ["us7000r2bb", "at00t1aaaa"])
        // A new version of b that still shares a's associated id.
        let bNext = event("us7000r2bb", ["us7000r2bb", "at00t1aaaa"], updated: 2)
        let match = QuakeIdentity.match(bNext, among: [("pr71500101", a), ("us7000r2bb", b)])
        #expect(match == QuakeIdentity.Match(key: "us7000r2bb", conflicts: []))
    }

    @Test func theIndexKeepsTwoEventsApartAndMergesARevision() {
        var index = QuakeIndex()
        #expect(index.add(event("pr71500101", ["pr71500101", "at00t1aaaa"])).key == "pr71500101")
        let second = index.add(event("us7000r2bb", ["us7000r2bb", "at00t1aaaa"], updated: 2))
        #expect(second.key == "us7000r2bb")
        #expect(second.conflicts.map(\.storedID) == ["pr71500101"])
        // The network switch: the pr version lists the us id it used to be.
        #expect(index.add(event("pr71500202", ["pr71500202", "us7000r2bb"], updated: 3)).key == "us7000r2bb")
        // An old copy under the first id still finds its event.
        #expect(index.add(event("pr71500101", ["pr71500101"], updated: 1)).key == "pr71500101")
    }
}
