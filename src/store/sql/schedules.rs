//! Scheduled jobs and their runs ([`ScheduleStore`](crate::store::ScheduleStore)), written once
//! for both backends: jobs are upserted by (scope, name), listed, paused, removed and advanced;
//! a run is claimed by advancing the job's `next_fire_ms` (compare-and-swap) and inserting the
//! run row under UNIQUE(schedule_id, fire_at_ms) in one write transaction.
//!
//! It must never let two claimers win one (job, fire time), never move `next_fire_ms` of a job
//! that no longer fires at the time the caller read, and never write the inbox or the outbox:
//! a run's delivery is only read from them (the inbox row `event_id`, the outbox row
//! `outbox_key`), so that the delivery worker needs no hook into the scheduler.

use super::error::corrupt;
use crate::config::{Missed, ScheduleMode};
use crate::store::{Result, RunKind, RunRow, RunStatus, ScheduleRow, ScheduleSource, StoreError};

/// The columns of `schedules`, in [`ScheduleRaw`]'s order.
macro_rules! schedule_cols {
    () => {
        "id, scope, name, source, owner, owner_user, cron, at_ms, tz, prompt, target, mode, missed, grace_ms, \
         paused, next_fire_ms, created_ms, updated_ms"
    };
}
pub(crate) use schedule_cols;

/// A run with what the inbox and the outbox know about its event, in [`RunRaw`]'s order.
macro_rules! run_select {
    () => {
        "SELECT r.schedule_id, r.fire_at_ms, r.kind, r.event_id, r.outbox_key, r.status, r.error, r.started_ms, \
         r.ended_ms, i.status AS inbox_status, i.error AS inbox_error, i.updated_ms AS inbox_ms, \
         o.status AS outbox_status, o.platform_ids AS outbox_ids, o.last_error AS outbox_error, \
         o.attempts AS outbox_attempts, o.updated_ms AS outbox_ms \
         FROM schedule_runs r LEFT JOIN inbox i ON i.id = r.event_id LEFT JOIN outbox o ON o.key = r.outbox_key "
    };
}
pub(crate) use run_select;

#[derive(sqlx::FromRow)]
pub(crate) struct ScheduleRaw {
    id: i64,
    scope: String,
    name: String,
    source: String,
    owner: String,
    owner_user: Option<String>,
    cron: Option<String>,
    at_ms: Option<i64>,
    tz: String,
    prompt: String,
    target: String,
    mode: String,
    missed: String,
    grace_ms: i64,
    paused: bool,
    next_fire_ms: Option<i64>,
    created_ms: i64,
    updated_ms: i64,
}

