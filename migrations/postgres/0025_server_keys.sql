-- Secrets Butler makes for itself (the key that signs answer links), one per name, made by the
-- first replica that needs it and read by the others.
CREATE TABLE server_keys (
    name       TEXT PRIMARY KEY,
    secret     TEXT NOT NULL,
    created_ms BIGINT NOT NULL
);
