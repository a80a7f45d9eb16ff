-- Replies meant for one person (an alert or ephemeral answer to their click): JSON
-- {"user_id", "interaction"} or NULL for ordinary messages.
ALTER TABLE outbox ADD COLUMN private_to TEXT;
