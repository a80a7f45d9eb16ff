//! One-time codes and identity links ([`AccessStore`](crate::store::AccessStore)), written once
//! for both backends: the storage side of pairing, `/link` and owner role changes.
//!
//! It must never hand out one code twice (taking is a single `DELETE ... RETURNING`), never
//! return a code past its expiry, never link an identity to a user that does not exist, and
//! never leave a merge half done: re-pointing an identity, moving the old user's rows and
//! deleting that user happen in one write transaction.

/// Implements `AccessStore` for `$store` over database `$db`.
macro_rules! impl_access {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::AccessStore for $store {
            /// Inserts the code. Codes of the same kind that expired by `code.created_ms` are
            /// deleted first (they are dead and would otherwise block their value forever), so
            /// `Conflict` means a live code with the same (kind, code) exists.
            async fn code_create(&self, code: &$crate::store::CodeRow) -> $crate::store::Result<()> {
                use $crate::store::sql::error::db_err;
                sqlx::query("DELETE FROM codes WHERE kind = $1 AND expires_ms <= $2")
                    .bind(code.kind.as_str())
                    .bind(code.created_ms)
                    .execute(self.writer())
                    .await
                    .map_err(db_err)?;
                sqlx::query(
                    "INSERT INTO codes (kind, code, identity, user_id, display_name, conversation, created_ms, \
                     expires_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                )
                .bind(code.kind.as_str())
                .bind(code.code.as_str())
                .bind(code.identity.as_str())
                .bind(code.user_id.as_deref())
                .bind(code.display_name.as_deref())
                .bind(code.conversation.as_str())
                .bind(code.created_ms)
                .bind(code.expires_ms)
                .execute(self.writer())
                .await
                .map_err(db_err)?;
                Ok(())
            }

            /// One `DELETE ... RETURNING` of the (kind, code) row, so of two concurrent takers
            /// exactly one gets it. The row is returned only if `expires_ms > now_ms`; an expired
            /// row is deleted all the same (it is dead) and `None` is returned.
            async fn code_take(
                &self,
                kind: $crate::store::CodeKind,
                code: &str,
                now_ms: i64,
            ) -> $crate::store::Result<Option<$crate::store::CodeRow>> {
                let raw: Option<$crate::store::sql::rows::CodeRaw> = sqlx::query_as(concat!(
                    "DELETE FROM codes WHERE kind = $1 AND code = $2 RETURNING ",
                    $crate::store::sql::rows::cols!(code)
                ))
                .bind(kind.as_str())
                .bind(code)
                .fetch_optional(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                let row: Option<$crate::store::CodeRow> = raw.map(TryInto::try_into).transpose()?;
                Ok(row.filter(|r| r.expires_ms > now_ms))
            }

            /// Codes of `kind` with `expires_ms > now_ms`, newest (`created_ms`) first, ties by
            /// code descending.
            async fn codes_live(
                &self,
                kind: $crate::store::CodeKind,
                now_ms: i64,
            ) -> $crate::store::Result<Vec<$crate::store::CodeRow>> {
                let raw: Vec<$crate::store::sql::rows::CodeRaw> = sqlx::query_as(concat!(
                    "SELECT ",
                    $crate::store::sql::rows::cols!(code),
                    " FROM codes WHERE kind = $1 AND expires_ms > $2 ORDER BY created_ms DESC, code DESC"
                ))
                .bind(kind.as_str())
                .bind(now_ms)
                .fetch_all(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                $crate::store::sql::rows::convert_all(raw)
            }

            /// In one write transaction:
            /// - `Conflict` (nothing changed) if `user_id` does not exist;
            /// - an identity without a link is linked to `user_id`: returns `None`;
            /// - an identity already linked to `user_id` is left alone: returns `Some(user_id)`;
            /// - an identity of another user B is re-pointed to `user_id`, and B's memories (all
            ///   scopes), sessions and usage rows move to `user_id` (even if B keeps other
            ///   identities). If no identity points at B any more, B is deleted and its pending
            ///   link codes now link to `user_id`. Returns `Some(B)`.
            ///
            /// Rows are locked in a fixed order (the identity, then B) so that concurrent links
            /// serialize: the last of them to re-point B's final identity deletes B.
            async fn identity_link(
                &self,
                identity: &butler_channel::Identity,
                user_id: &str,
            ) -> $crate::store::Result<Option<String>> {
                use $crate::store::sql::error::db_err;
                let mut tx = self.begin_write().await?;
                let target: Option<String> = sqlx::query_scalar("SELECT id FROM users WHERE id = $1")
                    .bind(user_id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_err)?;
                if target.is_none() {
                    tx.rollback().await.map_err(db_err)?;
                    return Err($crate::store::StoreError::Conflict(format!(
                        "cannot link `{identity}`: no user `{user_id}`"
                    )));
                }
                let inserted = sqlx::query(
                    "INSERT INTO identities (channel, platform_user_id, user_id, created_ms) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (channel, platform_user_id) DO NOTHING",
                )
                .bind(identity.channel.as_str())
                .bind(identity.user_id.as_str())
                .bind(user_id)
                .bind($crate::store::now_ms())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                if inserted.rows_affected() == 1 {
                    tx.commit().await.map_err(db_err)?;
                    return Ok(None);
                }
                // Lock the existing link and read its owner (the latest committed one on Postgres).
                let previous: Option<String> = sqlx::query_scalar(
                    "UPDATE identities SET user_id = user_id WHERE channel = $1 AND platform_user_id = $2 \
                     RETURNING user_id",
                )
                .bind(identity.channel.as_str())
                .bind(identity.user_id.as_str())
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
                let Some(previous) = previous else {
                    tx.rollback().await.map_err(db_err)?;
                    return Err($crate::store::StoreError::Conflict(format!(
                        "identity `{identity}` was unlinked concurrently"
                    )));
                };
                if previous == user_id {
                    tx.rollback().await.map_err(db_err)?;
                    return Ok(Some(previous));
                }
                // Lock B so that of two links moving B's last identities, the later one sees the
                // other's commit when it decides whether B is left without identities.
                sqlx::query("UPDATE users SET role = role WHERE id = $1")
                    .bind(previous.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                sqlx::query("UPDATE identities SET user_id = $3 WHERE channel = $1 AND platform_user_id = $2")
                    .bind(identity.channel.as_str())
                    .bind(identity.user_id.as_str())
                    .bind(user_id)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                for sql in [
                    "UPDATE memories SET user_id = $1 WHERE user_id = $2",
                    "UPDATE memory_vectors SET user_id = $1 WHERE user_id = $2",
                    "UPDATE sessions SET user_id = $1 WHERE user_id = $2",
                    "UPDATE usage SET user_id = $1 WHERE user_id = $2",
                    // Jobs follow their owner; a job keeps its old scope (and name) only where
                    // the merged user already has a job of that name.
                    "UPDATE schedules SET scope = 'user:' || $1 WHERE scope = 'user:' || $2 AND NOT EXISTS \
                     (SELECT 1 FROM schedules s WHERE s.scope = 'user:' || $1 AND s.name = schedules.name)",
                    "UPDATE schedules SET owner_user = $1 WHERE owner_user = $2",
                ] {
                    sqlx::query(sql).bind(user_id).bind(previous.as_str()).execute(&mut *tx).await.map_err(db_err)?;
                }
                let deleted = sqlx::query(
                    "DELETE FROM users WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM identities WHERE user_id = $1)",
                )
                .bind(previous.as_str())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                if deleted.rows_affected() > 0 {
                    sqlx::query("UPDATE codes SET user_id = $1 WHERE user_id = $2")
                        .bind(user_id)
                        .bind(previous.as_str())
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                }
                tx.commit().await.map_err(db_err)?;
                Ok(Some(previous))
            }
        }
    };
}
pub(crate) use impl_access;