impl TryFrom<ScheduleRaw> for ScheduleRow {
    type Error = StoreError;
    fn try_from(r: ScheduleRaw) -> Result<Self> {
        Ok(ScheduleRow {
            source: ScheduleSource::parse(&r.source).ok_or_else(|| corrupt("schedules.source", &r.source))?,
            mode: ScheduleMode::parse(&r.mode).ok_or_else(|| corrupt("schedules.mode", &r.mode))?,
            missed: Missed::parse(&r.missed).ok_or_else(|| corrupt("schedules.missed", &r.missed))?,
            id: r.id,
            scope: r.scope,
            name: r.name,
            owner: r.owner,
            owner_user: r.owner_user,
            cron: r.cron,
            at_ms: r.at_ms,
            tz: r.tz,
            prompt: r.prompt,
            target: r.target,
            grace_ms: r.grace_ms,
            paused: r.paused,
            next_fire_ms: r.next_fire_ms,
            created_ms: r.created_ms,
            updated_ms: r.updated_ms,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct RunRaw {
    schedule_id: i64,
    fire_at_ms: i64,
    kind: String,
    event_id: String,
    outbox_key: String,
    status: String,
    error: Option<String>,
    started_ms: i64,
    ended_ms: Option<i64>,
    inbox_status: Option<String>,
    inbox_error: Option<String>,
    inbox_ms: Option<i64>,
    outbox_status: Option<String>,
    outbox_ids: Option<String>,
    outbox_error: Option<String>,
    outbox_attempts: Option<i32>,
    outbox_ms: Option<i64>,
}

impl TryFrom<RunRaw> for RunRow {
    type Error = StoreError;
    /// The run's status: what the scheduler recorded (`dropped` stays), else the reply's outbox
    /// row (sent, failed, or still being delivered), else the event's inbox row (done without a
    /// reply is a silent heartbeat; pending before triage decided is `queued`).
    fn try_from(r: RunRaw) -> Result<Self> {
        use RunStatus::*;
        let stored = RunStatus::parse(&r.status).ok_or_else(|| corrupt("schedule_runs.status", &r.status))?;
        let kind = RunKind::parse(&r.kind).ok_or_else(|| corrupt("schedule_runs.kind", &r.kind))?;
        let ids: Vec<String> = match r.outbox_ids.as_deref() {
            Some(json) => serde_json::from_str(json).map_err(|e| corrupt("outbox.platform_ids", e))?,
            None => Vec::new(),
        };
        let (status, error, ended_ms) = match (stored, r.outbox_status.as_deref(), r.inbox_status.as_deref()) {
            (Dropped | Failed, _, _) => (stored, r.error, r.ended_ms.or(r.inbox_ms)),
            (_, Some("sent"), _) => (Delivered, None, r.outbox_ms),
            (_, Some("failed"), _) => (Failed, r.outbox_error, r.outbox_ms),
            (_, Some(_), _) => (Delivering, r.outbox_error, None),
            (_, None, Some("done")) => (Silent, None, r.inbox_ms),
            (_, None, Some("dropped")) => (Dropped, r.inbox_error.or(r.error), r.inbox_ms),
            (_, None, Some("failed")) => (Failed, r.inbox_error, r.inbox_ms),
            (Claimed, None, Some(_)) => (Queued, r.inbox_error, None),
            (_, None, Some(_)) => (Running, r.inbox_error, None),
            (_, None, None) => (stored, r.error, r.ended_ms),
        };
        Ok(RunRow {
            delivered_id: if status == Delivered { ids.first().cloned() } else { None },
            delivery_attempts: r.outbox_attempts.unwrap_or(0),
            schedule_id: r.schedule_id,
            fire_at_ms: r.fire_at_ms,
            kind,
            event_id: r.event_id,
            outbox_key: r.outbox_key,
            status,
            error,
            started_ms: r.started_ms,
            ended_ms,
        })
    }
}

/// Implements `ScheduleStore` for `$store` over database `$db`.
macro_rules! impl_schedules {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::ScheduleStore for $store {
            /// `INSERT ... ON CONFLICT (scope, name) DO UPDATE`: a new job is active and fires at
            /// `new.next_fire_ms`; an existing one takes every field of `new` but keeps its id,
            /// `created_ms`, `paused` and, when its timing (`cron`, `at_ms`, `tz`) is unchanged,
            /// its `next_fire_ms` (so a restart never moves a pending or missed fire time).
            async fn schedule_put(
                &self,
                new: &$crate::store::NewSchedule,
            ) -> $crate::store::Result<$crate::store::ScheduleRow> {
                let raw: $crate::store::sql::schedules::ScheduleRaw = sqlx::query_as(concat!(
                    "INSERT INTO schedules (scope, name, source, owner, owner_user, cron, at_ms, tz, prompt, target, \
                     mode, missed, grace_ms, paused, next_fire_ms, created_ms, updated_ms) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, FALSE, $14, $15, $15) \
                     ON CONFLICT (scope, name) DO UPDATE SET next_fire_ms = CASE \
                     WHEN COALESCE(schedules.cron, '') = COALESCE(excluded.cron, '') \
                     AND COALESCE(schedules.at_ms, -1) = COALESCE(excluded.at_ms, -1) AND schedules.tz = excluded.tz \
                     THEN schedules.next_fire_ms ELSE excluded.next_fire_ms END, \
                     source = excluded.source, owner = excluded.owner, owner_user = excluded.owner_user, \
                     cron = excluded.cron, at_ms = excluded.at_ms, tz = excluded.tz, prompt = excluded.prompt, \
                     target = excluded.target, mode = excluded.mode, missed = excluded.missed, \
                     grace_ms = excluded.grace_ms, updated_ms = excluded.updated_ms RETURNING ",
                    $crate::store::sql::schedules::schedule_cols!()
                ))
                .bind(new.scope.as_str())
                .bind(new.name.as_str())
                .bind(new.source.as_str())
                .bind(new.owner.as_str())
                .bind(new.owner_user.as_deref())
                .bind(new.cron.as_deref())
                .bind(new.at_ms)
                .bind(new.tz.as_str())
                .bind(new.prompt.as_str())
                .bind(new.target.as_str())
                .bind(new.mode.as_str())
                .bind(new.missed.as_str())
                .bind(new.grace_ms)
                .bind(new.next_fire_ms)
                .bind($crate::store::now_ms())
                .fetch_one(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                raw.try_into()
            }

            /// One fixed statement per filter; `Due` reads the partial index `schedules_due`.
            async fn schedules_list(
                &self,
                filter: &$crate::store::ScheduleFilter,
            ) -> $crate::store::Result<Vec<$crate::store::ScheduleRow>> {
                use $crate::store::ScheduleFilter as F;
                let q = match filter {
                    F::Id(id) => sqlx::query_as(concat!(
                        "SELECT ",
                        $crate::store::sql::schedules::schedule_cols!(),
                        " FROM schedules WHERE id = $1"
                    ))
                    .bind(*id),
                    F::Owner(user) => sqlx::query_as(concat!(
                        "SELECT ",
                        $crate::store::sql::schedules::schedule_cols!(),
                        " FROM schedules WHERE owner_user = $1 ORDER BY id"
                    ))
                    .bind(user.as_str()),
                    F::Scope(scope) => sqlx::query_as(concat!(
                        "SELECT ",
                        $crate::store::sql::schedules::schedule_cols!(),
                        " FROM schedules WHERE scope = $1 ORDER BY id"
                    ))
                    .bind(scope.as_str()),
                    F::All => sqlx::query_as(concat!(
                        "SELECT ",
                        $crate::store::sql::schedules::schedule_cols!(),
                        " FROM schedules ORDER BY id"
                    )),
                    F::Due { now_ms, limit } => sqlx::query_as(concat!(
                        "SELECT ",
                        $crate::store::sql::schedules::schedule_cols!(),
                        " FROM schedules WHERE paused = FALSE AND next_fire_ms IS NOT NULL AND next_fire_ms <= $1 \
                         ORDER BY next_fire_ms, id LIMIT $2"
                    ))
                    .bind(*now_ms)
                    .bind($crate::store::sql::rows::sql_limit(*limit)),
                };
                let raw: Vec<$crate::store::sql::schedules::ScheduleRaw> =
                    q.fetch_all(self.reader()).await.map_err($crate::store::sql::error::db_err)?;
                $crate::store::sql::rows::convert_all(raw)
            }

            /// Pause and resume set `paused`; remove deletes the job with its runs (one
            /// transaction); advance is a compare-and-swap on `next_fire_ms` of an active job.
            async fn schedule_set(
                &self,
                id: i64,
                change: &$crate::store::ScheduleChange,
            ) -> $crate::store::Result<bool> {
                use $crate::store::sql::error::db_err;
                use $crate::store::ScheduleChange as C;
                let now = $crate::store::now_ms();
                let q = match change {
                    C::Pause | C::Resume => {
                        sqlx::query("UPDATE schedules SET paused = $2, updated_ms = $3 WHERE id = $1")
                            .bind(id)
                            .bind(*change == C::Pause)
                            .bind(now)
                    }
                    C::Advance { from, to } => sqlx::query(
                        "UPDATE schedules SET next_fire_ms = $2, updated_ms = $3 \
                         WHERE id = $1 AND next_fire_ms = $4 AND paused = FALSE",
                    )
                    .bind(id)
                    .bind(*to)
                    .bind(now)
                    .bind(*from),
                    C::Remove => {
                        let mut tx = self.begin_write().await?;
                        sqlx::query("DELETE FROM schedule_runs WHERE schedule_id = $1")
                            .bind(id)
                            .execute(&mut *tx)
                            .await
                            .map_err(db_err)?;
                        let done = sqlx::query("DELETE FROM schedules WHERE id = $1")
                            .bind(id)
                            .execute(&mut *tx)
                            .await
                            .map_err(db_err)?;
                        tx.commit().await.map_err(db_err)?;
                        return Ok(done.rows_affected() == 1);
                    }
                };
                Ok(q.execute(self.writer()).await.map_err(db_err)?.rows_affected() == 1)
            }

            /// In one write transaction: the advance (if any) must change exactly one active row,
            /// else nothing is written and `None` returned; then the run row is inserted with
            /// `ON CONFLICT DO NOTHING`: a conflict keeps the advance and returns `None`.
            async fn schedule_claim(
                &self,
                claim: &$crate::store::RunClaim,
            ) -> $crate::store::Result<Option<$crate::store::RunRow>> {
                use $crate::store::sql::error::db_err;
                let mut tx = self.begin_write().await?;
                if let Some((from, to)) = claim.advance {
                    let moved = sqlx::query(
                        "UPDATE schedules SET next_fire_ms = $2, updated_ms = $3 \
                         WHERE id = $1 AND next_fire_ms = $4 AND paused = FALSE",
                    )
                    .bind(claim.schedule_id)
                    .bind(to)
                    .bind(claim.started_ms)
                    .bind(from)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    if moved.rows_affected() != 1 {
                        tx.rollback().await.map_err(db_err)?;
                        return Ok(None);
                    }
                }
                let inserted = sqlx::query(
                    "INSERT INTO schedule_runs (schedule_id, fire_at_ms, kind, event_id, outbox_key, status, error, \
                     started_ms, ended_ms) VALUES ($1, $2, $3, $4, $5, 'claimed', NULL, $6, NULL) \
                     ON CONFLICT (schedule_id, fire_at_ms) DO NOTHING",
                )
                .bind(claim.schedule_id)
                .bind(claim.fire_at_ms)
                .bind(claim.kind.as_str())
                .bind(claim.event_id.as_str())
                .bind(claim.outbox_key.as_str())
                .bind(claim.started_ms)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                tx.commit().await.map_err(db_err)?;
                if inserted.rows_affected() != 1 {
                    return Ok(None);
                }
                Ok(Some($crate::store::RunRow {
                    schedule_id: claim.schedule_id,
                    fire_at_ms: claim.fire_at_ms,
                    kind: claim.kind,
                    event_id: claim.event_id.clone(),
                    outbox_key: claim.outbox_key.clone(),
                    status: $crate::store::RunStatus::Claimed,
                    error: None,
                    started_ms: claim.started_ms,
                    ended_ms: None,
                    delivered_id: None,
                    delivery_attempts: 0,
                }))
            }

            /// Runs joined with their inbox and outbox rows (see `RunRaw`): a job's newest first,
            /// or the `claimed` ones with no inbox row, oldest first.
            async fn schedule_runs(
                &self,
                query: &$crate::store::RunQuery,
            ) -> $crate::store::Result<Vec<$crate::store::RunRow>> {
                use $crate::store::RunQuery as Q;
                let limit = |n: usize| $crate::store::sql::rows::sql_limit(n);
                let q = match query {
                    Q::Of { schedule_id, limit: n } => sqlx::query_as(concat!(
                        $crate::store::sql::schedules::run_select!(),
                        "WHERE r.schedule_id = $1 ORDER BY r.fire_at_ms DESC LIMIT $2"
                    ))
                    .bind(*schedule_id)
                    .bind(limit(*n)),
                    Q::Unqueued { claimed_before_ms, limit: n } => sqlx::query_as(concat!(
                        $crate::store::sql::schedules::run_select!(),
                        "WHERE r.status = 'claimed' AND r.started_ms <= $1 AND i.id IS NULL \
                         ORDER BY r.started_ms LIMIT $2"
                    ))
                    .bind(*claimed_before_ms)
                    .bind(limit(*n)),
                };
                let raw: Vec<$crate::store::sql::schedules::RunRaw> =
                    q.fetch_all(self.reader()).await.map_err($crate::store::sql::error::db_err)?;
                $crate::store::sql::rows::convert_all(raw)
            }

            /// Sets the stored status and error; `dropped` and `failed` also end the run now.
            async fn schedule_run_note(
                &self,
                schedule_id: i64,
                fire_at_ms: i64,
                status: $crate::store::RunStatus,
                error: Option<&str>,
            ) -> $crate::store::Result<bool> {
                use $crate::store::RunStatus;
                let ended = matches!(status, RunStatus::Dropped | RunStatus::Failed).then($crate::store::now_ms);
                let done = sqlx::query(
                    "UPDATE schedule_runs SET status = $3, error = $4, ended_ms = $5 \
                     WHERE schedule_id = $1 AND fire_at_ms = $2",
                )
                .bind(schedule_id)
                .bind(fire_at_ms)
                .bind(status.as_str())
                .bind(error)
                .bind(ended)
                .execute(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(done.rows_affected() == 1)
            }
        }
    };
}
pub(crate) use impl_schedules;
