import Foundation
import KlaxonCore
import KlaxonStore
import KlaxonTesting
import PostgresNIO
import Testing

@testable import KlaxonPostgres

@Suite struct PostgresEpisodeMigrationTests {
    @Test(
        "PostgreSQL v3-episodes: every transition gets its episode and start, open alerts keep their id and true start, and what was sent counts as heard"
    )
    func migrationGivesEpisodes() async throws {
        try await PostgresServer.withDatabase { db in
            // The schema as it was before episodes, with history in it.
            var statements = [
                "CREATE TABLE schema_migrations (id TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            ]
            for m in PostgresStore.migrations where m.id != "v3-episodes" {
                statements += PostgresStore.statements(m.sql)
                statements.append("INSERT INTO schema_migrations (id) VALUES ('\(m.id)')")
            }
            statements += [
                """
                INSERT INTO alert_states (rule, station, metric, status, level, since, state, updated_at) VALUES
                    ('flood', 'A', 'h', 'inactive', NULL, NULL, '{"status":"inactive"}', 0),
                    ('flood', 'B', 'h', 'firing', 'action', 50, '{"status":"firing","since":50,"level":"action"}', 0)
                """,
                """
                INSERT INTO transitions (id, rule, kind, station, metric, state, level, from_level, at, severity,
                    summary, explanation, message, recorded_at) VALUES
                    (1, 'flood', 'levels', 'A', 'h', 'firing', 'action', NULL, 100, 'warning', 's', 'e', 'm', 0),
                    (2, 'flood', 'levels', 'B', 'h', 'firing', 'action', NULL, 50, 'warning', 's', 'e', 'm', 0),
                    (3, 'flood', 'levels', 'A', 'h', 'resolved', NULL, 'action', 200, 'warning', 's', 'e', 'm', 0),
                    (4, 'flood', 'levels', 'A', 'h', 'firing', 'action', NULL, 300, 'warning', 's', 'e', 'm', 0),
                    (5, 'flood', 'levels', 'A', 'h', 'changed', 'minor', 'action', 400, 'warning', 's', 'e', 'm', 0),
                    (6, 'flood', 'levels', 'A', 'h', 'resolved', NULL, 'minor', 450, 'warning', 's', 'e', 'm', 0)
                """,
                "SELECT setval(pg_get_serial_sequence('transitions', 'id'), 6)",
                """
                INSERT INTO outbox (id, transition_id, receiver, alert, group_key, state, due_at, created_at, sent_at)
                VALUES ('o1', 4, 'ops', 'flood|A|h', 'g', 'sent', 0, 0, 10),
                       ('o2', 5, 'ops', 'flood|A|h', 'g', 'sent', 0, 0, 20),
                       ('o3', 6, 'ops', 'flood|A|h', 'g', 'pending', 0, 0, NULL)
                """,
            ]
            try await Fixture.postgres(db, statements)
            let configuration = PostgresStore.Configuration(
                host: db.host, port: db.port, username: db.user, database: db.name, maximumConnections: 2)
            try await PostgresStore.with(configuration, logger: Backend.quiet) { store in
                let log = try await store.transitions()
                #expect(log.map(\.episode) == [1, 2, 1, 4, 4, 4])
                #expect(log.map(\.startedAt) == [100, 50, 100, 300, 300, 300])
                let b = try #require(try await store.firingAlerts(limit: 10, after: nil).alerts.first)
                #expect(b.episode == 2 && b.startedAt == 50)
                #expect(try await store.ack(transitionID: 2, by: "ops", at: 500) != nil)
                // The pending resolve's receiver heard the alert at minor.
                let claimed = try await store.claim(now: 1, lease: 1_000)
                #expect(claimed.first?.rows.first?.heard == Heard(episode: 4, state: .changed, level: "minor"))
            }
        }
    }
}
