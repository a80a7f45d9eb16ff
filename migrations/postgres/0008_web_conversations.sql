-- The web chat's conversation list: the user's own title, what is hidden (deleted from the
-- page), and when Butler last wrote to the conversation on its own (a scheduled briefing, an
-- alert). One row per web conversation that has any of these; none means "all defaults".
CREATE TABLE web_conversations (
    conversation TEXT PRIMARY KEY,
    -- The user's rename; NULL: the title comes from the first message.
    title        TEXT,
    -- Deleted from the page: messages with id <= hidden_upto are hidden. NULL: never deleted.
    hidden_upto  BIGINT,
    -- The latest time Butler wrote here without being asked; NULL: never.
    butler_ms    BIGINT
);
CREATE INDEX conversations_owner ON conversations (owner);
-- Live buttons (a Stop, an approval request) are on few rows: checking a click reads only those.
CREATE INDEX web_messages_live ON web_messages (conversation) WHERE buttons <> '[]';
