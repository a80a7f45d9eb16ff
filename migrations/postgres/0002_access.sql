-- Access and triage: memory scopes, one-time codes (pairing, identity links), decisions.

-- '' is the user's own (DM) memory; 'group:<conversation>' is what they keep inside one group,
-- so a group never sees DM memories and a DM never sees group memories.
ALTER TABLE memories ADD COLUMN scope TEXT NOT NULL DEFAULT '';
CREATE INDEX memories_owner_scope ON memories (user_id, scope, created_ms);
-- Superseded: every query by user_id (including moving a user's rows) uses the index above.
DROP INDEX memories_user_time;

-- One-time codes: `pair` (an unknown identity asks to be let in) and `link` (a user links
-- another identity to themselves). Taken (deleted) on first use; dead after expires_ms.
CREATE TABLE codes (
    kind         TEXT NOT NULL,
    code         TEXT NOT NULL,
    identity     TEXT NOT NULL,
    user_id      TEXT,
    display_name TEXT,
    conversation TEXT NOT NULL,
    created_ms   BIGINT NOT NULL,
    expires_ms   BIGINT NOT NULL,
    PRIMARY KEY (kind, code)
);
CREATE INDEX codes_live ON codes (kind, expires_ms);

-- Why each non-routine event was dropped, refused, paired or routed.
CREATE TABLE decisions (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at_ms        BIGINT NOT NULL,
    event_id     TEXT NOT NULL,
    actor        TEXT NOT NULL,
    conversation TEXT NOT NULL,
    decision     TEXT NOT NULL,
    reason       TEXT NOT NULL
);
-- Latest first (ties by id) and counts since a time.
CREATE INDEX decisions_at ON decisions (at_ms, id);
