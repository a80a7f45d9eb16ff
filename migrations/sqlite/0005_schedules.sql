-- Scheduled jobs and their runs. Same shape as migrations/postgres/0005_schedules.sql.
-- A job fires at `next_fire_ms` (NULL: nothing left to fire, e.g. a one-shot that ran); the tick
-- claims a fire time by advancing `next_fire_ms` (compare-and-swap) and inserting the run row in
-- one transaction, so each (schedule, fire time) runs once however many processes tick.

CREATE TABLE schedules (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    -- Names are unique within a scope: 'config' for [[schedules]], 'user:<user id>' otherwise.
    scope        TEXT NOT NULL,
    name         TEXT NOT NULL,
    source       TEXT NOT NULL CHECK (source IN ('config', 'tool', 'cli')),
    -- The owner's identity (channel:user_id) and, when known, their user id.
    owner        TEXT NOT NULL,
    owner_user   TEXT,
    -- Exactly one of: a 5-field crontab read in `tz`, or a one-shot time.
    cron         TEXT,
    at_ms        BIGINT,
    tz           TEXT NOT NULL,
    prompt       TEXT NOT NULL,
    -- The conversation the result is delivered to (channel:id[/thread]).
    target       TEXT NOT NULL,
    mode         TEXT NOT NULL CHECK (mode IN ('always', 'heartbeat')),
    missed       TEXT NOT NULL CHECK (missed IN ('skip', 'run_once')),
    grace_ms     BIGINT NOT NULL,
    paused       BOOLEAN NOT NULL DEFAULT FALSE,
    next_fire_ms BIGINT,
    created_ms   BIGINT NOT NULL,
    updated_ms   BIGINT NOT NULL,
    CHECK ((cron IS NULL) <> (at_ms IS NULL))
);
CREATE UNIQUE INDEX schedules_name ON schedules (scope, name);
-- The tick reads only active jobs that still fire, earliest first.
CREATE INDEX schedules_due ON schedules (next_fire_ms, id) WHERE paused = FALSE AND next_fire_ms IS NOT NULL;
CREATE INDEX schedules_owner ON schedules (owner_user, id);

-- One row per (schedule, fire time): the primary key is the UNIQUE(schedule_id, fire_at_ms) that
-- lets exactly one claimer win. `status` is what the scheduler knows ('claimed', 'running',
-- 'dropped'); delivery is read from the inbox row `event_id` and the outbox row `outbox_key`.
CREATE TABLE schedule_runs (
    schedule_id BIGINT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    fire_at_ms  BIGINT NOT NULL,
    -- 'scheduled', 'catch_up' (after downtime) or 'manual' (run-now).
    kind        TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    outbox_key  TEXT NOT NULL,
    status      TEXT NOT NULL,
    error       TEXT,
    started_ms  BIGINT NOT NULL,
    ended_ms    BIGINT,
    PRIMARY KEY (schedule_id, fire_at_ms)
);
-- Runs claimed but never handed to the inbox (a crash in between) are looked for by age.
CREATE INDEX schedule_runs_claimed ON schedule_runs (started_ms) WHERE status = 'claimed';
