import Foundation
import KlaxonCore
import KlaxonStore
import Testing

/// Issue 43: people's watches are kept by every backend: added with the owner's next number up to
/// a limit, listed by person and in pages, removed by number or id, counted by kind.
@Suite(.timeLimit(.minutes(10))) struct WatchConformanceTests {
    static let ana = WatchOwner(platform: "slack", id: "T1:U-ANA", name: "ana <@U1> “quoted” 水位")
    static let bob = WatchOwner(platform: "mattermost", id: "u-bob", name: "bob")
    static let channel = WatchDestination.channel(platform: "slack", channel: "C1")
    static let tokyo = WatchPlace(name: "Tokyo office", latitude: 35.68, longitude: 139.76, radiusKm: 300)

    static func gauge(_ station: String, _ level: String = "minor") -> WatchTarget {
        .gauge(station: station, name: "River \"at\" \(station)", level: .category(level))
    }

    func watch(_ owner: WatchOwner, _ target: WatchTarget, at: Int64 = 1_000) -> Watch {
        Watch(owner: owner, target: target, destination: Self.channel, createdAt: at)
    }

    func added(_ outcome: WatchAddOutcome) throws -> Watch {
        guard case .added(let w) = outcome else {
            Issue.record("expected added, got \(outcome)")
            throw CancellationError()
        }
        return w
    }

    @Test(
        "a watch reads back as added, numbered per owner; every kind of target round-trips", arguments: Backend.allCases
    )
    func roundTrip(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            #expect(try await store.watches(owner: Self.ana.key).isEmpty)
            let targets: [WatchTarget] = [
                Self.gauge("01646500"), .gauge(station: "S2", name: nil, level: .value(12.5)),
                .air(place: "Delhi", stations: ["IN-1", "IN-2"], scale: "india-naqi", level: "Poor", series: .nowcast),
                .quakes(place: Self.tokyo, threshold: .magnitude(5)), .quakes(place: Self.tokyo, threshold: .felt(4.5)),
            ]
            var made: [Watch] = []
            for (i, t) in targets.enumerated() {
                let w = try added(try await store.addWatch(watch(Self.ana, t, at: 1_000 + Int64(i)), limit: 10))
                #expect(w.number == i + 1)
                #expect(w.id > 0)
                made.append(w)
            }
            let bobs = try added(try await store.addWatch(watch(Self.bob, Self.gauge("01646500")), limit: 10))
            #expect(bobs.number == 1, "numbers are each owner's own")
            #expect(try await store.watches(owner: Self.ana.key) == made)
            #expect(try await store.watches(owner: Self.bob.key) == [bobs])
            #expect(try await store.allWatches() == (made + [bobs]).sorted { $0.id < $1.id })
            #expect(
                try await store.watchCounts() == [.gauge: 3, .air: 1, .quakes: 2])
        }
    }

    @Test("the limit per person holds, a duplicate is refused, and numbers are not reused", arguments: Backend.allCases)
    func limitsAndNumbers(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let one = try added(try await store.addWatch(watch(Self.ana, Self.gauge("A")), limit: 2))
            let two = try added(try await store.addWatch(watch(Self.ana, Self.gauge("B")), limit: 2))
            #expect(try await store.addWatch(watch(Self.ana, Self.gauge("C")), limit: 2) == .full(limit: 2))
            #expect(try await store.addWatch(watch(Self.ana, Self.gauge("A")), limit: 5) == .duplicate(one))
            // The same gauge at another level is another watch.
            let three = try added(try await store.addWatch(watch(Self.ana, Self.gauge("A", "major")), limit: 5))
            #expect(three.number == 3)
            // Removed by number: gone, and only that one; another owner's number is not theirs.
            #expect(try await store.removeWatch(owner: Self.bob.key, number: 1) == nil)
            #expect(try await store.removeWatch(owner: Self.ana.key, number: 1) == one)
            #expect(try await store.removeWatch(owner: Self.ana.key, number: 1) == nil)
            #expect(try await store.watches(owner: Self.ana.key).map(\.number) == [2, 3])
            // The next one takes the next number after the highest held, never the one removed.
            let four = try added(try await store.addWatch(watch(Self.ana, Self.gauge("D")), limit: 5))
            #expect(four.number == 4)
            // Removed by id (the operator's command).
            #expect(try await store.removeWatch(id: two.id) == two)
            #expect(try await store.removeWatch(id: two.id) == nil)
            #expect(try await store.watches(owner: Self.ana.key).map(\.number) == [3, 4])
            #expect(try await store.watchCounts() == [.gauge: 2])
        }
    }

    @Test("many adds at once by one person never pass the limit nor share a number", arguments: Backend.allCases)
    func concurrentAdds(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let outcomes = try await withThrowingTaskGroup(of: WatchAddOutcome.self) { group in
                for i in 0..<12 {
                    group.addTask { try await store.addWatch(self.watch(Self.ana, Self.gauge("G\(i)")), limit: 5) }
                }
                var out: [WatchAddOutcome] = []
                for try await o in group { out.append(o) }
                return out
            }
            let added = outcomes.compactMap { if case .added(let w) = $0 { w } else { nil } }
            #expect(added.count == 5)
            #expect(Set(added.map(\.number)) == Set(1...5))
            #expect(try await store.watches(owner: Self.ana.key).count == 5)
        }
    }

    @Test("pages of every watch, by id", arguments: Backend.allCases)
    func pages(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            for i in 0..<7 { _ = try await store.addWatch(watch(Self.ana, Self.gauge("P\(i)")), limit: 100) }
            let first = try await store.watches(after: 0, limit: 3)
            #expect(first.count == 3)
            let second = try await store.watches(after: first.last!.id, limit: 3)
            let third = try await store.watches(after: second.last!.id, limit: 3)
            #expect((first + second + third).map(\.number) == Array(1...7))
            #expect(try await store.allWatches(page: 2).count == 7)
        }
    }
}
