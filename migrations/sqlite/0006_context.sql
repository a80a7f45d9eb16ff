-- Context management: summary checkpoints of long sessions (the transcript itself is never
-- deleted), the context size of each turn, and which kind of model call a usage row is for.

CREATE TABLE summaries (
    session_id TEXT NOT NULL,
    -- The summary covers the session's messages up to and including this seq.
    up_to_seq  BIGINT NOT NULL,
    text       TEXT NOT NULL,
    created_ms BIGINT NOT NULL,
    PRIMARY KEY (session_id, up_to_seq)
);

-- 'turn' (an agent turn), 'archivist' (distilling memories), 'compaction' (a summary).
ALTER TABLE usage ADD COLUMN kind TEXT NOT NULL DEFAULT 'turn';
-- Estimated tokens of the prompt the turn sent last.
ALTER TABLE usage ADD COLUMN context_tokens BIGINT NOT NULL DEFAULT 0;
CREATE INDEX usage_session_time ON usage (session_id, created_ms);
