-- Butler core schema, SQLite flavour. Same shape as migrations/postgres/0001_core.sql.
-- Times are BIGINT Unix milliseconds; JSON is stored as TEXT. Rows of messages are never deleted.
-- Never edit an applied migration: add a new numbered file instead.

CREATE TABLE users (
    id           TEXT PRIMARY KEY,
    display_name TEXT,
    role         TEXT NOT NULL,
    timezone     TEXT NOT NULL,
    created_ms   BIGINT NOT NULL
);

CREATE TABLE identities (
    channel          TEXT NOT NULL,
    platform_user_id TEXT NOT NULL,
    user_id          TEXT NOT NULL REFERENCES users (id),
    created_ms       BIGINT NOT NULL,
    PRIMARY KEY (channel, platform_user_id)
);
CREATE INDEX identities_user ON identities (user_id);

CREATE TABLE conversations (
    id         TEXT PRIMARY KEY,
    kind       TEXT NOT NULL CHECK (kind IN ('direct', 'group')),
    owner      TEXT NOT NULL,
    created_ms BIGINT NOT NULL
);

CREATE TABLE sessions (
    id            TEXT PRIMARY KEY,
    key           TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    conversation  TEXT NOT NULL,
    system_prompt TEXT NOT NULL,
    version       BIGINT NOT NULL DEFAULT 0,
    -- The seq of the session's last message (appends take the next ones).
    last_seq      BIGINT NOT NULL DEFAULT 0,
    created_ms    BIGINT NOT NULL,
    updated_ms    BIGINT NOT NULL,
    closed_ms     BIGINT
);
-- At most one open session per key.
CREATE UNIQUE INDEX sessions_open_key ON sessions (key) WHERE closed_ms IS NULL;
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE messages (
    session_id   TEXT NOT NULL REFERENCES sessions (id),
    seq          BIGINT NOT NULL,
    role         TEXT NOT NULL,
    content      TEXT NOT NULL,
    name         TEXT,
    tool_calls   TEXT,
    tool_call_id TEXT,
    is_error     BOOLEAN NOT NULL DEFAULT FALSE,
    event_id     TEXT,
    created_ms   BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
-- Finding the user message of an event (covering; SQLite prefers it even without statistics).
CREATE INDEX messages_event ON messages (session_id, event_id, role, seq) WHERE event_id IS NOT NULL;

CREATE TABLE inbox (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    channel         TEXT NOT NULL,
    conversation    TEXT NOT NULL,
    event           TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending',
    attempts        INTEGER NOT NULL DEFAULT 0,
    claimed_by      TEXT,
    next_attempt_ms BIGINT NOT NULL DEFAULT 0,
    error           TEXT,
    created_ms      BIGINT NOT NULL,
    updated_ms      BIGINT NOT NULL
);
-- Claiming reads only pending rows of some channels in seq order; recovery only processing ones.
CREATE INDEX inbox_claim ON inbox (channel, seq) WHERE status = 'pending';
CREATE INDEX inbox_processing ON inbox (channel) WHERE status = 'processing';

CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    key             TEXT NOT NULL UNIQUE,
    channel         TEXT NOT NULL,
    conversation    TEXT NOT NULL,
    text            TEXT NOT NULL,
    buttons         TEXT NOT NULL DEFAULT '[]',
    reply_to        TEXT,
    status          TEXT NOT NULL,
    platform_ids    TEXT NOT NULL DEFAULT '[]',
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_ms BIGINT NOT NULL DEFAULT 0,
    last_error      TEXT,
    created_ms      BIGINT NOT NULL,
    updated_ms      BIGINT NOT NULL
);
CREATE INDEX outbox_due ON outbox (channel, next_attempt_ms) WHERE status = 'pending';

CREATE TABLE usage (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id       TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    event_id      TEXT NOT NULL,
    model         TEXT NOT NULL,
    input_tokens  BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_usd      DOUBLE PRECISION NOT NULL,
    iterations    INTEGER NOT NULL,
    created_ms    BIGINT NOT NULL
);
CREATE INDEX usage_user_time ON usage (user_id, created_ms);

CREATE TABLE memories (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    TEXT NOT NULL,
    text       TEXT NOT NULL,
    source     TEXT,
    created_ms BIGINT NOT NULL,
    updated_ms BIGINT NOT NULL
);
CREATE INDEX memories_user_time ON memories (user_id, created_ms);

-- Full-text index over memories.text (external content table, kept in sync by the triggers).
CREATE VIRTUAL TABLE memories_fts USING fts5(
    text,
    content = 'memories',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF text ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO memories_fts (rowid, text) VALUES (new.id, new.text);
END;

CREATE TABLE web_messages (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation TEXT NOT NULL,
    key          TEXT NOT NULL UNIQUE,
    role         TEXT NOT NULL,
    author       TEXT NOT NULL,
    text         TEXT NOT NULL,
    buttons      TEXT NOT NULL DEFAULT '[]',
    created_ms   BIGINT NOT NULL,
    updated_ms   BIGINT NOT NULL
);
CREATE INDEX web_messages_conversation ON web_messages (conversation, id);
