//! What one event produced ([`OutcomeStore`](crate::store::OutcomeStore)), written once for
//! both backends: the inbox row, then its reply and failure notice by their keys, then the
//! approvals pending in its open session, on one read connection.
//!
//! Read only: it must never change a row. The inbox row is read first, so an event seen
//! finished also shows the reply its commit stored.

/// Implements `OutcomeStore` for `$store` over database `$db`.
macro_rules! impl_outcome {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::OutcomeStore for $store {
            async fn event_outcome(
                &self,
                event_id: &str,
            ) -> $crate::store::Result<Option<$crate::store::EventOutcome>> {
                use $crate::store::sql::error::db_err;
                use $crate::store::sql::rows::{cols, convert_all, ApprovalRaw, InboxRaw, OutboxRaw};
                let mut conn = self.reader().acquire().await.map_err(db_err)?;
                let inbox: Option<InboxRaw> =
                    sqlx::query_as(concat!("SELECT ", cols!(inbox), " FROM inbox WHERE id = $1"))
                        .bind(event_id)
                        .fetch_optional(&mut *conn)
                        .await
                        .map_err(db_err)?;
                let Some(inbox) = inbox else { return Ok(None) };
                let row: $crate::store::InboxRow = inbox.try_into()?;
                let (reply_key, failed_key) = ($crate::store::reply_key(event_id), $crate::store::failed_key(event_id));
                let notes: Vec<OutboxRaw> =
                    sqlx::query_as(concat!("SELECT ", cols!(outbox), " FROM outbox WHERE key = $1 OR key = $2"))
                        .bind(reply_key.as_str())
                        .bind(failed_key.as_str())
                        .fetch_all(&mut *conn)
                        .await
                        .map_err(db_err)?;
                let notes: Vec<$crate::store::OutboxRow> = convert_all(notes)?;
                let waiting: Vec<ApprovalRaw> = sqlx::query_as(concat!(
                    "SELECT ",
                    cols!(approval),
                    " FROM approvals WHERE status = 'pending' AND session_id IN \
                     (SELECT id FROM sessions WHERE key = $1 AND closed_ms IS NULL) ORDER BY created_ms, id"
                ))
                .bind($crate::ids::session_key(&row.event))
                .fetch_all(&mut *conn)
                .await
                .map_err(db_err)?;
                let (mut reply, mut failure) = (None, None);
                for note in notes {
                    if note.key == reply_key {
                        reply = Some(note);
                    } else {
                        failure = Some(note);
                    }
                }
                Ok(Some($crate::store::EventOutcome {
                    event: row.event,
                    status: row.status,
                    reply,
                    failure,
                    waiting: convert_all(waiting)?,
                }))
            }

            fn settled(&self) -> tokio::sync::broadcast::Receiver<$crate::store::Settled> {
                self.settled_feed().subscribe()
            }
        }
    };
}
pub(crate) use impl_outcome;
