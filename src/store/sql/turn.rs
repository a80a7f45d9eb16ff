//! Ending an event atomically ([`TurnStore`](crate::store::TurnStore)), written once for both
//! backends: transcript, reply, notices, approvals, usage and inbox status in one short
//! transaction, and the usage totals that per-user limits read.
//!
//! It must never apply one event's turn twice: a commit for an event whose inbox row is already
//! finished only re-upserts the (idempotent) reply, so a re-run or a second replica finishing
//! the same event never duplicates messages, replies, notices, approvals or usage.

/// Implements `TurnStore` for `$store` over database `$db`.
macro_rules! impl_turn {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::TurnStore for $store {
            /// In ONE transaction:
            /// 1. sets the inbox row's status (if it is still pending or processing);
            /// 2. upserts the reply by key: a `draft` becomes `pending` with the final text and
            ///    buttons and keeps its platform ids; an existing pending/sent/failed row is left
            ///    unchanged;
            /// 3. upserts each of `notices` in order, the same way (a new key becomes `pending`);
            /// 4. inserts `approvals` as given (an existing id is left unchanged; a session that
            ///    does not exist fails the whole commit);
            /// 5. records usage (a turn's row per answering model);
            /// 6. appends `messages` to `session_id` (seq continues, version bumped), last and in
            ///    one statement, so that SQLite's full-text index writes them as one segment.
            ///
            /// With a `fence`, first checks that it is still the session's newest token, and
            /// refuses the whole commit ([`StoreError::Fenced`]) if not.
            ///
            /// If the inbox row is already done/dropped/failed, this is a re-run: only the
            /// idempotent step 2 runs. Notices are skipped with the approvals they announce: the
            /// first run stored both, and a re-run's notices may carry new approval ids whose
            /// approvals are not stored. An event with no inbox row is applied in full. Returns
            /// the reply's outbox row. A commit that settles the event announces it once committed.
            async fn finish_event(
                &self,
                commit: &$crate::store::TurnCommit,
            ) -> $crate::store::Result<Option<$crate::store::OutboxRow>> {
                let now = $crate::store::now_ms();
                let (updated, rerun, reply_id) = match self.lite() {
                    Some(lite) => {
                        let (owned, embed) = (commit.clone(), self.embed_switch().on());
                        lite.run(move |c| $crate::store::sql::lite_ops::finish_event(c, &owned, now, embed)).await?
                    }
                    None => self.finish_event_sqlx(commit, now).await?,
                };
                if let (false, Some(usage)) = (rerun, &commit.usage) {
                    usage.rows.iter().for_each($crate::store::count_usage);
                }
                let last = !matches!(
                    commit.inbox_status,
                    $crate::store::InboxStatus::Pending | $crate::store::InboxStatus::Processing
                );
                if let (true, Some(conversation)) = (last, updated) {
                    self.settled_feed().announce(&commit.inbox_id, &conversation);
                }
                Ok(reply_id)
            }

            /// Turns (events with turn rows: a turn answered by two models is one), tokens and
            /// cost of `user_id` recorded at or after `since_ms`.
            async fn usage_since(
                &self,
                user_id: &str,
                since_ms: i64,
            ) -> $crate::store::Result<$crate::store::UsageTotals> {
                let (turns, input_tokens, output_tokens, cost_usd): (i64, i64, i64, f64) = sqlx::query_as(
                    "SELECT CAST(COUNT(DISTINCT CASE WHEN kind = 'turn' THEN event_id END) AS BIGINT), \
                     CAST(COALESCE(SUM(input_tokens), 0) AS BIGINT), \
                     CAST(COALESCE(SUM(output_tokens), 0) AS BIGINT), \
                     CAST(COALESCE(SUM(cost_usd), 0.0) AS DOUBLE PRECISION) \
                     FROM usage WHERE user_id = $1 AND created_ms >= $2",
                )
                .bind(user_id)
                .bind(since_ms)
                .fetch_one(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok($crate::store::UsageTotals { turns, input_tokens, output_tokens, cost_usd })
            }

            async fn usage_add(&self, usage: &$crate::store::UsageRecord) -> $crate::store::Result<()> {
                let mut conn = self.writer().acquire().await.map_err($crate::store::sql::error::db_err)?;
                Self::usage_insert_on(&mut conn, usage, $crate::store::now_ms()).await?;
                $crate::store::count_usage(usage);
                Ok(())
            }

            async fn usage_by_model(
                &self,
                user_id: Option<&str>,
                since_ms: i64,
            ) -> $crate::store::Result<Vec<$crate::store::ModelUsage>> {
                let rows: Vec<(String, i64, i64, f64)> = sqlx::query_as(
                    "SELECT model, CAST(COALESCE(SUM(input_tokens), 0) AS BIGINT), \
                     CAST(COALESCE(SUM(output_tokens), 0) AS BIGINT), \
                     CAST(COALESCE(SUM(cost_usd), 0.0) AS DOUBLE PRECISION) \
                     FROM usage WHERE ($1 IS NULL OR user_id = $1) AND created_ms >= $2 \
                     GROUP BY model HAVING SUM(input_tokens) + SUM(output_tokens) > 0 \
                     ORDER BY 4 DESC, model",
                )
                .bind(user_id)
                .bind(since_ms)
                .fetch_all(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(rows
                    .into_iter()
                    .map(|(model, input_tokens, output_tokens, cost_usd)| $crate::store::ModelUsage {
                        model,
                        input_tokens,
                        output_tokens,
                        cost_usd,
                    })
                    .collect())
            }

            async fn last_context(&self, session_id: &str) -> $crate::store::Result<i64> {
                let last: Option<i64> = sqlx::query_scalar(
                    "SELECT context_tokens FROM usage WHERE session_id = $1 AND kind = 'turn' \
                     ORDER BY created_ms DESC, id DESC LIMIT 1",
                )
                .bind(session_id)
                .fetch_optional(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(last.unwrap_or(0))
            }
        }

        impl $store {
            /// `finish_event`'s statements on a sqlx write transaction: the settled
            /// conversation, whether this was a re-run, and the reply's row.
            async fn finish_event_sqlx(
                &self,
                commit: &$crate::store::TurnCommit,
                now: i64,
            ) -> $crate::store::Result<$crate::store::sql::lite_ops::Committed> {
                use $crate::store::sql::error::db_err;
                let mut tx = self.begin_write().await?;
                if let Some(fence) = &commit.fence {
                    // Locks the fence row until the commit: a replica taking the session over
                    // waits for this commit, or this commit sees its newer token.
                    let held = sqlx::query($crate::store::sql::hot::SQL_FENCE_HOLD)
                        .bind(fence.key.as_str())
                        .bind(fence.token)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    if held.rows_affected() == 0 {
                        return Err($crate::store::StoreError::Fenced { key: fence.key.clone() });
                    }
                }
                let updated: Option<String> = sqlx::query_scalar($crate::store::sql::hot::SQL_INBOX_SETTLE)
                    .bind(commit.inbox_id.as_str())
                    .bind(commit.inbox_status.as_str())
                    .bind(now)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_err)?;
                let rerun = if updated.is_none() {
                    let status: Option<String> = sqlx::query_scalar($crate::store::sql::hot::SQL_INBOX_STATUS)
                        .bind(commit.inbox_id.as_str())
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    status.is_some()
                } else {
                    false
                };
                let reply_id = match &commit.reply {
                    Some(reply) => Some(Self::outbox_upsert_on(&mut tx, reply, now).await?),
                    None => None,
                };
                if !rerun {
                    for notice in &commit.notices {
                        Self::outbox_upsert_on(&mut tx, notice, now).await?;
                    }
                    for approval in &commit.approvals {
                        Self::approval_insert_on(&mut tx, approval).await?;
                    }
                }
                if let (false, Some(usage)) = (rerun, &commit.usage) {
                    for u in &usage.rows {
                        Self::usage_insert_on(&mut tx, u, now).await?;
                    }
                }
                if let (false, Some(session_id)) = (rerun, commit.session_id.as_deref()) {
                    if !commit.messages.is_empty() {
                        let embed = self.embed_switch().on();
                        Self::append_messages_on(&mut tx, session_id, &commit.messages, now, embed).await?;
                    }
                }
                tx.commit().await.map_err(db_err)?;
                Ok((updated, rerun, reply_id))
            }

            /// Inserts one usage row on `conn` (inside the caller's transaction, if any).
            async fn usage_insert_on(
                conn: &mut <$db as sqlx::Database>::Connection,
                u: &$crate::store::UsageRecord,
                now: i64,
            ) -> $crate::store::Result<()> {
                sqlx::query($crate::store::sql::hot::SQL_USAGE_INSERT)
                    .bind(u.user_id.as_str())
                    .bind(u.session_id.as_str())
                    .bind(u.event_id.as_str())
                    .bind(u.model.as_str())
                    .bind(u.input_tokens)
                    .bind(u.output_tokens)
                    .bind(u.cost_usd)
                    .bind(u.iterations)
                    .bind(now)
                    .bind(u.kind.as_str())
                    .bind(u.context_tokens)
                    .execute(&mut *conn)
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                Ok(())
            }
        }

        #[async_trait::async_trait]
        impl $crate::store::SummaryStore for $store {
            async fn summary_latest(
                &self,
                session_id: &str,
            ) -> $crate::store::Result<Option<$crate::store::SummaryRow>> {
                let row: Option<(i64, String, i64)> = sqlx::query_as(
                    "SELECT up_to_seq, text, created_ms FROM summaries WHERE session_id = $1 \
                     ORDER BY up_to_seq DESC LIMIT 1",
                )
                .bind(session_id)
                .fetch_optional(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(row.map(|(up_to_seq, text, created_ms)| $crate::store::SummaryRow { up_to_seq, text, created_ms }))
            }

            async fn summary_add(&self, session_id: &str, up_to_seq: i64, text: &str) -> $crate::store::Result<()> {
                sqlx::query(
                    "INSERT INTO summaries (session_id, up_to_seq, text, created_ms) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (session_id, up_to_seq) DO NOTHING",
                )
                .bind(session_id)
                .bind(up_to_seq)
                .bind(text)
                .bind($crate::store::now_ms())
                .execute(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(())
            }

            async fn messages_after(
                &self,
                session_id: &str,
                after_seq: i64,
                limit: usize,
            ) -> $crate::store::Result<Vec<$crate::store::StoredMessage>> {
                let raw: Vec<$crate::store::sql::rows::MessageRaw> = sqlx::query_as(concat!(
                    "SELECT ",
                    $crate::store::sql::rows::cols!(message),
                    " FROM messages WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"
                ))
                .bind(session_id)
                .bind(after_seq)
                .bind($crate::store::sql::rows::sql_limit(limit))
                .fetch_all(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                $crate::store::sql::rows::convert_all(raw)
            }
        }
    };
}
pub(crate) use impl_turn;
