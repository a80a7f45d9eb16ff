-- Approvals of risky tool calls and the audit trail of every permission decision.

CREATE TABLE approvals (
    id             TEXT PRIMARY KEY,
    session_id     TEXT NOT NULL,
    session_key    TEXT NOT NULL,
    conversation   TEXT NOT NULL,
    event_id       TEXT NOT NULL,
    tool_call_id   TEXT NOT NULL,
    tool           TEXT NOT NULL,
    args_hash      TEXT NOT NULL,
    summary        TEXT NOT NULL,
    requester      TEXT NOT NULL,
    requester_user TEXT NOT NULL,
    approvers      TEXT NOT NULL,
    status         TEXT NOT NULL,
    scope          TEXT,
    decided_by     TEXT,
    decided_ms     BIGINT,
    created_ms     BIGINT NOT NULL,
    expires_ms     BIGINT NOT NULL
);
CREATE INDEX approvals_due ON approvals (status, expires_ms);
CREATE INDEX approvals_session ON approvals (session_id, status);

CREATE TABLE audit (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms      BIGINT NOT NULL,
    actor      TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    session_id TEXT NOT NULL,
    tool       TEXT NOT NULL,
    args_hash  TEXT NOT NULL,
    outcome    TEXT NOT NULL,
    reason     TEXT NOT NULL
);
CREATE INDEX audit_at ON audit (at_ms, id);
