//! Child agents ([`DelegationStore`](crate::store::DelegationStore)), written once for both
//! backends: one row per `delegate` call (unique per parent session and call id), moved on only
//! while open, listed for `/status` and `/tasks`, and a background result handed over once.
//!
//! It must never reopen an ended delegation (every update is a compare-and-swap on an open
//! status) and never let two callers both hand over one background result.

use super::error::corrupt;
use crate::store::{DelegationRow, DelegationStatus, Result, StoreError};

/// The columns every query selects, in [`DelegationRaw`]'s order.
macro_rules! delegation_cols {
    () => {
        "id, parent_session_id, parent_call_id, child_session_id, root_session_id, user_id, requester, conversation, \
         group_chat, depth, \
         archetype, tier, model, tools, task, background, status, result, reason, cost_usd, input_tokens, \
         output_tokens, created_ms, finished_ms, delivered_ms, origin, worker"
    };
}
pub(crate) use delegation_cols;

#[derive(sqlx::FromRow)]
pub(crate) struct DelegationRaw {
    id: String,
    parent_session_id: String,
    parent_call_id: String,
    child_session_id: String,
    root_session_id: String,
    user_id: String,
    requester: String,
    conversation: String,
    group_chat: bool,
    depth: i32,
    archetype: Option<String>,
    tier: String,
    model: String,
    tools: String,
    task: String,
    background: bool,
    status: String,
    result: Option<String>,
    reason: Option<String>,
    cost_usd: f64,
    input_tokens: i64,
    output_tokens: i64,
    created_ms: i64,
    finished_ms: Option<i64>,
    delivered_ms: Option<i64>,
    origin: String,
    worker: String,
}

impl TryFrom<DelegationRaw> for DelegationRow {
    type Error = StoreError;
    fn try_from(r: DelegationRaw) -> Result<Self> {
        Ok(DelegationRow {
            tools: super::rows::from_json("delegations.tools", &r.tools)?,
            status: DelegationStatus::parse(&r.status).ok_or_else(|| corrupt("delegations.status", &r.status))?,
            id: r.id,
            parent_session_id: r.parent_session_id,
            parent_call_id: r.parent_call_id,
            child_session_id: r.child_session_id,
            root_session_id: r.root_session_id,
            user_id: r.user_id,
            requester: r.requester,
            conversation: r.conversation,
            group_chat: r.group_chat,
            depth: r.depth,
            archetype: r.archetype,
            tier: r.tier,
            model: r.model,
            task: r.task,
            background: r.background,
            result: r.result,
            reason: r.reason,
            cost_usd: r.cost_usd,
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            created_ms: r.created_ms,
            finished_ms: r.finished_ms,
            delivered_ms: r.delivered_ms,
            origin: r.origin,
            worker: r.worker,
        })
    }
}

