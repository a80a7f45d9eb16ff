-- Searching past conversations (`conversation_search`, `/sessions`): a full-text index over what
-- people and Butler said in them, the text of `user` and `assistant` messages (tool output is
-- not searched). A standalone FTS5 table that names its message by (session_id, seq), the
-- primary key of `messages`: the implicit rowid of `messages` is not stable (VACUUM may
-- renumber it), so nothing refers to it. Same tokenizer as memories_fts.
--
-- Messages are never deleted or updated by Butler (the transcript is append-only); the update
-- trigger is there so the index still follows if a row is ever repaired by hand. It finds the
-- old entry by scanning, which is fine for a path that does not run.

CREATE VIRTUAL TABLE messages_fts USING fts5(
    content,
    session_id UNINDEXED,
    seq UNINDEXED,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

INSERT INTO messages_fts (content, session_id, seq)
    SELECT content, session_id, seq FROM messages WHERE role IN ('user', 'assistant') AND content <> '';

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages
    WHEN new.role IN ('user', 'assistant') AND new.content <> '' BEGIN
    INSERT INTO messages_fts (content, session_id, seq) VALUES (new.content, new.session_id, new.seq);
END;

CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, role, session_id, seq ON messages BEGIN
    DELETE FROM messages_fts WHERE session_id = old.session_id AND seq = old.seq;
    INSERT INTO messages_fts (content, session_id, seq)
        SELECT new.content, new.session_id, new.seq WHERE new.role IN ('user', 'assistant') AND new.content <> '';
END;

-- A group's conversations are found by their key (the unique index covers open sessions only).
CREATE INDEX sessions_key ON sessions (key);
