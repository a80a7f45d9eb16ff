-- The chain of a delegation: the event id of the message whose tree started it (its turn,
-- helpers, background tasks and the turns their reports start share it), so `/tasks` shows a
-- chain as one entry and `/cancel` ends all of it. Empty for rows made before.
ALTER TABLE delegations ADD COLUMN origin TEXT NOT NULL DEFAULT '';
CREATE INDEX delegations_origin ON delegations (origin);
