-- The replica running each child agent (its worker id), so the reaper can report a background
-- task whose replica died for good as interrupted; empty on rows made before it was recorded.
ALTER TABLE delegations ADD COLUMN worker TEXT NOT NULL DEFAULT '';
