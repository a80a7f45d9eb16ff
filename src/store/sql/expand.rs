//! The two macros a backend expands to become a store: `channel_sql!` (the statements that
//! filter on a list of channels, from the backend's predicate) and `impl_store!` (every store
//! trait, from the per-concern macros of the sibling files). The contract a backend type meets
//! is written at the top of `sql/mod.rs`.
//!
//! Macros only: this file must never hold SQL built from user input.

/// The statements that filter on a list of channels, built from the backend's predicate
/// `$channel_in` (binding the list as `$1`) and the row-locking clause for claims.
macro_rules! channel_sql {
    ($channel_in:literal, $claim_lock:literal, $worker_in:literal) => {
        /// `$1` live workers, `$2` now. What the dead replica held is recovered like a crash.
        const SQL_INBOX_TAKEOVER: &'static str = concat!(
            "UPDATE inbox SET status = 'pending', claimed_by = NULL, routed_to = NULL, updated_ms = $2, ",
            $crate::store::sql::recovery::charge_running!(),
            " WHERE status = 'processing' AND claimed_by IS NOT NULL AND NOT (",
            $worker_in,
            ")"
        );
        /// `$1` channels, `$2` worker, `$3` now, `$4` limit. The earlier-event check names the
        /// statuses of `inbox_open_by_conversation` literally, so it searches that partial index
        /// (one conversation's open events) instead of every earlier row of the inbox.
        pub(super) const SQL_INBOX_CLAIM: &'static str = concat!(
            "UPDATE inbox SET status = 'processing', claimed_by = $2, attempts = attempts + 1, started_ms = NULL, \
             updated_ms = $3 WHERE seq IN (SELECT seq FROM inbox WHERE status = 'pending' AND next_attempt_ms <= $3 \
             AND (routed_to IS NULL OR routed_to = $2 OR routed_ms <= $3 - 5000) \
             AND NOT EXISTS (SELECT 1 FROM inbox e WHERE e.conversation = inbox.conversation AND e.seq < inbox.seq \
             AND e.status IN ('pending', 'processing') AND ((e.status = 'processing' AND e.claimed_by <> $2) \
             OR (e.status = 'pending' AND e.routed_to <> $2 AND e.routed_ms > $3 - 5000))) AND ",
            $channel_in,
            " ORDER BY seq LIMIT $4",
            $claim_lock,
            ") RETURNING ",
            $crate::store::sql::rows::cols!(inbox)
        );
        /// `$1` channels, `$2` now.
        const SQL_INBOX_RECOVER: &'static str = concat!(
            "UPDATE inbox SET status = 'pending', claimed_by = NULL, updated_ms = $2, ",
            $crate::store::sql::recovery::charge_running!(),
            " WHERE status = 'processing' AND ",
            $channel_in
        );
        /// `$1` channels, `$2` now, `$3` limit.
        const SQL_OUTBOX_DUE: &'static str = concat!(
            "SELECT ",
            $crate::store::sql::rows::cols!(outbox),
            " FROM outbox WHERE status = 'pending' AND next_attempt_ms <= $2 AND ",
            $channel_in,
            " ORDER BY id LIMIT $3"
        );
    };
}
pub(crate) use channel_sql;

/// Implements every store trait (and `Store` itself) for `$store` over database `$db`.
macro_rules! impl_store {
    ($store:ty, $db:ty) => {
        $crate::store::sql::inbox::impl_inbox!($store, $db);
        $crate::store::sql::dead_letter::impl_dead_letter!($store, $db);
        $crate::store::sql::sessions::impl_sessions!($store, $db);
        $crate::store::sql::turn::impl_turn!($store, $db);
        $crate::store::sql::outbox::impl_outbox!($store, $db);
        $crate::store::sql::memory::impl_memory!($store, $db);
        $crate::store::sql::users::impl_users!($store, $db);
        $crate::store::sql::web::impl_web!($store, $db);
        $crate::store::sql::web_conversations::impl_web_conversations!($store, $db);
        $crate::store::sql::access::impl_access!($store, $db);
        $crate::store::sql::approvals::impl_approvals!($store, $db);
        $crate::store::sql::audit::impl_audit!($store, $db);
        $crate::store::sql::schedules::impl_schedules!($store, $db);
        $crate::store::sql::delegations::impl_delegations!($store, $db);
        $crate::store::sql::replicas::impl_replicas!($store, $db);
        $crate::store::sql::recovery::impl_recovery!($store, $db);
        $crate::store::sql::outcome::impl_outcome!($store, $db);
        $crate::store::sql::profile::impl_profile!($store, $db);
        $crate::store::sql::cursors::impl_cursors!($store, $db);
        $crate::store::sql::keys::impl_keys!($store, $db);
        $crate::store::sql::vectors::impl_vectors!($store, $db);
        $crate::store::sql::transcripts::impl_transcripts!($store, $db);

        #[async_trait::async_trait]
        impl $crate::store::PingStore for $store {
            /// `SELECT 1`.
            async fn ping(&self) -> $crate::store::Result<()> {
                sqlx::query("SELECT 1").execute(self.reader()).await.map_err($crate::store::sql::error::db_err)?;
                Ok(())
            }
        }

        #[async_trait::async_trait]
        impl $crate::store::Store for $store {
            fn backend(&self) -> $crate::store::Backend {
                Self::BACKEND
            }

            /// Applies this backend's pending migrations (`migrations/<backend>/`).
            async fn migrate(&self) -> $crate::store::Result<()> {
                Self::migrator()
                    .run(self.writer())
                    .await
                    .map_err(|e| $crate::store::StoreError::Migration(e.to_string()))
            }

            async fn close(&self) {
                self.close_pools().await;
            }
        }
    };
}
pub(crate) use impl_store;
