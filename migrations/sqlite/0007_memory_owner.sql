-- Recall searches one person's memories in one scope, but an FTS5 MATCH alone scans the
-- matches of every user (a common word over a million memories is hundreds of thousands of
-- rows). The index therefore also holds an owner token per memory, and a search asks for that
-- token AND the words, so FTS5 skips straight to the owner's few rows.
--
-- The token is `o<hex(user_id)>g<hex(scope)>g` plus 64 `p`s: one token for the unicode61
-- tokenizer (letters and digits only), distinct for every (user, scope) because `g` is not a
-- hex digit, and longer than 64 characters so the porter stemmer leaves it as it is. It is a
-- virtual generated column, so it follows `user_id` when `/link` moves memories to a user.
-- The search in src/store/sql/sqlite.rs builds the same token; keep the two in step.

DROP TRIGGER memories_fts_insert;
DROP TRIGGER memories_fts_delete;
DROP TRIGGER memories_fts_update;
DROP TABLE memories_fts;

ALTER TABLE memories ADD COLUMN owner TEXT GENERATED ALWAYS AS (
    'o' || hex(user_id) || 'g' || hex(scope) || 'gpppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp'
) VIRTUAL;

CREATE VIRTUAL TABLE memories_fts USING fts5(
    text,
    owner,
    content = 'memories',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, text, owner) VALUES (new.id, new.text, new.owner);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, owner) VALUES ('delete', old.id, old.text, old.owner);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF text, user_id, scope ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, owner) VALUES ('delete', old.id, old.text, old.owner);
    INSERT INTO memories_fts (rowid, text, owner) VALUES (new.id, new.text, new.owner);
END;
