import Postgres

/// The schema on PostgreSQL (14 or newer), as numbered migrations: applied at start, never edited
/// once released (a change is a new migration). Times are Unix milliseconds in `bigint`s, as in
/// the SQLite store, so both keep the same values; a task's `doc` is its JSON as text, byte for
/// byte what the core encoded.
enum PostgresSchema {
    static let migrations: [(version: Int, sql: String)] = [
        (1, """
        CREATE TABLE sessions (
            identifier text PRIMARY KEY,
            mode text NOT NULL,
            configuration text NOT NULL,
            delegate text,
            lifecycle text NOT NULL,
            invalidate_mode text,
            created_at bigint NOT NULL,
            acked_through bigint NOT NULL DEFAULT 0,
            delivered_through bigint NOT NULL DEFAULT 0
        );
        CREATE TABLE tasks (
            session text NOT NULL,
            id text NOT NULL,
            sequence bigint NOT NULL,
            kind text NOT NULL,
            state text NOT NULL,
            idempotency_key text,
            completed_at bigint,
            doc text NOT NULL,
            PRIMARY KEY (session, id)
        );
        CREATE UNIQUE INDEX tasks_by_sequence ON tasks (session, sequence);
        CREATE UNIQUE INDEX tasks_by_idempotency_key ON tasks (session, idempotency_key) WHERE idempotency_key IS NOT NULL;
        -- Start-up loads only unfinished tasks; summaries count them by state.
        CREATE INDEX tasks_unfinished ON tasks (session, state) WHERE state <> 'completed';
        CREATE INDEX tasks_completed_at ON tasks (completed_at) WHERE completed_at IS NOT NULL;

        -- Spooled bodies' `owner` is session/task: they go with their session.
        CREATE TABLE blobs (
            id text PRIMARY KEY,
            size bigint NOT NULL,
            sha256 text NOT NULL,
            created_at bigint NOT NULL,
            owner text,
            principal text
        );
        CREATE INDEX blobs_by_age ON blobs (created_at) WHERE owner IS NULL;

        CREATE TABLE events (
            session text NOT NULL,
            seq bigint NOT NULL,
            id text NOT NULL UNIQUE,
            type text NOT NULL,
            task text,
            at bigint NOT NULL,
            data text NOT NULL,
            PRIMARY KEY (session, seq)
        );
        CREATE INDEX events_by_time ON events (at);

        -- Webhook attempts; `position` orders them (rows are only appended).
        CREATE TABLE deliveries (
            position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            session text NOT NULL,
            event text NOT NULL,
            seq bigint NOT NULL,
            attempt integer NOT NULL,
            at bigint NOT NULL,
            status integer,
            error text,
            next_attempt_at bigint
        );
        CREATE INDEX deliveries_by_session ON deliveries (session, position);
        CREATE INDEX deliveries_by_time ON deliveries (at);

        -- `expires` is Unix seconds, NULL for a cookie that lasts as long as its session.
        CREATE TABLE session_cookies (
            session text NOT NULL,
            domain text NOT NULL,
            path text NOT NULL,
            name text NOT NULL,
            value text NOT NULL,
            host_only boolean NOT NULL,
            secure boolean NOT NULL,
            http_only boolean NOT NULL,
            expires bigint,
            PRIMARY KEY (session, domain, path, name)
        );

        CREATE TABLE idempotent_replies (
            scope text PRIMARY KEY,
            body_hash text NOT NULL,
            status integer NOT NULL,
            headers text NOT NULL,
            body bytea NOT NULL,
            expires_at bigint NOT NULL
        );
        CREATE INDEX idempotent_replies_by_expiry ON idempotent_replies (expires_at);
        """),
        (2, """
        -- Cluster mode: which replica works on a session's tasks until when, and where each replica
        -- answers (to forward to the holder).
        CREATE TABLE session_leases (
            session text PRIMARY KEY,
            owner text NOT NULL,
            expires_at timestamptz NOT NULL
        );
        CREATE INDEX session_leases_by_owner ON session_leases (owner);
        CREATE TABLE replicas (
            id text PRIMARY KEY,
            address text NOT NULL,
            heartbeat_at timestamptz NOT NULL
        );
        """),
    ]

    /// Any fixed number, the same in every replica: whoever holds it migrates, the others wait
    /// for it and then find nothing left to do.
    static let advisoryLockKey: Int64 = 0x7472_616e_7366_6572  // "transfer"

    /// Applies the migrations not yet applied, each in a transaction of its own, under a
    /// session-level advisory lock so replicas starting together migrate once, one after another.
    static func migrate(_ db: PostgresConnection) throws {
        _ = try db.query("SELECT pg_advisory_lock($1)", [String(advisoryLockKey)])
        defer { _ = try? db.query("SELECT pg_advisory_unlock($1)", [String(advisoryLockKey)]) }
        try db.execute("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version integer PRIMARY KEY,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        let rows = try db.query("SELECT version FROM schema_migrations")
        let applied = Set((0..<rows.count).map { rows.int64($0, 0) })
        for (version, sql) in migrations where !applied.contains(Int64(version)) {
            try db.transaction {
                try db.execute(sql)
                _ = try db.query("INSERT INTO schema_migrations (version) VALUES ($1)", [String(version)])
            }
        }
    }
}
