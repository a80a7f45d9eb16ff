-- A heading for platforms that show one apart from the text (a mail's subject): a scheduled
-- job's name on its briefing. NULL for everything else.
ALTER TABLE outbox ADD COLUMN title TEXT;
