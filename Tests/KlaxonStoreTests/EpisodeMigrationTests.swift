import Foundation
import GRDB
import KlaxonCore
import Testing

@testable import KlaxonSQLite
@testable import KlaxonStore

@Suite struct EpisodeMigrationTests {
    @Test(
        "the v14 migration: every transition gets its episode and start, open alerts keep their id and true start, and what was sent counts as heard"
    )
    func migrationGivesEpisodes() async throws {
        let tmp = try TempDatabase()
        let queue = try DatabaseQueue(path: tmp.path)
        try SQLiteStore.migrator.migrate(queue, upTo: "v13-outbox-open")
        try await queue.write { db in
            // A flapping alert on A (fired, resolved, fired again, rose a level) and one on B; the
            // last notification of A's episode to ops was sent, a reminder is still pending.
            try db.execute(
                sql: """
                    INSERT INTO alert_states (rule, station, metric, status, level, since, state, updated_at) VALUES
                        ('flood', 'A', 'h', 'inactive', NULL, NULL, '{"status":"inactive"}', 0),
                        ('flood', 'B', 'h', 'firing', 'action', 50, '{"status":"firing","since":50,"level":"action"}', 0);
                    INSERT INTO transitions (id, rule, kind, station, metric, state, level, from_level, at, severity,
                        summary, explanation, message, recorded_at) VALUES
                        (1, 'flood', 'levels', 'A', 'h', 'firing', 'action', NULL, 100, 'warning', 's', 'e', 'm', 0),
                        (2, 'flood', 'levels', 'B', 'h', 'firing', 'action', NULL, 50, 'warning', 's', 'e', 'm', 0),
                        (3, 'flood', 'levels', 'A', 'h', 'resolved', NULL, 'action', 200, 'warning', 's', 'e', 'm', 0),
                        (4, 'flood', 'levels', 'A', 'h', 'firing', 'action', NULL, 300, 'warning', 's', 'e', 'm', 0),
                        (5, 'flood', 'levels', 'A', 'h', 'changed', 'minor', 'action', 400, 'warning', 's', 'e', 'm', 0),
                        (6, 'flood', 'levels', 'A', 'h', 'resolved', NULL, 'minor', 450, 'warning', 's', 'e', 'm', 0);
                    INSERT INTO outbox (id, seq, transition_id, receiver, alert, group_key, state, due_at, created_at,
                        sent_at) VALUES
                        ('o1', 1, 4, 'ops', 'flood|A|h', 'g', 'sent', 0, 0, 10),
                        ('o2', 2, 5, 'ops', 'flood|A|h', 'g', 'sent', 0, 0, 20),
                        ('o3', 3, 6, 'ops', 'flood|A|h', 'g', 'pending', 0, 0, NULL);
                    """)
        }
        try queue.close()
        let store = try SQLiteStore.open(path: tmp.path)
        let log = try await store.transitions()
        #expect(log.map(\.episode) == [1, 2, 1, 4, 4, 4])
        #expect(log.map(\.startedAt) == [100, 50, 100, 300, 300, 300])
        let firing = try await store.firingAlerts(limit: 10, after: nil).alerts
        let b = try #require(firing.first { $0.key.station == "B" })
        #expect(b.episode == 2 && b.startedAt == 50)
        #expect(try await store.ack(transitionID: 2, by: "ops", at: 500) != nil)
        // The pending resolve survived the outbox's rebuild, and its receiver heard the alert at minor.
        let rows = try await store.outbox()
        #expect(rows.count == 3 && rows.first { $0.id == "o3" }?.state == .pending)
        let claimed = try await store.claim(now: 1, lease: 1_000)
        #expect(claimed.first?.rows.first?.heard == Heard(episode: 4, state: .changed, level: "minor"))
    }
}
