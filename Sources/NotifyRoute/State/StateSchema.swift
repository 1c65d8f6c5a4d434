/// The state database's tables, declared in one place. Migration `n` (counting from 0)
/// brings a database from `PRAGMA user_version` `n` to `n + 1`; a new table or column is
/// a new entry at the end, never an edit of one that has shipped.
enum StateSchema {
    static let migrations: [String] = [
        // 1: dedup windows, replace handles, held events (rate limits, quiet hours),
        // inhibitors; row counts kept by triggers (by the statements since 5), so that the bound is checked without
        // counting rows. Every lookup and every eviction goes through an index.
        """
        CREATE TABLE dedup(
            id INTEGER PRIMARY KEY,
            sink TEXT NOT NULL,
            key TEXT NOT NULL,
            first_seen REAL NOT NULL,
            last_seen REAL NOT NULL,
            count INTEGER NOT NULL,
            handle TEXT,
            expires REAL NOT NULL,
            UNIQUE(sink, key));
        CREATE INDEX dedup_by_last_seen ON dedup(last_seen);
        CREATE INDEX dedup_by_expiry ON dedup(expires);
        CREATE TABLE handles(
            id INTEGER PRIMARY KEY,
            sink TEXT NOT NULL,
            key TEXT NOT NULL,
            handle TEXT NOT NULL,
            last_used REAL NOT NULL,
            UNIQUE(sink, key));
        CREATE INDEX handles_by_last_used ON handles(last_used);
        CREATE INDEX handles_by_handle ON handles(sink, handle);
        CREATE TABLE held(
            kind INTEGER NOT NULL,
            key TEXT NOT NULL,
            period_start REAL NOT NULL,
            sent INTEGER NOT NULL,
            held INTEGER NOT NULL,
            sources TEXT NOT NULL,
            highest TEXT NOT NULL,
            PRIMARY KEY(kind, key)) WITHOUT ROWID;
        CREATE TABLE inhibitors(
            key TEXT PRIMARY KEY,
            rule INTEGER NOT NULL,
            signature TEXT NOT NULL,
            expires REAL NOT NULL,
            replace_key TEXT,
            dedup_key TEXT NOT NULL) WITHOUT ROWID;
        CREATE INDEX inhibitors_by_replace_key ON inhibitors(replace_key);
        CREATE TABLE counts(name TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
        INSERT INTO counts VALUES ('dedup', 0), ('handles', 0);
        CREATE TRIGGER dedup_added AFTER INSERT ON dedup BEGIN UPDATE counts SET n = n + 1 WHERE name = 'dedup'; END;
        CREATE TRIGGER dedup_removed AFTER DELETE ON dedup BEGIN UPDATE counts SET n = n - 1 WHERE name = 'dedup'; END;
        CREATE TRIGGER handles_added AFTER INSERT ON handles BEGIN UPDATE counts SET n = n + 1 WHERE name = 'handles'; END;
        CREATE TRIGGER handles_removed AFTER DELETE ON handles BEGIN UPDATE counts SET n = n - 1 WHERE name = 'handles'; END;
        """,
        // The daemon's sources: each journal source's read position (an sd-journal cursor),
        // and the units a units source reported failed, to close or replace when they recover.
        // IF NOT EXISTS: another branch's migration may land before this one.
        """
        CREATE TABLE IF NOT EXISTS source_cursors(
            source TEXT PRIMARY KEY,
            cursor TEXT NOT NULL,
            saved REAL NOT NULL) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS source_failed_units(
            source TEXT NOT NULL,
            unit TEXT NOT NULL,
            since REAL NOT NULL,
            PRIMARY KEY(source, unit)) WITHOUT ROWID;
        """,
        // Escalations and snoozes waiting for their time (``PendingTimer``), and the
        // notifications whose action or dismissal acknowledges them.
        """
        CREATE TABLE IF NOT EXISTS timers(
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            route TEXT NOT NULL,
            replace_key TEXT,
            due REAL NOT NULL,
            sinks TEXT NOT NULL,
            event TEXT NOT NULL,
            sent INTEGER NOT NULL,
            since REAL NOT NULL) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS timers_by_due ON timers(due);
        CREATE INDEX IF NOT EXISTS timers_by_replace_key ON timers(replace_key);
        CREATE TABLE IF NOT EXISTS timer_handles(
            sink TEXT NOT NULL,
            handle TEXT NOT NULL,
            timer TEXT NOT NULL,
            PRIMARY KEY(sink, handle, timer)) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS timer_handles_by_timer ON timer_handles(timer);
        """,
        // Open groups of routes' `group` policies, found by when they are due (the daemon's
        // clock asks for the earliest). The record is JSON: read and written whole.
        """
        CREATE TABLE IF NOT EXISTS groups(
            key TEXT PRIMARY KEY,
            due REAL NOT NULL,
            record TEXT NOT NULL) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS groups_by_due ON groups(due);
        """,
        // The row counts kept by the statements that insert and delete, not by triggers:
        // every process parses the whole schema when it opens the database, triggers and
        // the statements they add to every insert included.
        """
        DROP TRIGGER IF EXISTS dedup_added;
        DROP TRIGGER IF EXISTS dedup_removed;
        DROP TRIGGER IF EXISTS handles_added;
        DROP TRIGGER IF EXISTS handles_removed;
        """ + recount,
        // The daemon's outbox: deliveries it accepted and has not finished (a record its journal
        // sink queued, a network delivery it retries), each event whole, in the order accepted.
        """
        CREATE TABLE IF NOT EXISTS outbox(
            id INTEGER PRIMARY KEY,
            sink TEXT NOT NULL,
            state TEXT NOT NULL,
            accepted REAL NOT NULL,
            event TEXT NOT NULL);
        """,
    ]

    /// Sets the row counts from the tables themselves (a scan of each: for migrations and imports).
    static let recount = """
        UPDATE counts SET n = (SELECT count(*) FROM dedup) WHERE name = 'dedup';
        UPDATE counts SET n = (SELECT count(*) FROM handles) WHERE name = 'handles';
        """
}
