-- Several replicas (Redis configured): each session key's fencing token, taken by the replica
-- that takes the session's lease and checked by every commit of that session; and the replica
-- an inbox event was handed to (the owner of its session).
CREATE TABLE session_fences (
    key   TEXT PRIMARY KEY,
    token BIGINT NOT NULL
);
ALTER TABLE inbox ADD COLUMN routed_to TEXT;
ALTER TABLE inbox ADD COLUMN routed_ms BIGINT NOT NULL DEFAULT 0;
-- A replica claims an event only when no earlier event of its conversation is held by another
-- replica (order within a conversation across replicas).
CREATE INDEX inbox_open_by_conversation ON inbox (conversation, seq) WHERE status IN ('pending', 'processing');
