-- Recall by meaning: one vector per memory and per transcript message (user and assistant text),
-- each with the model that made it, and the queue of what waits to be embedded (it survives
-- restarts). Vectors are L2-normalised and stored as signed bytes (`vec`, one per dimension).

CREATE TABLE memory_vectors (
    memory_id  BIGINT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    scope      TEXT NOT NULL,
    model      TEXT NOT NULL,
    vec        BYTEA NOT NULL,
    created_ms BIGINT NOT NULL
);
-- Recall reads one owner's vectors of one model.
CREATE INDEX memory_vectors_owner ON memory_vectors (user_id, scope, model);

CREATE TABLE message_vectors (
    session_id TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    model      TEXT NOT NULL,
    vec        BYTEA NOT NULL,
    created_ms BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq)
);

-- `ref` is `m:<memory id>` or `t:<seq>:<session id>`; `claim` marks a batch in flight (a change
-- of the text clears it, so a vector of the old text is never stored).
CREATE TABLE embed_queue (
    ref      TEXT PRIMARY KEY,
    attempts INT NOT NULL DEFAULT 0,
    next_ms  BIGINT NOT NULL DEFAULT 0,
    claim    TEXT,
    error    TEXT
);
CREATE INDEX embed_queue_due ON embed_queue (next_ms);

-- The models whose backfill (everything written before embeddings were on) was queued.
CREATE TABLE embed_models (
    model     TEXT PRIMARY KEY,
    queued_ms BIGINT NOT NULL
);
