-- Searching past conversations (`conversation_search`, `/sessions`): a full-text index over what
-- people and Butler said in them, the text of `user` and `assistant` messages (tool output is
-- not searched). A GIN expression index with the text-search configuration memories use
-- ('english'); the search in src/store/sql/postgres.rs repeats the expression and the role
-- condition exactly, so the planner can use it. Only the first 100,000 characters of a message
-- are indexed: a tsvector must stay under 1 MB, and a longer text must never make a transcript
-- append fail.

CREATE INDEX messages_fts ON messages USING GIN (to_tsvector('english', left(content, 100000)))
    WHERE role IN ('user', 'assistant');

-- A group's conversations are found by their key (the unique index covers open sessions only).
CREATE INDEX sessions_key ON sessions (key);
