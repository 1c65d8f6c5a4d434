/// The history database's tables (`history.db` under `$XDG_STATE_HOME/notify-route/`).
/// As with ``StateSchema``, migration `n` brings `PRAGMA user_version` from `n` to `n + 1`.
enum HistorySchema {
    static let migrations: [String] = [
        // 1: routed events (the record as `history --json` prints it, and the columns
        // `history`'s matchers read); silences; the pause and what it holds. Counts of
        // events and bytes kept by triggers, so the bound is checked without counting rows.
        """
        CREATE TABLE events(
            id INTEGER PRIMARY KEY,
            time REAL NOT NULL,
            level TEXT NOT NULL,
            source TEXT,
            app TEXT,
            title TEXT NOT NULL,
            body TEXT,
            category TEXT,
            tags TEXT NOT NULL,
            record TEXT NOT NULL,
            input TEXT NOT NULL,
            bytes INTEGER NOT NULL);
        CREATE INDEX events_by_time ON events(time);
        CREATE TABLE counts(name TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
        INSERT INTO counts VALUES ('events', 0), ('bytes', 0);
        CREATE TRIGGER events_added AFTER INSERT ON events BEGIN
            UPDATE counts SET n = n + 1 WHERE name = 'events';
            UPDATE counts SET n = n + new.bytes WHERE name = 'bytes'; END;
        CREATE TRIGGER events_removed AFTER DELETE ON events BEGIN
            UPDATE counts SET n = n - 1 WHERE name = 'events';
            UPDATE counts SET n = n - old.bytes WHERE name = 'bytes'; END;
        CREATE TABLE silences(
            id TEXT PRIMARY KEY,
            matchers TEXT NOT NULL,
            starts REAL NOT NULL,
            ends REAL NOT NULL,
            comment TEXT,
            created REAL NOT NULL) WITHOUT ROWID;
        CREATE INDEX silences_by_end ON silences(ends);
        CREATE TABLE pause(
            one INTEGER PRIMARY KEY CHECK (one = 1),
            below TEXT NOT NULL,
            since REAL NOT NULL,
            until REAL);
        CREATE TABLE held(
            id INTEGER PRIMARY KEY,
            time REAL NOT NULL,
            level TEXT NOT NULL,
            source TEXT,
            input TEXT NOT NULL);
        """,
        // 2: no triggers, so that opening the file parses little schema and an insert
        // compiles no trigger program: each event carries the running total of bytes
        // recorded up to it (`upto`), so the bytes kept are two lookups by primary key.
        // `summary` is each sink's outcome in words, so `history` decodes no JSON per row.
        """
        DROP TRIGGER IF EXISTS events_added;
        DROP TRIGGER IF EXISTS events_removed;
        DROP TABLE IF EXISTS counts;
        ALTER TABLE events ADD COLUMN upto INTEGER;
        ALTER TABLE events ADD COLUMN summary TEXT;
        UPDATE events SET upto = running.total
            FROM (SELECT id, sum(bytes) OVER (ORDER BY id) AS total FROM events) AS running
            WHERE events.id = running.id;
        """,
        // 3: the tokens of the spool's lines that the last fold committed (HistorySpool).
        """
        CREATE TABLE folded(token TEXT PRIMARY KEY) WITHOUT ROWID;
        """,
        // 4: no index on time. `history --since` reads newest first (ORDER BY id), so the
        // planner never used it, and every insert and eviction paid for keeping it.
        """
        DROP INDEX IF EXISTS events_by_time;
        """,
        // 5: a record stored in parts (HistoryRecord.Parts): the event's values that no
        // other column holds, and `record` only its outcome. NULL `timeout`: a whole record.
        """
        ALTER TABLE events ADD COLUMN timeout TEXT;
        ALTER TABLE events ADD COLUMN dedup_key TEXT;
        ALTER TABLE events ADD COLUMN dropped_by TEXT;
        """,
    ]
}
