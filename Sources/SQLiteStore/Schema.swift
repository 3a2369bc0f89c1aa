import Store

/// The database schema, as numbered migrations (applied at start, never edited once released:
/// a change is a new migration).
enum Schema {
    static let migrations: [Migration] = [
        Migration(1, """
        CREATE TABLE sessions (
            identifier TEXT PRIMARY KEY,
            mode TEXT NOT NULL,
            configuration TEXT NOT NULL,
            delegate TEXT,
            lifecycle TEXT NOT NULL,
            invalidate_mode TEXT,
            created_at INTEGER NOT NULL
        ) STRICT;

        -- One row per task. `doc` is the task object (with transferd's own fields) as JSON; the
        -- columns beside it are what queries filter and sort on.
        CREATE TABLE tasks (
            session TEXT NOT NULL,
            id TEXT NOT NULL,
            sequence INTEGER NOT NULL,
            kind TEXT NOT NULL,
            state TEXT NOT NULL,
            idempotency_key TEXT,
            completed_at INTEGER,
            doc TEXT NOT NULL,
            PRIMARY KEY (session, id)
        ) STRICT, WITHOUT ROWID;
        CREATE UNIQUE INDEX tasks_by_sequence ON tasks(session, sequence);
        CREATE UNIQUE INDEX tasks_by_idempotency_key ON tasks(session, idempotency_key) WHERE idempotency_key IS NOT NULL;
        -- Start-up loads only unfinished tasks; this keeps that from reading completed ones.
        CREATE INDEX tasks_unfinished ON tasks(state) WHERE state != 'completed';
        """),
        Migration(2, """
        -- Bytes handed to transferd for uploads (POST /v1/blobs), and inline task bodies spooled
        -- to disk. `owner` names the task a spooled body belongs to (session/task); it is removed
        -- with its task. Client blobs have no owner and are swept after the retention period
        -- once no unfinished task needs them.
        CREATE TABLE blobs (
            id TEXT PRIMARY KEY,
            size INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            owner TEXT
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX blobs_by_age ON blobs(created_at) WHERE owner IS NULL;
        """),
        Migration(3, """
        -- The event journal: per session, in seq order, written in the same transaction as the
        -- change that caused each event. `acked_through` is what the client acknowledged (or the
        -- delegate received); `delivered_through` is how far webhook delivery has got.
        CREATE TABLE events (
            session TEXT NOT NULL,
            seq INTEGER NOT NULL,
            id TEXT NOT NULL,
            type TEXT NOT NULL,
            task TEXT,
            at INTEGER NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (session, seq)
        ) STRICT, WITHOUT ROWID;
        CREATE UNIQUE INDEX events_by_id ON events(id);
        ALTER TABLE sessions ADD COLUMN acked_through INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE sessions ADD COLUMN delivered_through INTEGER NOT NULL DEFAULT 0;

        -- Every webhook attempt, for GET …/deliveries.
        CREATE TABLE deliveries (
            session TEXT NOT NULL,
            event TEXT NOT NULL,
            seq INTEGER NOT NULL,
            attempt INTEGER NOT NULL,
            at INTEGER NOT NULL,
            status INTEGER,
            error TEXT,
            next_attempt_at INTEGER
        ) STRICT;
        CREATE INDEX deliveries_by_session ON deliveries(session, at);
        """),
        Migration(4, """
        -- Start-up counts tasks by state per session and the retention sweep finds old completed
        -- tasks; both from small indexes, never by reading the task documents.
        CREATE INDEX tasks_by_state ON tasks(session, state);
        CREATE INDEX tasks_completed_at ON tasks(completed_at) WHERE completed_at IS NOT NULL;
        CREATE INDEX events_by_time ON events(at);
        """),
        Migration(7, """
        -- The cookie jars of durable sessions (cookies of default and background sessions
        -- survive a restart). `expires` is Unix seconds, NULL for a cookie without
        -- Expires or Max-Age, which lasts as long as its session.
        CREATE TABLE session_cookies (
            session TEXT NOT NULL,
            domain TEXT NOT NULL,
            path TEXT NOT NULL,
            name TEXT NOT NULL,
            value TEXT NOT NULL,
            host_only INTEGER NOT NULL,
            secure INTEGER NOT NULL,
            http_only INTEGER NOT NULL,
            expires INTEGER,
            PRIMARY KEY (session, domain, path, name)
        ) STRICT, WITHOUT ROWID;
        """),
        Migration(30, """
        -- `tasks` becomes a rowid table, its rows appended in the order they are created, and
        -- (session, id) a unique index beside it. Keyed by (session, random id) WITHOUT ROWID, every
        -- insert landed on a random page of the table, and a task document (over a kilobyte) is
        -- larger than an index b-tree keeps in a page, so each row also took an overflow page of
        -- its own: a batch rewrote pages all over the file, and bulk creation spent its time writing
        -- them to the WAL. The secondary indexes now end in an increasing rowid instead of the
        -- random id, so they are appended to as well. (A later migration that adds a column to
        -- `tasks` comes after this one, or is copied here.)
        CREATE TABLE tasks_by_row (
            row INTEGER PRIMARY KEY,
            session TEXT NOT NULL,
            id TEXT NOT NULL,
            sequence INTEGER NOT NULL,
            kind TEXT NOT NULL,
            state TEXT NOT NULL,
            idempotency_key TEXT,
            completed_at INTEGER,
            doc TEXT NOT NULL
        ) STRICT;
        INSERT INTO tasks_by_row (session, id, sequence, kind, state, idempotency_key, completed_at, doc)
            SELECT session, id, sequence, kind, state, idempotency_key, completed_at, doc FROM tasks ORDER BY session, sequence;
        DROP TABLE tasks;
        ALTER TABLE tasks_by_row RENAME TO tasks;
        CREATE UNIQUE INDEX tasks_by_id ON tasks(session, id);
        CREATE UNIQUE INDEX tasks_by_sequence ON tasks(session, sequence);
        CREATE UNIQUE INDEX tasks_by_idempotency_key ON tasks(session, idempotency_key) WHERE idempotency_key IS NOT NULL;
        CREATE INDEX tasks_unfinished ON tasks(state) WHERE state != 'completed';
        CREATE INDEX tasks_by_state ON tasks(session, state);
        CREATE INDEX tasks_completed_at ON tasks(completed_at) WHERE completed_at IS NOT NULL;
        """),
        Migration(31, """
        -- What a completed task costs on disk. Task documents leave out their defaults from now on
        -- (TaskRecord.storageDocument); those stored before read as they are.
        --
        -- An event whose data is one of its task's members at the time (task.completed: the task;
        -- task.finished_downloading: its result; task.response_received: its response) and that is
        -- committed with the task's completion keeps '' as its data (no event's data is empty
        -- otherwise) and is rebuilt from the task's row when read. `refs_from` and `refs_to` bound
        -- the seqs of such events of a task: before its row changes again (PATCH, another update,
        -- removal) their data is written out in full.
        ALTER TABLE tasks ADD COLUMN refs_from INTEGER;
        ALTER TABLE tasks ADD COLUMN refs_to INTEGER;
        -- Counts by state come from the unfinished tasks (the completed are the rest), so an index
        -- of every task's state is not needed.
        DROP INDEX tasks_by_state;
        DROP INDEX tasks_unfinished;
        CREATE INDEX tasks_unfinished ON tasks(session, state) WHERE state != 'completed';

        -- Events name their session by a number (a session's identifier was most of a row and of
        -- its index entries), their type by a code (EventRows.codes), and keep of an id made with
        -- the event's own time (Event.newID(at:)) only its random part. Such an id is found
        -- through events_by_time; an older one by a scan of its session's events: no index of ids.
        CREATE TABLE event_sessions (
            number INTEGER PRIMARY KEY,
            identifier TEXT NOT NULL UNIQUE
        ) STRICT;
        INSERT INTO event_sessions (identifier) SELECT DISTINCT session FROM events ORDER BY session;
        CREATE TABLE events_by_number (
            session INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            type INTEGER NOT NULL,
            task TEXT,
            at INTEGER NOT NULL,
            data TEXT NOT NULL,
            id TEXT NOT NULL,
            PRIMARY KEY (session, seq)
        ) STRICT, WITHOUT ROWID;
        INSERT INTO events_by_number (session, seq, type, task, at, data, id)
            SELECT n.number, e.seq,
                   CASE e.type WHEN 'task.created' THEN 1 WHEN 'task.resumed' THEN 2 WHEN 'task.suspended' THEN 3
                     WHEN 'task.response_received' THEN 4 WHEN 'task.redirected' THEN 5 WHEN 'task.resumed_at_offset' THEN 6
                     WHEN 'task.progress' THEN 7 WHEN 'task.finished_downloading' THEN 8 WHEN 'task.completed' THEN 9
                     WHEN 'session.all_tasks_finished' THEN 10 WHEN 'session.invalidated' THEN 11 ELSE 0 END,
                   e.task, e.at, e.data, e.id
            FROM events AS e JOIN event_sessions AS n ON n.identifier = e.session;
        DROP TABLE events;
        ALTER TABLE events_by_number RENAME TO events;
        CREATE INDEX events_by_time ON events(at);
        """),
        Migration(32, """
        -- The principal that stored a client blob: only it (and admins) may read, delete or upload
        -- from it. Blobs stored before principals existed have none, and are an admin's.
        ALTER TABLE blobs ADD COLUMN principal TEXT;
        """),
        Migration(33, """
        -- Replies kept for Idempotency-Key on the POSTs that act on durable things (a task
        -- creation keeps its key with its task instead); each is kept for a day.
        CREATE TABLE idempotent_replies (
            scope TEXT NOT NULL UNIQUE,
            body_hash TEXT NOT NULL,
            status INTEGER NOT NULL,
            headers TEXT NOT NULL,
            body BLOB NOT NULL,
            expires_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX idempotent_replies_by_expiry ON idempotent_replies(expires_at);
        """),
    ]
}
