//! The web chat's own message log ([`WebStore`](crate::store::WebStore)), written once for
//! both backends: the "platform side" the web page reads and the web channel writes.
//!
//! It must never store two rows for one key, and never list another conversation's messages.

/// Implements `WebStore` for `$store` over database `$db`.
macro_rules! impl_web {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::WebStore for $store {
            /// Inserts the message; if its key is already stored, returns that row unchanged.
            async fn web_insert(
                &self,
                new: &$crate::store::NewWebMessage,
            ) -> $crate::store::Result<$crate::store::WebMessage> {
                use $crate::store::sql::error::db_err;
                let buttons = $crate::store::sql::rows::to_json("buttons", &new.buttons)?;
                let now = $crate::store::now_ms();
                if let Some(lite) = self.lite() {
                    let new = new.clone();
                    return lite.run(move |c| $crate::store::sql::lite_ops::web_insert(c, &new, &buttons, now)).await;
                }
                let mut conn = self.writer().acquire().await.map_err(db_err)?;
                let raw: Option<$crate::store::sql::rows::WebRaw> =
                    sqlx::query_as($crate::store::sql::hot::SQL_WEB_INSERT)
                        .bind(new.conversation.as_str())
                        .bind(new.key.as_str())
                        .bind(new.role.as_str())
                        .bind(new.author.as_str())
                        .bind(new.text.as_str())
                        .bind(buttons)
                        .bind(now)
                        .fetch_optional(&mut *conn)
                        .await
                        .map_err(db_err)?;
                let raw = match raw {
                    Some(raw) => raw,
                    None => sqlx::query_as($crate::store::sql::hot::SQL_WEB_BY_KEY)
                        .bind(new.key.as_str())
                        .fetch_one(&mut *conn)
                        .await
                        .map_err(db_err)?,
                };
                raw.try_into()
            }

            /// Replaces text and buttons, bumps `updated_ms`; `None` if there is no such id.
            async fn web_update(
                &self,
                id: i64,
                text: &str,
                buttons: &[butler_channel::Button],
            ) -> $crate::store::Result<Option<$crate::store::WebMessage>> {
                let raw: Option<$crate::store::sql::rows::WebRaw> = sqlx::query_as(concat!(
                    "UPDATE web_messages SET text = $2, buttons = $3, updated_ms = $4 WHERE id = $1 RETURNING ",
                    $crate::store::sql::rows::cols!(web)
                ))
                .bind(id)
                .bind(text)
                .bind($crate::store::sql::rows::to_json("buttons", buttons)?)
                .bind($crate::store::now_ms())
                .fetch_optional(self.writer())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                raw.map(TryInto::try_into).transpose()
            }

            /// Messages of `conversation` with id greater than `after_id`, ascending by id.
            async fn web_list(
                &self,
                conversation: &str,
                after_id: i64,
                limit: usize,
            ) -> $crate::store::Result<Vec<$crate::store::WebMessage>> {
                let raw: Vec<$crate::store::sql::rows::WebRaw> = sqlx::query_as(concat!(
                    "SELECT ",
                    $crate::store::sql::rows::cols!(web),
                    " FROM web_messages WHERE conversation = $1 AND id > $2 ORDER BY id LIMIT $3"
                ))
                .bind(conversation)
                .bind(after_id)
                .bind($crate::store::sql::rows::sql_limit(limit))
                .fetch_all(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                $crate::store::sql::rows::convert_all(raw)
            }
        }
    };
}
pub(crate) use impl_web;
