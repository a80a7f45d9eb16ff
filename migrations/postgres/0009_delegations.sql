-- Child agents (`delegate`): one row per delegate call, linked to the parent's call, with the
-- child's own session (its transcript is in messages like any other session's).
-- status: running | waiting (for an approval inside it) | done | stopped (a limit, with a
-- partial answer) | failed | interrupted (a crash; reported once) | cancelled (/stop, /cancel).
-- delivered_ms: a background task's result entered the parent's inbox (once).
CREATE TABLE delegations (
    id                TEXT PRIMARY KEY,
    parent_session_id TEXT NOT NULL,
    parent_call_id    TEXT NOT NULL,
    child_session_id  TEXT NOT NULL,
    root_session_id   TEXT NOT NULL,
    user_id           TEXT NOT NULL,
    requester         TEXT NOT NULL,
    conversation      TEXT NOT NULL,
    group_chat        BOOLEAN NOT NULL,
    depth             INTEGER NOT NULL,
    archetype         TEXT,
    tier              TEXT NOT NULL,
    model             TEXT NOT NULL,
    tools             TEXT NOT NULL,
    task              TEXT NOT NULL,
    background        BOOLEAN NOT NULL,
    status            TEXT NOT NULL,
    result            TEXT,
    reason            TEXT,
    cost_usd          DOUBLE PRECISION NOT NULL DEFAULT 0,
    input_tokens      BIGINT NOT NULL DEFAULT 0,
    output_tokens     BIGINT NOT NULL DEFAULT 0,
    created_ms        BIGINT NOT NULL,
    finished_ms       BIGINT,
    delivered_ms      BIGINT,
    UNIQUE (parent_session_id, parent_call_id)
);
CREATE INDEX delegations_child ON delegations (child_session_id);
CREATE INDEX delegations_root ON delegations (root_session_id, created_ms);
CREATE INDEX delegations_user ON delegations (user_id, created_ms);
