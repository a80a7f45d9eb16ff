-- Pinned memories: always known, they go into the system prompt of each new private session
-- (`/memory pin ID`). A pin outlives nothing: a forgotten memory is no longer listed.
CREATE TABLE memory_pins (
    memory_id  BIGINT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    created_ms BIGINT NOT NULL
);
CREATE INDEX memory_pins_user ON memory_pins (user_id, created_ms);