/// Implements `DelegationStore` for `$store` over database `$db`.
macro_rules! impl_delegations {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::DelegationStore for $store {
            async fn delegation_start(
                &self,
                row: &$crate::store::DelegationRow,
            ) -> $crate::store::Result<$crate::store::DelegationRow> {
                use $crate::store::sql::error::db_err;
                sqlx::query(
                    "INSERT INTO delegations (id, parent_session_id, parent_call_id, child_session_id, \
                     root_session_id, user_id, requester, conversation, group_chat, depth, archetype, tier, model, tools, \
                     task, background, status, result, reason, cost_usd, input_tokens, output_tokens, created_ms, \
                     finished_ms, delivered_ms, origin, worker) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, \
                     $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27) ON CONFLICT (parent_session_id, parent_call_id) DO NOTHING",
                )
                .bind(row.id.as_str())
                .bind(row.parent_session_id.as_str())
                .bind(row.parent_call_id.as_str())
                .bind(row.child_session_id.as_str())
                .bind(row.root_session_id.as_str())
                .bind(row.user_id.as_str())
                .bind(row.requester.as_str())
                .bind(row.conversation.as_str())
                .bind(row.group_chat)
                .bind(row.depth)
                .bind(row.archetype.as_deref())
                .bind(row.tier.as_str())
                .bind(row.model.as_str())
                .bind($crate::store::sql::rows::to_json("tools", &row.tools)?)
                .bind(row.task.as_str())
                .bind(row.background)
                .bind(row.status.as_str())
                .bind(row.result.as_deref())
                .bind(row.reason.as_deref())
                .bind(row.cost_usd)
                .bind(row.input_tokens)
                .bind(row.output_tokens)
                .bind(row.created_ms)
                .bind(row.finished_ms)
                .bind(row.delivered_ms)
                .bind(row.origin.as_str())
                .bind(row.worker.as_str())
                .execute(self.writer())
                .await
                .map_err(db_err)?;
                self.delegation_find(&row.parent_session_id, Some(&row.parent_call_id))
                    .await?
                    .ok_or_else(|| $crate::store::StoreError::Conflict("delegation vanished after insert".into()))
            }

            async fn delegation_get(&self, id: &str) -> $crate::store::Result<Option<$crate::store::DelegationRow>> {
                let raw: Option<$crate::store::sql::delegations::DelegationRaw> = sqlx::query_as(concat!(
                    "SELECT ",
                    $crate::store::sql::delegations::delegation_cols!(),
                    " FROM delegations WHERE id = $1"
                ))
                .bind(id)
                .fetch_optional(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                raw.map(TryInto::try_into).transpose()
            }

            async fn delegation_find(
                &self,
                session_id: &str,
                call_id: Option<&str>,
            ) -> $crate::store::Result<Option<$crate::store::DelegationRow>> {
                let raw: Option<$crate::store::sql::delegations::DelegationRaw> = match call_id {
                    Some(call_id) => sqlx::query_as(concat!(
                        "SELECT ",
                        $crate::store::sql::delegations::delegation_cols!(),
                        " FROM delegations WHERE parent_session_id = $1 AND parent_call_id = $2"
                    ))
                    .bind(session_id)
                    .bind(call_id)
                    .fetch_optional(self.writer())
                    .await,
                    None => sqlx::query_as(concat!(
                        "SELECT ",
                        $crate::store::sql::delegations::delegation_cols!(),
                        " FROM delegations WHERE child_session_id = $1"
                    ))
                    .bind(session_id)
                    .fetch_optional(self.writer())
                    .await,
                }
                .map_err($crate::store::sql::error::db_err)?;
                raw.map(TryInto::try_into).transpose()
            }

            async fn delegation_update(
                &self,
                id: &str,
                u: &$crate::store::DelegationUpdate,
            ) -> $crate::store::Result<Option<$crate::store::DelegationRow>> {
                let finished = (!u.status.is_open()).then(|| $crate::store::now_ms());
                let raw: Option<$crate::store::sql::delegations::DelegationRaw> = sqlx::query_as(concat!(
                    "UPDATE delegations SET status = $2, result = COALESCE($3, result), reason = COALESCE($4, reason), \
                     cost_usd = cost_usd + $5, input_tokens = input_tokens + $6, output_tokens = output_tokens + $7, \
                     finished_ms = $8 WHERE id = $1 AND status IN ('running', 'waiting') RETURNING ",
                    $crate::store::sql::delegations::delegation_cols!()
                ))
                .bind(id)
                .bind(u.status.as_str())
                .bind(u.result.as_deref())
                .bind(u.reason.as_deref())
                .bind(u.cost_usd)
                .bind(u.input_tokens)
                .bind(u.output_tokens)
                .bind(finished)
                .fetch_optional(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                raw.map(TryInto::try_into).transpose()
            }

            async fn delegations_list(
                &self,
                f: &$crate::store::DelegationFilter,
            ) -> $crate::store::Result<Vec<$crate::store::DelegationRow>> {
                let raws: Vec<$crate::store::sql::delegations::DelegationRaw> = sqlx::query_as(concat!(
                    "SELECT ",
                    $crate::store::sql::delegations::delegation_cols!(),
                    " FROM delegations WHERE ($1 IS NULL OR root_session_id = $1) AND ($2 IS NULL OR user_id = $2) \
                     AND (NOT $3 OR status IN ('running', 'waiting')) AND (NOT $4 OR background) \
                     AND ($6 IS NULL OR origin = $6) ORDER BY created_ms DESC, id DESC LIMIT $5"
                ))
                .bind(f.root_session_id.as_deref())
                .bind(f.user_id.as_deref())
                .bind(f.open_only)
                .bind(f.background_only)
                .bind(f.limit.max(1) as i64)
                .bind(f.origin.as_deref())
                .fetch_all(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                raws.into_iter().map(TryInto::try_into).collect()
            }

            async fn delegation_delivered(&self, id: &str) -> $crate::store::Result<bool> {
                let done = sqlx::query("UPDATE delegations SET delivered_ms = $2 WHERE id = $1 AND delivered_ms IS NULL")
                    .bind(id)
                    .bind($crate::store::now_ms())
                    .execute(self.writer())
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                Ok(done.rows_affected() == 1)
            }
        }
    };
}
pub(crate) use impl_delegations;
