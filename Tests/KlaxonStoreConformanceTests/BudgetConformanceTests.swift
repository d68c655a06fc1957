import Foundation
import KlaxonCore
import KlaxonPostgres
import KlaxonSQLite
import KlaxonStore
import KlaxonTesting
import Testing

/// Issue 41, "no storms": every backend keeps a receiver's budget window across store handles (a
/// restart), and changes it in one transaction so that concurrent decisions — in one process or in
/// two daemons on one database — never spend more than the budget.
@Suite(.timeLimit(.minutes(10))) struct BudgetConformanceTests {
    static let budget = Budget(messages: 5, per: 600)

    static func alert(_ i: Int) -> FoldedAlert {
        FoldedAlert(
            alert: "high|S\(i)|gage_height", episode: Int64(i), subject: "gauge", station: "S\(i)", place: "Gauge \(i)",
            at: 0)
    }

    /// `n` decisions at once, each its own batch; returns how many were sent.
    static func admitAll(_ store: any BudgetStore, _ range: Range<Int>, now: Int64) async throws -> Int {
        try await withThrowingTaskGroup(of: BudgetWindow.Decision.self) { group in
            for i in range {
                group.addTask {
                    try await store.updateBudget(receiver: "pager", now: now) { w in
                        w.admit(batch: "b-\(i)", alerts: [alert(i)], owed: false, now: now, budget: budget)
                    }
                }
            }
            var sent = 0
            for try await d in group where d == .send { sent += 1 }
            return sent
        }
    }

    @Test(
        "concurrent decisions spend exactly the budget; the window reads back as written", arguments: Backend.allCases)
    func concurrentDecisions(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let now: Int64 = 1_000_000
            #expect(try await Self.admitAll(store, 0..<20, now: now) == 5)
            let window = try await store.updateBudget(receiver: "pager", now: now) { $0 }
            #expect(window.sends.count == 5 && window.version == 15 && window.changes.isEmpty)
            #expect(window.stormStart == now)
            var tally = try await store.foldTally(receiver: "pager")
            #expect(tally.subjects == [.init(subject: "gauge", firing: 15, total: 15, stations: 15)])
            #expect(tally.places.count == 15)
            // Another receiver has its own window and folds.
            #expect(try await store.updateBudget(receiver: "other", now: now) { $0 } == BudgetWindow())
            #expect(try await store.foldTally(receiver: "other") == FoldTally())
            // A fold of an alert and episode already folded is not counted twice; a resolve is
            // counted as resolved; a send takes the alert out; hostile text round-trips.
            let folded = try #require(tally.places.first)
            // Which were folded depends on the order the concurrent decisions ran in.
            let (again, resolved, heard) = (tally.places[1].station, tally.places[2].station, tally.places[3].station)
            let hostile = "\"quoted\" \\ 'x'\n水位 🌊 {\"a\":1} <!channel>"
            try await store.updateBudget(receiver: "pager", now: now) { (w: inout BudgetWindow) in
                w.changes.add = [
                    FoldedAlert(
                        alert: "high|\(again)|gage_height", episode: Int64(again.dropFirst())!, subject: "gauge",
                        station: again, place: "again", at: 1),
                    FoldedAlert(
                        alert: "aqi|Z|aqi", episode: 7, subject: "air", station: "Z", place: hostile, at: now + 1),
                ]
                w.changes.resolved = [
                    ResolvedFold(alert: "high|\(resolved)|gage_height", episode: Int64(resolved.dropFirst())!)
                ]
                w.changes.heard = ["high|\(heard)|gage_height"]
            }
            tally = try await store.foldTally(receiver: "pager")
            #expect(
                tally.subjects == [
                    .init(subject: "gauge", firing: 13, total: 14, stations: 13),
                    .init(subject: "air", firing: 1, total: 1, stations: 1),
                ])
            #expect(tally.places.first?.place == folded.place)
            #expect(tally.places.last?.place == hostile)
            #expect(!tally.places.contains { $0.place == "again" })
            // A window without a fold ends the storm: its folds are forgotten.
            #expect(try await Self.admitAll(store, 20..<22, now: now + 600_001) == 2)
            #expect(try await store.foldTally(receiver: "pager") == FoldTally())
        }
    }

    @Test("two daemons on one database never both spend the last message")
    func twoDaemons() async throws {
        // PostgreSQL: two stores (two pools) on one database; the row lock serialises them.
        try await PostgresServer.withDatabase { db in
            let configuration = PostgresStore.Configuration(
                host: db.host, port: db.port, username: db.user, database: db.name, maximumConnections: 4)
            try await PostgresStore.with(configuration, logger: Backend.quiet) { a in
                try await PostgresStore.with(configuration, logger: Backend.quiet) { b in
                    let now: Int64 = 5_000_000
                    async let one = Self.admitAll(a, 0..<15, now: now)
                    async let two = Self.admitAll(b, 15..<30, now: now)
                    let total = try await one + two
                    #expect(total == 5)
                    let window = try await a.updateBudget(receiver: "pager", now: now) { $0 }
                    #expect(window.sends.count == 5)
                    #expect(try await b.foldTally(receiver: "pager").subjects.first?.firing == 25)
                }
            }
        }
        // SQLite: two handles on one file (two processes' worth): its writers take turns.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-budget-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("k.sqlite").path
        let a = try SQLiteStore.open(path: path)
        let b = try SQLiteStore.open(path: path)
        let now: Int64 = 5_000_000
        async let one = Self.admitAll(a, 0..<15, now: now)
        async let two = Self.admitAll(b, 15..<30, now: now)
        #expect(try await one + two == 5)
    }
}
