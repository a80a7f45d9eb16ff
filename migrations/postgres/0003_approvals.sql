-- Approvals of risky tool calls and the audit trail of every permission decision.

-- Created with the turn that parks on them (finish_event); decided once (pending -> approved,
-- denied, expired or cancelled). approvers is a JSON array; scope is 'once' or 'session' when
-- approved. Their message is the outbox row 'approval:<id>'.
CREATE TABLE approvals (
    id             TEXT PRIMARY KEY,
    session_id     TEXT NOT NULL REFERENCES sessions (id),
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
-- Expiring: pending rows by expiry (decided rows, the vast majority, stay out of it).
CREATE INDEX approvals_due ON approvals (expires_ms, created_ms, id) WHERE status = 'pending';
-- Pending rows of a session oldest first, and "granted for this session" lookups.
CREATE INDEX approvals_session ON approvals (session_id, status, created_ms, id);

-- Every permission decision on a tool call. Append-only.
CREATE TABLE audit (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at_ms      BIGINT NOT NULL,
    actor      TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    session_id TEXT NOT NULL,
    tool       TEXT NOT NULL,
    args_hash  TEXT NOT NULL,
    outcome    TEXT NOT NULL,
    reason     TEXT NOT NULL
);
-- Latest first (ties by id).
CREATE INDEX audit_at ON audit (at_ms, id);
