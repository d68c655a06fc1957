import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

extension SQLiteStore {
    static let quakeCursorKey = "evaluated_quake_seq"

    /// Stores quake events, once each: a version linked to a stored event by their own ids (see
    /// `QuakeIdentity`) is that event; a newer `updated` replaces it and keeps the old version in
    /// `quake_revisions`. An event that only shares a third associated id with a stored one is an
    /// event of its own, reported in `conflicts`. One transaction.
    @discardableResult
    public func write(quakes: [QuakeEvent], at now: Int64) async throws -> QuakeWriteStats {
        try await requireWriter().write { db in try Self.write(quakes: quakes, at: now, db) }
    }

    static func write(quakes: [QuakeEvent], at now: Int64, _ db: Database) throws -> QuakeWriteStats {
        var stats = QuakeWriteStats()
        var seq = try Int64.fetchOne(db, sql: "SELECT coalesce(max(seq), 0) FROM quake_events") ?? 0
        // Oldest version first, so a batch holding two versions of one event ends on the newest.
        for e in quakes.sorted(by: { ($0.updated, $0.id) < ($1.updated, $1.id) }) {
            // The event's own id first, then its aliases in feed order: the same key on every run.
            var seen: Set<String> = []
            let aliases = ([e.id] + e.ids).filter { seen.insert($0).inserted }
            let match = QuakeIdentity.match(e, among: try candidates(sharing: aliases, db))
            let key = match.key
            stats.conflicts += match.conflicts
            let json = String(decoding: try JSONEncoder().encode(e), as: UTF8.self)
            if let key,
                let stored = try Row.fetchOne(
                    db, sql: "SELECT updated, event FROM quake_events WHERE id = ?", arguments: [key])
            {
                let storedUpdated: Int64 = stored["updated"]
                guard e.updated > storedUpdated else {
                    stats.unchanged += 1
                    try addAliases(aliases, key: key, db)
                    continue
                }
                seq += 1
                try db.execute(
                    sql: """
                        UPDATE quake_events SET time = ?, updated = ?, magnitude = ?, latitude = ?, longitude = ?,
                            depth_km = ?, status = ?, type = ?, event = ?, seq = ? WHERE id = ?
                        """,
                    arguments: [
                        e.time, e.updated, e.magnitude, e.latitude, e.longitude, e.depthKm, e.status, e.type, json,
                        seq, key,
                    ])
                try db.execute(
                    sql: """
                        INSERT INTO quake_revisions (event_id, updated, event, recorded_at) VALUES (?, ?, ?, ?)
                        ON CONFLICT DO NOTHING
                        """, arguments: [key, e.updated, json, now])
                try addAliases(aliases, key: key, db)
                stats.revised += 1
            } else {
                seq += 1
                let key = key ?? e.id
                try db.execute(
                    sql: """
                        INSERT INTO quake_events (id, time, updated, magnitude, latitude, longitude, depth_km, status,
                            type, event, seq, first_seen)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        key, e.time, e.updated, e.magnitude, e.latitude, e.longitude, e.depthKm, e.status, e.type,
                        json, seq, now,
                    ])
                try db.execute(
                    sql: "INSERT INTO quake_revisions (event_id, updated, event, recorded_at) VALUES (?, ?, ?, ?)",
                    arguments: [key, e.updated, json, now])
                try addAliases(aliases, key: key, db)
                stats.new += 1
            }
        }
        return stats
    }

    /// The stored events known by any of `aliases`, each once, in the order of the aliases.
    static func candidates(sharing aliases: [String], _ db: Database) throws -> [(key: String, event: QuakeEvent)] {
        var out: [(key: String, event: QuakeEvent)] = []
        var seen: Set<String> = []
        for a in aliases {
            guard
                let k = try String.fetchOne(
                    db, sql: "SELECT event_id FROM quake_aliases WHERE alias = ?", arguments: [a]),
                seen.insert(k).inserted,
                let json = try String.fetchOne(db, sql: "SELECT event FROM quake_events WHERE id = ?", arguments: [k])
            else { continue }
            out.append((k, QuakeEvent.stored(json: json, key: k)))
        }
        return out
    }

    static func addAliases(_ aliases: [String], key: String, _ db: Database) throws {
        for a in aliases {
            try db.execute(
                sql: "INSERT INTO quake_aliases (alias, event_id) VALUES (?, ?) ON CONFLICT (alias) DO NOTHING",
                arguments: [a, key])
        }
    }

    /// Stored events with origin time in `[from, to]` (ms), newest first.
    public func quakes(from: Int64, to: Int64) async throws -> [StoredQuake] {
        try await reader.read { db in
            try Row.fetchAll(
                db, sql: "SELECT id, event, seq FROM quake_events WHERE time >= ? AND time <= ? ORDER BY time DESC",
                arguments: [from, to]
            ).compactMap { row in
                guard let e = try? JSONDecoder().decode(QuakeEvent.self, from: Data((row["event"] as String).utf8))
                else { return nil }
                return StoredQuake(key: row["id"], event: e, seq: row["seq"])
            }
        }
    }

    /// Every stored version of every event, oldest `updated` first, each with its event's key (for
    /// replaying the revision sequence in `dry-run`).
    public func quakeRevisions() async throws -> [(key: String, event: QuakeEvent)] {
        try await reader.read { db in
            try Row.fetchAll(db, sql: "SELECT event_id, event FROM quake_revisions ORDER BY updated, event_id")
                .compactMap { row in
                    guard
                        let e = try? JSONDecoder().decode(QuakeEvent.self, from: Data((row["event"] as String).utf8))
                    else { return nil }
                    return (row["event_id"], e)
                }
        }
    }

    /// The number of stored versions of each event (its revision history), by event key.
    public func quakeRevisionCounts() async throws -> [String: Int] {
        try await reader.read { db in
            var out: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT event_id, count(*) AS n FROM quake_revisions GROUP BY 1") {
                out[row["event_id"]] = row["n"]
            }
            return out
        }
    }
}
