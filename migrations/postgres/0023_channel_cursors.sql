-- Where a channel has read up to on its platform (a Matrix sync token), shared by the replicas:
-- saved only after everything before it is in the inbox, so a restart or a takeover neither
-- replays nor misses events.
CREATE TABLE channel_cursors (
    name       TEXT PRIMARY KEY,
    token      TEXT NOT NULL,
    updated_ms BIGINT NOT NULL
);
