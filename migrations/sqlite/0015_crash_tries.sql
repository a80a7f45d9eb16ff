-- What a crash charges (issue 28): `started_ms` is set when a claimed event's turn begins (NULL
-- while it only waits, claimed, in a session's queue), so recovery charges a try only to an
-- event that was running when its process died; `crashes` counts the deaths in a row during
-- which the event was running (a poison event: set aside once it reaches max_event_attempts).
ALTER TABLE inbox ADD COLUMN started_ms BIGINT;
ALTER TABLE inbox ADD COLUMN crashes INTEGER NOT NULL DEFAULT 0;
-- Streamed drafts are few and short-lived: finding the ones a dead process left reads only them.
CREATE INDEX outbox_drafts ON outbox (id) WHERE status = 'draft';
