//! Approvals of risky tool calls and questions to a person
//! ([`ApprovalStore`](crate::store::ApprovalStore)), written once for both backends: rows are
//! created by `finish_event` (with the turn that parks on them, and the call's masked detail), decided once (a question with
//! its answer), listed when due or pending, asked whether a tool is granted for a session, and
//! the pending question a person's next message answers is found.
//!
//! It must never let two decisions win (deciding is one compare-and-swap `UPDATE ... WHERE
//! status = 'pending'`), never decide back to `pending`, and never change an approval's message
//! unless its decision won, in the same transaction. Revising that message is the one write that
//! puts a `sent` outbox row back to `pending` (the deliverer then edits the message shown, by the
//! platform ids the row keeps).

/// Implements `ApprovalStore` for `$store` over database `$db`, and the inherent
/// `approval_insert_on` helper used by `finish_event`.
macro_rules! impl_approvals {
    ($store:ty, $db:ty) => {
        impl $store {
            /// Inserts `row` as given (approvers as a JSON array) on `conn`, inside the caller's
            /// transaction; an existing id is left unchanged. A `session_id` without a session
            /// is a `Conflict`.
            async fn approval_insert_on(
                conn: &mut <$db as sqlx::Database>::Connection,
                row: &$crate::store::ApprovalRow,
            ) -> $crate::store::Result<()> {
                sqlx::query($crate::store::sql::hot::SQL_APPROVAL_INSERT)
                .bind(row.id.as_str())
                .bind(row.session_id.as_str())
                .bind(row.session_key.as_str())
                .bind(row.conversation.as_str())
                .bind(row.event_id.as_str())
                .bind(row.tool_call_id.as_str())
                .bind(row.tool.as_str())
                .bind(row.args_hash.as_str())
                .bind(row.summary.as_str())
                .bind(row.requester.as_str())
                .bind(row.requester_user.as_str())
                .bind($crate::store::sql::rows::to_json("approvers", &row.approvers)?)
                .bind(row.status.as_str())
                .bind(row.scope.as_deref())
                .bind(row.decided_by.as_deref())
                .bind(row.decided_ms)
                .bind(row.created_ms)
                .bind(row.expires_ms)
                .bind(row.kind.as_str())
                .bind(match row.kind {
                    $crate::store::ApprovalKind::Tool => None,
                    $crate::store::ApprovalKind::Question => {
                        Some($crate::store::sql::rows::to_json("options", &row.options)?)
                    }
                })
                .bind(row.answer.as_deref())
                .bind(row.detail.as_ref().map(|d| d.kind.as_str()))
                .bind(row.detail.as_ref().map(|d| d.text.as_str()))
                .execute(&mut *conn)
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(())
            }
        }

        #[async_trait::async_trait]
        impl $crate::store::ApprovalStore for $store {
            async fn approval_get(&self, id: &str) -> $crate::store::Result<Option<$crate::store::ApprovalRow>> {
                let raw: Option<$crate::store::sql::rows::ApprovalRaw> = sqlx::query_as(concat!(
                    "SELECT ",
                    $crate::store::sql::rows::cols!(approval),
                    " FROM approvals WHERE id = $1"
                ))
                .bind(id)
                .fetch_optional(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                raw.map(TryInto::try_into).transpose()
            }

            /// In one write transaction: `pending` -> `decision.status` with its scope, decider
            /// and `decided_ms = now`, only if the row is still `pending` (so of concurrent
            /// deciders exactly one wins); then the outbox row `approval:<id>`, if any, gets
            /// `decision.message` as its text, no buttons, and is `pending` again, due now, with
            /// its attempts and error reset and its platform ids kept. Returns the decided row, or
            /// `None` (nothing changed) for an unknown or already decided approval. A decision to
            /// `pending` is refused with `Conflict` (it would let a second decision win).
            async fn approval_decide(
                &self,
                id: &str,
                decision: &$crate::store::ApprovalDecision,
            ) -> $crate::store::Result<Option<$crate::store::ApprovalRow>> {
                use $crate::store::sql::error::db_err;
                if decision.status == $crate::store::ApprovalStatus::Pending {
                    return Err($crate::store::StoreError::Conflict(format!(
                        "approval `{id}`: `pending` is not a decision"
                    )));
                }
                let now = $crate::store::now_ms();
                let mut tx = self.begin_write().await?;
                let raw: Option<$crate::store::sql::rows::ApprovalRaw> = sqlx::query_as(concat!(
                    "UPDATE approvals SET status = $2, scope = $3, decided_by = $4, decided_ms = $5, answer = $6 \
                     WHERE id = $1 AND status = 'pending' RETURNING ",
                    $crate::store::sql::rows::cols!(approval)
                ))
                .bind(id)
                .bind(decision.status.as_str())
                .bind(decision.scope.as_deref())
                .bind(decision.decided_by.as_str())
                .bind(now)
                .bind(decision.answer.as_deref())
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
                let Some(raw) = raw else {
                    tx.rollback().await.map_err(db_err)?;
                    return Ok(None);
                };
                let row = $crate::store::ApprovalRow::try_from(raw)?;
                sqlx::query(
                    "UPDATE outbox SET text = $2, buttons = '[]', status = 'pending', attempts = 0, \
                     next_attempt_ms = 0, last_error = NULL, updated_ms = $3 WHERE key = $1",
                )
                .bind(format!("approval:{id}"))
                .bind(decision.message.as_str())
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                tx.commit().await.map_err(db_err)?;
                Ok(Some(row))
            }

            /// At most `limit` `pending` approvals with `expires_ms <= now_ms`, earliest expiry
            /// first, then oldest (`created_ms`), then by id.
            async fn approvals_due(
                &self,
                now_ms: i64,
                limit: usize,
            ) -> $crate::store::Result<Vec<$crate::store::ApprovalRow>> {
                let raw: Vec<$crate::store::sql::rows::ApprovalRaw> = sqlx::query_as(concat!(
                    "SELECT ",
                    $crate::store::sql::rows::cols!(approval),
                    " FROM approvals WHERE status = 'pending' AND expires_ms <= $1 \
                     ORDER BY expires_ms, created_ms, id LIMIT $2"
                ))
                .bind(now_ms)
                .bind($crate::store::sql::rows::sql_limit(limit))
                .fetch_all(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                $crate::store::sql::rows::convert_all(raw)
            }

            /// The session's `pending` approvals, oldest (`created_ms`) first, then by id.
            async fn approvals_pending(
                &self,
                session_id: &str,
            ) -> $crate::store::Result<Vec<$crate::store::ApprovalRow>> {
                let raw: Vec<$crate::store::sql::rows::ApprovalRaw> = sqlx::query_as(concat!(
                    "SELECT ",
                    $crate::store::sql::rows::cols!(approval),
                    " FROM approvals WHERE session_id = $1 AND status = 'pending' ORDER BY created_ms, id"
                ))
                .bind(session_id)
                .fetch_all(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                $crate::store::sql::rows::convert_all(raw)
            }

            /// Whether an `approved` approval with scope `session` exists for `tool` in this
            /// session (exact names; `once` approvals and other outcomes never grant).
            async fn approval_granted(&self, session_id: &str, tool: &str) -> $crate::store::Result<bool> {
                let found: Option<i32> = sqlx::query_scalar(
                    "SELECT 1 FROM approvals WHERE session_id = $1 AND status = 'approved' AND tool = $2 \
                     AND scope = 'session' LIMIT 1",
                )
                .bind(session_id)
                .bind(tool)
                .fetch_optional(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(found.is_some())
            }

            /// Served by the partial index of pending rows by expiry (`approvals_due`): pending
            /// rows are few (each expires), so the range `expires_ms > now` walks only them; the
            /// outbox row of a candidate is found by its unique key.
            async fn approval_waiting(
                &self,
                conversation: &str,
                waiting: $crate::store::Waiting<'_>,
                now_ms: i64,
            ) -> $crate::store::Result<Option<$crate::store::ApprovalRow>> {
                let (query, value) = match waiting {
                    // Every message asks this: on SQLite it is read on this thread when it can.
                    $crate::store::Waiting::QuestionFor(who) => {
                        let here = self.lite().and_then(|lite| {
                            lite.read_here(|c| {
                                $crate::store::sql::lite::query_one(
                                    c,
                                    $crate::store::sql::hot::SQL_QUESTION_WAITING,
                                    &[&conversation, &who, &now_ms],
                                    $crate::store::sql::rows::ApprovalRaw::from_lite,
                                )
                            })
                        });
                        if let Some(found) = here {
                            return found?.map(TryInto::try_into).transpose();
                        }
                        (sqlx::query_as($crate::store::sql::hot::SQL_QUESTION_WAITING), who.to_string())
                    }
                    $crate::store::Waiting::Message(id) => (
                        sqlx::query_as(concat!(
                            "SELECT ",
                            $crate::store::sql::rows::cols!(approval),
                            " FROM approvals WHERE status = 'pending' AND expires_ms > $3 AND conversation = $1 \
                             AND EXISTS (SELECT 1 FROM outbox WHERE outbox.key = 'approval:' || approvals.id \
                             AND outbox.platform_ids LIKE $2 ESCAPE '!') ORDER BY created_ms, id LIMIT 1"
                        )),
                        format!("%\"{}\"%", id.replace('!', "!!").replace('%', "!%").replace('_', "!_")),
                    ),
                };
                let raw: Option<$crate::store::sql::rows::ApprovalRaw> = query
                    .bind(conversation)
                    .bind(value)
                    .bind(now_ms)
                    .fetch_optional(self.reader())
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                raw.map(TryInto::try_into).transpose()
            }
        }
    };
}
pub(crate) use impl_approvals;
