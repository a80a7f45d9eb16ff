//! People, their channel identities and conversations
//! ([`UserStore`](crate::store::UserStore)), written once for both backends.
//!
//! Creation is race-safe and first-writer-wins: this code must never link one identity to two
//! users, never overwrite an existing user or conversation, and never leave a user it created
//! behind when it lost the race to link the identity.

/// Implements `UserStore` for `$store` over database `$db`.
macro_rules! impl_users {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::UserStore for $store {
            async fn identity_user(
                &self,
                identity: &butler_channel::Identity,
            ) -> $crate::store::Result<Option<$crate::store::UserRow>> {
                let raw: Option<$crate::store::sql::rows::UserRaw> = sqlx::query_as(
                    "SELECT u.id, u.display_name, u.role, u.timezone, u.created_ms FROM identities i \
                     JOIN users u ON u.id = i.user_id WHERE i.channel = $1 AND i.platform_user_id = $2",
                )
                .bind(identity.channel.as_str())
                .bind(identity.user_id.as_str())
                .fetch_optional(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                raw.map(TryInto::try_into).transpose()
            }

            /// The identity's user if it is linked. Otherwise, in one transaction, creates `new`
            /// (or reuses the user with `new.id` if it exists, unchanged) and links the identity
            /// to it. If another writer linked the identity first, this transaction is rolled
            /// back and their user is returned.
            async fn user_ensure(
                &self,
                identity: &butler_channel::Identity,
                new: &$crate::store::NewUser,
            ) -> $crate::store::Result<$crate::store::UserRow> {
                use $crate::store::sql::error::db_err;
                if let Some(user) = self.identity_user(identity).await? {
                    return Ok(user);
                }
                let now = $crate::store::now_ms();
                let mut tx = self.begin_write().await?;
                sqlx::query(
                    "INSERT INTO users (id, display_name, role, timezone, created_ms) VALUES ($1, $2, $3, $4, $5) \
                     ON CONFLICT (id) DO NOTHING",
                )
                .bind(new.id.as_str())
                .bind(new.display_name.as_deref())
                .bind(new.role.as_str())
                .bind(new.timezone.as_str())
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                let linked = sqlx::query(
                    "INSERT INTO identities (channel, platform_user_id, user_id, created_ms) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (channel, platform_user_id) DO NOTHING",
                )
                .bind(identity.channel.as_str())
                .bind(identity.user_id.as_str())
                .bind(new.id.as_str())
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                if linked.rows_affected() == 1 {
                    tx.commit().await.map_err(db_err)?;
                } else {
                    tx.rollback().await.map_err(db_err)?;
                }
                self.identity_user(identity).await?.ok_or_else(|| {
                    $crate::store::StoreError::Conflict(format!("identity `{identity}` was unlinked concurrently"))
                })
            }

            async fn conversation_get(
                &self,
                id: &str,
            ) -> $crate::store::Result<Option<$crate::store::ConversationRow>> {
                let raw: Option<$crate::store::sql::rows::ConversationRaw> = sqlx::query_as(concat!(
                    "SELECT ",
                    $crate::store::sql::rows::cols!(conversation),
                    " FROM conversations WHERE id = $1"
                ))
                .bind(id)
                .fetch_optional(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                raw.map(TryInto::try_into).transpose()
            }

            /// Inserts `new` if no conversation has its id, then returns the stored row: the
            /// first writer's kind, owner and creation time win. `new.created_ms` is used as
            /// given when positive, else now.
            async fn conversation_ensure(
                &self,
                new: &$crate::store::ConversationRow,
            ) -> $crate::store::Result<$crate::store::ConversationRow> {
                use $crate::store::sql::error::db_err;
                let created = if new.created_ms > 0 { new.created_ms } else { $crate::store::now_ms() };
                sqlx::query(
                    "INSERT INTO conversations (id, kind, owner, created_ms) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (id) DO NOTHING",
                )
                .bind(new.id.as_str())
                .bind($crate::store::sql::rows::kind_str(new.kind))
                .bind(new.owner.as_str())
                .bind(created)
                .execute(self.writer())
                .await
                .map_err(db_err)?;
                self.conversation_get(&new.id).await?.ok_or_else(|| {
                    $crate::store::StoreError::Corrupt(format!("conversation `{}` vanished after insert", new.id))
                })
            }

            /// The user's identities sorted by channel, then platform user id (byte order,
            /// whatever the database collation); empty for an unknown user.
            async fn user_identities(&self, user_id: &str) -> $crate::store::Result<Vec<butler_channel::Identity>> {
                let rows: Vec<(String, String)> =
                    sqlx::query_as("SELECT channel, platform_user_id FROM identities WHERE user_id = $1")
                        .bind(user_id)
                        .fetch_all(self.reader())
                        .await
                        .map_err($crate::store::sql::error::db_err)?;
                let mut out: Vec<butler_channel::Identity> =
                    rows.into_iter().map(|(channel, id)| butler_channel::Identity::new(channel, id)).collect();
                out.sort();
                Ok(out)
            }

            /// Sets the role; `true` when the user exists (even if the role was already `role`).
            async fn user_set_role(&self, user_id: &str, role: $crate::store::UserRole) -> $crate::store::Result<bool> {
                let done = sqlx::query("UPDATE users SET role = $2 WHERE id = $1")
                    .bind(user_id)
                    .bind(role.as_str())
                    .execute(self.writer())
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                Ok(done.rows_affected() > 0)
            }
        }
    };
}
pub(crate) use impl_users;
