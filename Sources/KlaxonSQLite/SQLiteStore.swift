import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

/// The SQLite `Store`: Klaxon's database (WAL mode, named migrations). Pass a path to open a file; the file and
/// its schema are created on first use.
public final class SQLiteStore: Store {
    public let path: String
    /// Readers: every query goes through this.
    let reader: any DatabaseReader
    /// Nil when the store was opened read-only.
    let writer: (any DatabaseWriter)?
    /// The file opened (its device and inode): a deleted or replaced file is seen (`storeFile()`),
    /// and the writer refuses to commit to it. Nil when opened read-only.
    let file: DatabaseFileIdentity?

    private init(
        path: String, reader: any DatabaseReader, writer: (any DatabaseWriter)?, file: DatabaseFileIdentity? = nil
    ) {
        self.path = path
        self.reader = reader
        self.writer = writer
        self.file = file
    }

    /// Opens (creating if needed) a database file for reading and writing, and migrates it.
    /// `writerCacheMiB` is the writing connection's page cache: 32 MiB suits bulk ingest; the daemon,
    /// which writes a little at a time and stays up, takes less.
    /// `readerCacheMiB` is each reader's (the daemon keeps them small: its reads are narrow).
    /// With `create: false` (a command that expects a database: `silence add`, `outbox list`), a path
    /// with no file, or a file that is not a Klaxon database, is an error and nothing is created.
    public static func open(
        path: String, writerCacheMiB: Int = 32, readerCacheMiB: Int = 4, create: Bool = true
    ) throws -> SQLiteStore {
        if !create { try requireKlaxonDatabase(path: path) }
        // SQLite would take an emptied or cut-short file for a new database and start afresh over it.
        try refuseTruncatedFile(path: path)
        let file = DatabaseFileIdentity(path: path)
        let fileGuard = DatabaseFileGuard(file: file)
        var config = Configuration()
        config.busyMode = .timeout(10)
        // Readers serve the API, chat and pages: a few of them, with small caches. The writer's cache
        // is the one bulk ingest and evaluation lean on.
        config.maximumReaderCount = 3
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // A large page cache for the writer (bulk ingest touches many index pages), 4 MiB for each
            // reader.
            let kib = (db.configuration.readonly ? max(1, readerCacheMiB) : max(1, writerCacheMiB)) * 1024
            try db.execute(sql: "PRAGMA cache_size = -\(kib)")
            // Statement journals (an insert checked against a foreign key keeps one) in memory, not
            // in a temporary file opened per statement: a fifth of an evaluation's time went there.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            // The writer commits nothing once its file is no longer the one at the path.
            if !db.configuration.readonly { db.add(transactionObserver: fileGuard, extent: .databaseLifetime) }
        }
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: path, configuration: config)
        } catch {
            throw StoreError.cannotOpen(path: path, reason: "\(error)")
        }
        // The file exists now (and its write-ahead log): what is at the path from here on must be it.
        // The page size is asked of the writer after the migrations: a reader connection opened before them
        // would keep the schema it saw (the transitions' columns before `v14-episodes`, say).
        try migrator.migrate(pool)
        file.capture(pageSize: (try? pool.write { db in try Int.fetchOne(db, sql: "PRAGMA page_size") }) ?? 0)
        return SQLiteStore(path: path, reader: pool, writer: pool, file: file)
    }

    /// A migrated database in memory (GRDB's `DatabaseQueue()`), gone with the store: the in-process stand-in
    /// for tests of what sits above the store (the site, the APIs, chat), as NIO's embedded channel is for
    /// handlers. The conformance suite runs over it too, so it is the same store, not a fake; only what is
    /// about a file (`storeFile()`, the room check of `probeWrite()`) has nothing to check.
    public static func inMemory() throws -> SQLiteStore {
        var config = Configuration()
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA temp_store = MEMORY") }
        let queue = try DatabaseQueue(configuration: config)
        try migrator.migrate(queue)
        return SQLiteStore(path: ":memory:", reader: queue, writer: queue, file: nil)
    }

    /// There is a file (not a folder) at `path`.
    static func requireFile(path: String) throws {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw StoreError.missingFile(path: path)
        }
        guard !isFolder.boolValue else {
            throw StoreError.cannotOpen(path: path, reason: "it is a folder, not a database file")
        }
    }

    /// A command that expects a database finds one at `path`: a file with Klaxon's first migration.
    static func requireKlaxonDatabase(path: String) throws {
        try requireFile(path: path)
        var config = Configuration()
        config.readonly = true
        config.busyMode = .timeout(10)
        let applied: Set<String>
        do {
            let queue = try DatabaseQueue(path: path, configuration: config)
            applied = try queue.read { db in try migrator.appliedIdentifiers(db) }
        } catch {
            throw StoreError.cannotOpen(path: path, reason: "not a Klaxon database (\(error))")
        }
        guard applied.contains("v1-readings") else {
            throw StoreError.cannotOpen(
                path: path,
                reason:
                    "not a Klaxon database; start `klaxon run` or `klaxon ingest` on it first, or check --db/--config")
        }
    }

    /// Whether the database at `path` has a write-ahead log beside it (`-wal`): some connection has it
    /// open, or one ended without cleaning up.
    public static func hasWriteAheadLog(path: String) -> Bool {
        FileManager.default.fileExists(atPath: path + "-wal") || FileManager.default.fileExists(atPath: path + "-shm")
    }

    /// After a read-only store is closed: a read-only connection to a WAL database makes `-wal` and
    /// `-shm` files it may not remove. A read-write connection opened and closed here removes them the
    /// way SQLite always does, only when it is the last connection (any other process keeps them), so
    /// a command that read leaves the folder as it found it. Never creates the database.
    public static func closeLeftovers(path: String) {
        guard FileManager.default.fileExists(atPath: path), hasWriteAheadLog(path: path) else { return }
        var config = Configuration()
        config.busyMode = .timeout(1)
        // SQLite opens the file lazily: one read makes the connection join the WAL, and closing it
        // (the queue is released at once) then checkpoints and removes the files if no one else has it.
        let queue = try? DatabaseQueue(path: path, configuration: config)
        _ = try? queue?.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
    }

    /// Opens an existing database read-only: nothing can write to it through this store.
    public static func openReadOnly(path: String) throws -> SQLiteStore {
        try requireFile(path: path)
        var config = Configuration()
        config.readonly = true
        config.busyMode = .timeout(10)
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: path, configuration: config)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_NOTADB {
            throw StoreError.cannotOpen(path: path, reason: "not a Klaxon database (\(error))")
        } catch {
            throw StoreError.cannotOpen(path: path, reason: "\(error)")
        }
        let applied: Set<String>
        let complete: Bool
        do {
            (applied, complete) = try queue.read { db in
                (try migrator.appliedIdentifiers(db), try migrator.hasCompletedMigrations(db))
            }
        } catch let error as DatabaseError where StoreFailure.classify(error)?.kind != .busy {
            // A file that is not a database at all (text, a foreign format) or cannot be read.
            throw StoreError.cannotOpen(path: path, reason: "not a Klaxon database (\(error))")
        }
        guard applied.contains("v1-readings") else {
            throw StoreError.cannotOpen(path: path, reason: "not a Klaxon database (run `klaxon ingest` first)")
        }
        // Queries read columns the newer migrations added (`readings.suspect`): an older schema cannot
        // be read here, and read-only it cannot be upgraded.
        guard complete else {
            throw StoreError.cannotOpen(
                path: path,
                reason:
                    "written by an older klaxon; run a command that writes to it once (`klaxon ingest`, `evaluate`) to upgrade it"
            )
        }
        return SQLiteStore(path: path, reader: queue, writer: nil)
    }

    public func readingWriter(source: String?) throws -> any ReadingWriter {
        ReadingIngester(writer: try requireWriter(), source: source)
    }

    func requireWriter() throws -> any DatabaseWriter {
        guard let writer else { throw StoreError.readOnly(path: path) }
        return writer
    }

    /// The schema, one named migration per step. Never edit a shipped migration: add one.
    static let migrator: DatabaseMigrator = {
        var m = DatabaseMigrator()
        m.registerMigration("v1-readings") { db in
            try db.execute(
                sql: """
                    CREATE TABLE stations (
                        id TEXT PRIMARY KEY NOT NULL CHECK (id <> ''),
                        source TEXT,
                        name TEXT,
                        latitude REAL CHECK (latitude IS NULL OR latitude BETWEEN -90 AND 90),
                        longitude REAL CHECK (longitude IS NULL OR longitude BETWEEN -180 AND 180),
                        time_zone TEXT,
                        attributes TEXT NOT NULL DEFAULT '{}'
                    );
                    CREATE TABLE series (
                        id INTEGER PRIMARY KEY,
                        station TEXT NOT NULL REFERENCES stations(id),
                        metric TEXT NOT NULL CHECK (metric <> ''),
                        unit TEXT,
                        UNIQUE (station, metric)
                    );
                    CREATE TABLE readings (
                        -- No REFERENCES clause: the ingester resolves every series_id itself, and a
                        -- foreign-key probe per row would cost a fifth of bulk-ingest time.
                        series_id INTEGER NOT NULL,
                        time INTEGER NOT NULL,
                        value REAL NOT NULL,
                        quality TEXT,
                        revised INTEGER NOT NULL DEFAULT 0 CHECK (revised IN (0, 1)),
                        PRIMARY KEY (series_id, time)
                    ) WITHOUT ROWID;
                    -- What each ingest batch changed, per series: evaluation reads this instead of a
                    -- per-reading sequence column, whose index would cost every insert a second B-tree write.
                    CREATE TABLE ingest_log (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        series_id INTEGER NOT NULL REFERENCES series(id),
                        min_time INTEGER NOT NULL,
                        count INTEGER NOT NULL CHECK (count > 0)
                    );
                    CREATE TABLE meta (
                        key TEXT PRIMARY KEY NOT NULL,
                        value TEXT NOT NULL
                    );
                    """)
        }
        m.registerMigration("v1-alerts") { db in
            try db.execute(
                sql: """
                    CREATE TABLE alert_states (
                        rule TEXT NOT NULL,
                        station TEXT NOT NULL,
                        metric TEXT NOT NULL,
                        status TEXT NOT NULL CHECK (status IN ('inactive', 'pending', 'firing')),
                        level TEXT,
                        since INTEGER,
                        state TEXT NOT NULL,
                        updated_at INTEGER NOT NULL,
                        PRIMARY KEY (rule, station, metric)
                    );
                    CREATE TABLE transitions (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        rule TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        station TEXT NOT NULL,
                        metric TEXT NOT NULL,
                        state TEXT NOT NULL CHECK (state IN ('firing', 'resolved', 'changed')),
                        level TEXT,
                        from_level TEXT,
                        at INTEGER NOT NULL,
                        value REAL,
                        unit TEXT,
                        severity TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
                        labels TEXT NOT NULL DEFAULT '{}',
                        summary TEXT NOT NULL,
                        explanation TEXT NOT NULL,
                        message TEXT NOT NULL,
                        recorded_at INTEGER NOT NULL
                    );
                    CREATE INDEX transitions_by_alert ON transitions(rule, station, metric, id);
                    """)
        }
        m.registerMigration("v2-outbox") { db in
            try db.execute(
                sql: """
                    CREATE TABLE outbox (
                        id TEXT PRIMARY KEY NOT NULL,
                        seq INTEGER NOT NULL UNIQUE,
                        transition_id INTEGER NOT NULL REFERENCES transitions(id),
                        receiver TEXT NOT NULL,
                        route INTEGER,
                        alert TEXT NOT NULL,
                        group_key TEXT NOT NULL,
                        purpose TEXT NOT NULL DEFAULT 'transition'
                            CHECK (purpose IN ('transition', 'repeat', 'system')),
                        state TEXT NOT NULL DEFAULT 'pending'
                            CHECK (state IN ('pending', 'sending', 'sent', 'dead', 'muted', 'dropped')),
                        batch TEXT,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        due_at INTEGER NOT NULL,
                        lease_until INTEGER,
                        created_at INTEGER NOT NULL,
                        sent_at INTEGER,
                        last_error TEXT
                    );
                    CREATE INDEX outbox_by_state_due ON outbox(state, due_at);
                    CREATE INDEX outbox_by_alert ON outbox(alert, receiver, seq);
                    CREATE TABLE silences (
                        id TEXT PRIMARY KEY NOT NULL,
                        matchers TEXT NOT NULL,
                        starts_at INTEGER NOT NULL,
                        ends_at INTEGER NOT NULL CHECK (ends_at > starts_at),
                        comment TEXT NOT NULL,
                        created_by TEXT NOT NULL,
                        created_at INTEGER NOT NULL
                    );
                    """)
        }
        m.registerMigration("v3-water") { db in
            try db.execute(
                sql: """
                    -- NWS gauges (NWPS metadata): flood categories and the USGS id <-> NWS LID mapping.
                    CREATE TABLE gauges (
                        lid TEXT PRIMARY KEY NOT NULL CHECK (lid <> ''),
                        usgs_id TEXT,
                        info TEXT NOT NULL,
                        fetched_at INTEGER NOT NULL
                    );
                    CREATE INDEX gauges_by_usgs_id ON gauges(usgs_id);
                    -- Per configured source: where its next fetch starts, and how the last ones went.
                    CREATE TABLE source_state (
                        source TEXT PRIMARY KEY NOT NULL,
                        cursor TEXT,
                        last_attempt INTEGER,
                        last_success INTEGER,
                        last_error TEXT,
                        failures INTEGER NOT NULL DEFAULT 0,
                        -- A server's Retry-After: no fetch before this time.
                        not_before INTEGER
                    );
                    """)
        }
        m.registerMigration("v4-quakes") { db in
            try db.execute(
                sql: """
                    -- Quake events, stored once under the id first seen; `seq` orders changes for evaluation.
                    CREATE TABLE quake_events (
                        id TEXT PRIMARY KEY NOT NULL,
                        time INTEGER NOT NULL,
                        updated INTEGER NOT NULL,
                        magnitude REAL,
                        latitude REAL NOT NULL,
                        longitude REAL NOT NULL,
                        depth_km REAL,
                        status TEXT NOT NULL,
                        type TEXT NOT NULL,
                        event TEXT NOT NULL,
                        seq INTEGER NOT NULL,
                        first_seen INTEGER NOT NULL
                    );
                    CREATE INDEX quake_events_by_time ON quake_events(time);
                    CREATE INDEX quake_events_by_seq ON quake_events(seq);
                    -- Every id an event is known by (USGS merges events under another network's id).
                    CREATE TABLE quake_aliases (
                        alias TEXT PRIMARY KEY NOT NULL,
                        event_id TEXT NOT NULL REFERENCES quake_events(id)
                    );
                    -- Every version of every event, by its `updated` time.
                    CREATE TABLE quake_revisions (
                        event_id TEXT NOT NULL REFERENCES quake_events(id),
                        updated INTEGER NOT NULL,
                        event TEXT NOT NULL,
                        recorded_at INTEGER NOT NULL,
                        PRIMARY KEY (event_id, updated)
                    );
                    -- What each quake rule last announced for each event.
                    CREATE TABLE quake_announcements (
                        rule TEXT NOT NULL,
                        event_id TEXT NOT NULL,
                        announced TEXT NOT NULL,
                        PRIMARY KEY (rule, event_id)
                    );
                    """)
        }
        m.registerMigration("v5-trips") { db in
            try db.execute(
                sql: """
                    -- Saved trips, each owned by one owner.
                    CREATE TABLE trips (
                        owner TEXT NOT NULL CHECK (owner <> ''),
                        name TEXT NOT NULL CHECK (name <> ''),
                        trip TEXT NOT NULL,
                        created_at INTEGER NOT NULL,
                        updated_at INTEGER NOT NULL,
                        PRIMARY KEY (owner, name)
                    );
                    -- Daily weather per place (a "lat,lon" key), date and source; the newest issue wins.
                    CREATE TABLE forecasts (
                        place TEXT NOT NULL,
                        date TEXT NOT NULL,
                        source TEXT NOT NULL,
                        latitude REAL NOT NULL,
                        longitude REAL NOT NULL,
                        issued INTEGER NOT NULL,
                        climatology INTEGER NOT NULL CHECK (climatology IN (0, 1)),
                        weather TEXT NOT NULL,
                        seq INTEGER NOT NULL,
                        PRIMARY KEY (place, date, source)
                    );
                    CREATE INDEX forecasts_by_seq ON forecasts(seq);
                    CREATE TABLE weather_alerts (
                        id TEXT NOT NULL,
                        place TEXT NOT NULL,
                        alert TEXT NOT NULL,
                        seq INTEGER NOT NULL,
                        PRIMARY KEY (id, place)
                    );
                    -- What each trip-packing rule last announced for each trip.
                    CREATE TABLE trip_announcements (
                        rule TEXT NOT NULL,
                        owner TEXT NOT NULL,
                        name TEXT NOT NULL,
                        announced TEXT NOT NULL,
                        PRIMARY KEY (rule, owner, name)
                    );
                    """)
        }
        m.registerMigration("v6-acks") { db in
            try db.execute(
                sql: """
                    -- An ack holds for the transition it acknowledged: a new state clears it.
                    CREATE TABLE acks (
                        rule TEXT NOT NULL,
                        station TEXT NOT NULL,
                        metric TEXT NOT NULL,
                        transition_id INTEGER NOT NULL,
                        acked_by TEXT NOT NULL,
                        acked_at INTEGER NOT NULL,
                        PRIMARY KEY (rule, station, metric)
                    );
                    """)
        }
        m.registerMigration("v7-ingest-source") { db in
            // The configured source that wrote a batch, so readings are counted by the source that
            // fetched them, not by whichever source last described the station.
            try db.execute(sql: "ALTER TABLE ingest_log ADD COLUMN source TEXT")
        }
        m.registerMigration("v8-instances") { db in
            try db.execute(
                sql: """
                    -- Each dispatcher process that claimed outbox rows: a restarted daemon on the same host
                    -- sees that the process behind a claim is gone and takes the claim back at once.
                    CREATE TABLE instances (
                        id TEXT PRIMARY KEY NOT NULL,
                        host TEXT NOT NULL,
                        pid INTEGER NOT NULL,
                        -- The process's start time (clock ticks since boot), so a reused pid is not taken for it.
                        process_start INTEGER NOT NULL,
                        registered_at INTEGER NOT NULL,
                        heartbeat_at INTEGER NOT NULL
                    );
                    ALTER TABLE outbox ADD COLUMN claimed_by TEXT;
                    CREATE INDEX outbox_by_claim ON outbox(claimed_by) WHERE state = 'sending';
                    """)
        }
        m.registerMigration("v9-alert-states-by-series") { db in
            // Evaluation loads a series' alert states by station and metric (every rule at once); the
            // primary key leads with the rule, so without this each load scanned the whole table and
            // a backlog over 20,000 alerting series took a minute.
            try db.execute(sql: "CREATE INDEX alert_states_by_series ON alert_states(station, metric)")
        }
        m.registerMigration("v10-retention") { db in
            try db.execute(
                sql: """
                    -- Retention walks transitions by age; recorded_at grows with id, so each insert
                    -- appends at the index's end.
                    CREATE INDEX transitions_by_recorded ON transitions(recorded_at);
                    -- Pruning folds evaluated ingest-log entries into the oldest of their series and source.
                    CREATE INDEX ingest_log_by_series ON ingest_log(series_id, source);
                    CREATE INDEX forecasts_by_date ON forecasts(date);
                    """)
        }
        m.registerMigration("v11-metric-counts") { db in
            // `/metrics` reads these few rows instead of counting whole tables at every scrape. Triggers
            // keep them in the same transaction as the event, whichever process writes it; they are
            // seeded once here from what the tables hold.
            try db.execute(sql: metricCountsSchema)
        }
        m.registerMigration("v12-reading-quality") { db in
            try db.execute(
                sql: """
                    -- A reading out of its metric's physical range, or flagged bad by its source's quality
                    -- code (KlaxonCore's Plausibility): kept and shown, but evaluation and statistics skip it.
                    -- 0 or 1. No NOT NULL or CHECK: SQLite tests those on every inserted row, a tenth more
                    -- CPU for bulk ingest; the ingester binds 0 or 1 itself, and older rows read the default.
                    ALTER TABLE readings ADD COLUMN suspect INTEGER DEFAULT 0;
                    -- How many of an entry's readings are suspect: evaluation steps count - suspect of them.
                    ALTER TABLE ingest_log ADD COLUMN suspect INTEGER NOT NULL DEFAULT 0;
                    """)
            try markSuspectReadings(db)
        }
        m.registerMigration("v13-outbox-open") { db in
            try db.execute(
                sql: """
                    -- The rows a dispatcher may still send, in queue order: a claim walks this from the
                    -- oldest and stops at its limit, instead of reading every due row and sorting them.
                    CREATE INDEX outbox_open_by_seq ON outbox(seq) WHERE state IN ('pending', 'sending');
                    -- "Is an earlier row of this alert still unsent?" (claims keep a firing before its
                    -- resolve) without walking the alert's delivered history.
                    CREATE INDEX outbox_open_by_alert ON outbox(alert, receiver, seq)
                        WHERE state IN ('pending', 'sending');
                    """)
        }
        m.registerMigration("v14-episodes") { db in
            // Alert episodes (`Episodes.swift`): each transition names the episode it belongs to; the
            // outbox gains the states of "notify the present" (held, superseded, skipped) and a row's
            // folded path. SQLite cannot change a CHECK, so the outbox is rebuilt.
            try db.execute(
                sql: """
                    ALTER TABLE transitions ADD COLUMN episode INTEGER;
                    ALTER TABLE transitions ADD COLUMN started_at INTEGER;
                    CREATE INDEX transitions_by_episode ON transitions(episode);
                    CREATE TABLE outbox_v14 (
                        id TEXT PRIMARY KEY NOT NULL,
                        seq INTEGER NOT NULL UNIQUE,
                        transition_id INTEGER NOT NULL REFERENCES transitions(id),
                        receiver TEXT NOT NULL,
                        route INTEGER,
                        alert TEXT NOT NULL,
                        group_key TEXT NOT NULL,
                        purpose TEXT NOT NULL DEFAULT 'transition'
                            CHECK (purpose IN ('transition', 'repeat', 'system')),
                        state TEXT NOT NULL DEFAULT 'pending'
                            CHECK (state IN ('pending', 'sending', 'sent', 'dead', 'muted', 'dropped', 'held',
                                             'superseded', 'skipped')),
                        batch TEXT,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        due_at INTEGER NOT NULL,
                        lease_until INTEGER,
                        created_at INTEGER NOT NULL,
                        sent_at INTEGER,
                        last_error TEXT,
                        claimed_by TEXT,
                        path TEXT
                    );
                    INSERT INTO outbox_v14 (id, seq, transition_id, receiver, route, alert, group_key, purpose, state,
                      batch, attempts, due_at, lease_until, created_at, sent_at, last_error, claimed_by)
                    SELECT id, seq, transition_id, receiver, route, alert, group_key, purpose, state,
                      batch, attempts, due_at, lease_until, created_at, sent_at, last_error, claimed_by FROM outbox;
                    DROP TABLE outbox;
                    ALTER TABLE outbox_v14 RENAME TO outbox;
                    CREATE INDEX outbox_by_state_due ON outbox(state, due_at);
                    CREATE INDEX outbox_by_alert ON outbox(alert, receiver, seq);
                    CREATE INDEX outbox_by_claim ON outbox(claimed_by) WHERE state = 'sending';
                    CREATE INDEX outbox_open_by_seq ON outbox(seq) WHERE state IN ('pending', 'sending');
                    CREATE INDEX outbox_open_by_alert ON outbox(alert, receiver, seq)
                        WHERE state IN ('pending', 'sending');
                    CREATE INDEX outbox_held ON outbox(alert, receiver) WHERE state = 'held';
                    CREATE TRIGGER metric_outbox_delete AFTER DELETE ON outbox
                    WHEN OLD.state IN ('sent', 'dead', 'muted', 'dropped', 'superseded', 'skipped') BEGIN
                        INSERT INTO metric_counts (family, a, n) VALUES ('outbox', OLD.state, -1)
                        ON CONFLICT (family, a, b) DO UPDATE SET n = n + excluded.n, total = total + excluded.total;
                    END;
                    """ + EpisodeSQL.backfill)
        }
        m.registerMigration("v15-transition-extra") { db in
            // `TransitionRecord.extra`: a transition's place, headline, details and annotations.
            try db.execute(sql: "ALTER TABLE transitions ADD COLUMN extra TEXT")
        }
        m.registerMigration("v16-readings-by-source") { db in
            try db.execute(sql: readingsBySourceSchema)
        }
        m.registerMigration("v17-silence-matchers") { db in
            // Matchers as {name, type, value} (`SilenceRecord.matchers`), no longer `name=value` lines.
            let rows = try Row.fetchAll(db, sql: "SELECT id, matchers, created_by FROM silences")
            for row in rows {
                guard let text = SilenceRecord.structured(legacy: row["matchers"], createdBy: row["created_by"])
                else { continue }
                try db.execute(
                    sql: "UPDATE silences SET matchers = ? WHERE id = ?", arguments: [text, row["id"] as String])
            }
        }
        m.registerMigration("v18-chat-seen") { db in
            // The chat endpoints' used request signatures and button nonces, until they expire
            // (`claimOnce`): a replay is refused after a restart too.
            try db.execute(
                sql: """
                    CREATE TABLE chat_seen (key TEXT PRIMARY KEY NOT NULL, expires INTEGER NOT NULL);
                    CREATE INDEX chat_seen_expires ON chat_seen(expires);
                    """)
        }
        m.registerMigration("v19-living-messages") { db in
            // Each editing receiver's message per episode or group (`LivingMessage`): the platform's id
            // of it and the timeline it shows, so an edit after a restart edits the same message.
            try db.execute(
                sql: """
                    CREATE TABLE living_messages (
                        receiver TEXT NOT NULL,
                        thread TEXT NOT NULL,
                        message_id TEXT NOT NULL,
                        timeline TEXT NOT NULL,
                        batch TEXT NOT NULL,
                        closed INTEGER NOT NULL DEFAULT 0 CHECK (closed IN (0, 1)),
                        created_at INTEGER NOT NULL,
                        updated_at INTEGER NOT NULL,
                        PRIMARY KEY (receiver, thread)
                    );
                    """)
        }
        m.registerMigration("v20-notification-history") { db in
            // A receiver's notifications, newest first (`notifications(_:limit:after:)`): one index range.
            try db.execute(sql: "CREATE INDEX outbox_by_receiver ON outbox(receiver, seq)")
        }
        m.registerMigration("v21-forecast-issuances") { db in
            // River forecast issuances (`ForecastRows`), apart from readings: one row per gauge series
            // and issue time; `seq` grows with each write, for the evaluation's cursor.
            try db.execute(
                sql: """
                    CREATE TABLE forecast_issuances (
                        seq INTEGER NOT NULL UNIQUE,
                        station TEXT NOT NULL CHECK (station <> ''),
                        metric TEXT NOT NULL CHECK (metric <> ''),
                        issued INTEGER NOT NULL,
                        unit TEXT NOT NULL,
                        source TEXT NOT NULL,
                        points TEXT NOT NULL,
                        first_time INTEGER NOT NULL,
                        last_time INTEGER NOT NULL,
                        stored_at INTEGER NOT NULL,
                        PRIMARY KEY (station, metric, issued)
                    );
                    CREATE TABLE forecast_announcements (
                        rule TEXT NOT NULL,
                        station TEXT NOT NULL,
                        metric TEXT NOT NULL,
                        announced TEXT NOT NULL,
                        PRIMARY KEY (rule, station, metric)
                    );
                    """)
        }
        m.registerMigration("v22-air-forecasts") { db in
            // AirNow's forecasts per reporting area (lowercased), date and pollutant; the latest
            // issuance wins (`AirForecastStore`). `forecast` is the `AirForecast` as JSON.
            try db.execute(
                sql: """
                    CREATE TABLE air_forecasts (
                        area_key TEXT NOT NULL,
                        date TEXT NOT NULL,
                        parameter TEXT NOT NULL,
                        issued TEXT NOT NULL,
                        forecast TEXT NOT NULL,
                        PRIMARY KEY (area_key, date, parameter)
                    );
                    CREATE INDEX air_forecasts_by_date ON air_forecasts(date);
                    """)
        }
        m.registerMigration("v23-watches") { db in
            // People's watches (issue 43, `WatchStore`): the owner's key, their own number for each,
            // the kind (for counts) and the watch as JSON.
            try db.execute(
                sql: """
                    CREATE TABLE watches (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        owner TEXT NOT NULL,
                        number INTEGER NOT NULL CHECK (number > 0),
                        kind TEXT NOT NULL,
                        body TEXT NOT NULL,
                        created_at INTEGER NOT NULL,
                        UNIQUE (owner, number)
                    );
                    """)
        }
        m.registerMigration("v25-receiver-budgets") { db in
            // Each receiver's budget window (`BudgetWindow` as JSON): its sends in the window, its
            // storm and that storm's summary message; and the alerts folded in the storm, a row per
            // alert and episode (issue 41, "no storms").
            try db.execute(
                sql: """
                    CREATE TABLE receiver_budgets (
                        receiver TEXT PRIMARY KEY,
                        state TEXT NOT NULL,
                        updated_at INTEGER NOT NULL
                    );
                    CREATE TABLE budget_folds (
                        receiver TEXT NOT NULL,
                        alert TEXT NOT NULL,
                        episode INTEGER NOT NULL,
                        subject TEXT NOT NULL,
                        station TEXT NOT NULL,
                        place TEXT NOT NULL,
                        folded_at INTEGER NOT NULL,
                        resolved INTEGER NOT NULL DEFAULT 0 CHECK (resolved IN (0, 1)),
                        PRIMARY KEY (receiver, alert, episode)
                    );
                    """)
        }
        m.registerMigration("v26-watch-quiet-hours") { db in
            // People's own quiet hours for their watches (issue 43), and the counter every change of
            // the watches or of quiet hours bumps (`watchGeneration`): a daemon rebuilds its watch
            // rules only when it moved.
            try db.execute(
                sql: """
                    CREATE TABLE watch_quiet_hours (
                        owner TEXT PRIMARY KEY,
                        start_minute INTEGER NOT NULL CHECK (start_minute BETWEEN 0 AND 1440),
                        end_minute INTEGER NOT NULL CHECK (end_minute BETWEEN 0 AND 1440),
                        time_zone TEXT NOT NULL,
                        updated_at INTEGER NOT NULL
                    );
                    CREATE TABLE watch_changes (
                        id INTEGER PRIMARY KEY CHECK (id = 1),
                        generation INTEGER NOT NULL
                    );
                    INSERT INTO watch_changes (id, generation) VALUES (1, 0);
                    """)
        }
        return m
    }()
}
