import Foundation
import KlaxonCore
import KlaxonPostgres
import KlaxonSQLite
import KlaxonStore
import KlaxonTesting
import Testing

/// Issue 43: every backend keeps a number that moves with each change of the watches or of a
/// person's quiet hours (`watchGeneration`), so a daemon rebuilds its watch rules only when it
/// moved, also for a change made through another store on the same database (another daemon);
/// and keeps each person's own quiet hours.
@Suite(.timeLimit(.minutes(10))) struct WatchGenerationConformanceTests {
    static let ana = WatchConformanceTests.ana
    static let bob = WatchConformanceTests.bob

    func watch(_ owner: WatchOwner, _ station: String) -> Watch {
        Watch(
            owner: owner, target: WatchConformanceTests.gauge(station), destination: WatchConformanceTests.channel,
            createdAt: 1_000)
    }

    /// Another handle on the fixture's database (another daemon's): a second pool on PostgreSQL, a
    /// second open of the file on SQLite; the same store for the in-memory one, which has no other.
    func other(_ f: Fixture, _ body: (any Store) async throws -> Void) async throws {
        switch f.sql {
        case .postgres(let db):
            let configuration = PostgresStore.Configuration(
                host: db.host, port: db.port, username: db.user, database: db.name, maximumConnections: 2)
            try await PostgresStore.with(configuration, logger: Backend.quiet) { try await body($0) }
        case .sqlite(let s):
            if s.path.isEmpty || s.path == ":memory:" || !FileManager.default.fileExists(atPath: s.path) {
                try await body(f.store)
            } else {
                try await body(try SQLiteStore.open(path: s.path))
            }
        }
    }

    @Test("the generation moves with every change that took, and only then", arguments: Backend.allCases)
    func moves(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            var seen = try await store.watchGeneration()
            func moved(_ what: Comment) async throws {
                let now = try await store.watchGeneration()
                #expect(now != seen, what)
                seen = now
            }
            func still(_ what: Comment) async throws {
                #expect(try await store.watchGeneration() == seen, what)
            }
            guard case .added(let one) = try await store.addWatch(watch(Self.ana, "A"), limit: 2) else {
                Issue.record("not added")
                return
            }
            try await moved("an add")
            _ = try await store.addWatch(watch(Self.ana, "A"), limit: 2)
            try await still("a duplicate adds nothing")
            _ = try await store.addWatch(watch(Self.ana, "B"), limit: 2)
            try await moved("a second add")
            #expect(try await store.addWatch(watch(Self.ana, "C"), limit: 2) == .full(limit: 2))
            try await still("a refused add")
            #expect(try await store.removeWatch(owner: Self.bob.key, number: 1) == nil)
            try await still("removing nothing")
            #expect(try await store.removeWatch(owner: Self.ana.key, number: 2) != nil)
            try await moved("a remove by number")
            #expect(try await store.removeWatch(id: one.id) == one)
            try await moved("a remove by id")
            #expect(try await store.removeWatch(id: one.id) == nil)
            try await still("removing it again")
            // Quiet hours: set, changed, set again unchanged, cleared, cleared again.
            let night = try #require(WatchQuietHours(from: 22 * 60, to: 7 * 60, timeZone: "Europe/Berlin"))
            let late = try #require(WatchQuietHours(from: 23 * 60, to: 6 * 60, timeZone: "America/New_York"))
            #expect(try await store.setWatchQuietHours(owner: Self.ana.key, night, now: 1) == nil)
            try await moved("quiet hours set")
            #expect(try await store.setWatchQuietHours(owner: Self.ana.key, night, now: 2) == night)
            try await still("the same quiet hours again")
            #expect(try await store.setWatchQuietHours(owner: Self.ana.key, late, now: 3) == night)
            try await moved("quiet hours changed")
            #expect(try await store.setWatchQuietHours(owner: Self.ana.key, nil, now: 4) == late)
            try await moved("quiet hours off")
            #expect(try await store.setWatchQuietHours(owner: Self.ana.key, nil, now: 5) == nil)
            try await still("off again")
        }
    }

    @Test("a person's quiet hours read back, per person, zone and all", arguments: Backend.allCases)
    func quietHours(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            #expect(try await store.watchQuietHours(owner: Self.ana.key) == nil)
            #expect(try await store.allWatchQuietHours().isEmpty)
            let night = try #require(WatchQuietHours(from: 22 * 60, to: 7 * 60, timeZone: "Europe/Berlin"))
            let day = try #require(WatchQuietHours(from: 0, to: 24 * 60))
            try await store.setWatchQuietHours(owner: Self.ana.key, night, now: 1)
            try await store.setWatchQuietHours(owner: Self.bob.key, day, now: 1)
            #expect(try await store.watchQuietHours(owner: Self.ana.key) == night)
            #expect(try await store.watchQuietHours(owner: Self.bob.key)?.timeZone == "UTC")
            #expect(try await store.allWatchQuietHours() == [Self.ana.key: night, Self.bob.key: day])
            try await store.setWatchQuietHours(owner: Self.ana.key, nil, now: 2)
            #expect(try await store.allWatchQuietHours() == [Self.bob.key: day])
        }
    }

    @Test(
        "a change made through another handle on the database moves the generation this one reads",
        arguments: Backend.allCases)
    func seenByAnother(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            try await other(f) { b in
                let before = try await store.watchGeneration()
                #expect(try await b.watchGeneration() == before)
                guard case .added(let w) = try await b.addWatch(watch(Self.bob, "X"), limit: 5) else {
                    Issue.record("not added")
                    return
                }
                let added = try await store.watchGeneration()
                #expect(added != before)
                #expect(try await store.allWatches().map(\.id) == [w.id])
                _ = try await b.removeWatch(id: w.id)
                let removed = try await store.watchGeneration()
                #expect(removed != added)
                try await b.setWatchQuietHours(owner: Self.bob.key, WatchQuietHours(from: 60, to: 120), now: 1)
                #expect(try await store.watchGeneration() != removed)
            }
        }
    }

    @Test("concurrent changes each move the generation", arguments: Backend.allCases)
    func concurrent(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let before = try await store.watchGeneration()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<8 {
                    let owner = WatchOwner(platform: "slack", id: "T1:U\(i)", name: "u\(i)")
                    group.addTask { _ = try await store.addWatch(self.watch(owner, "G\(i)"), limit: 5) }
                }
                try await group.waitForAll()
            }
            #expect(try await store.watchGeneration() == before + 8)
        }
    }
}
