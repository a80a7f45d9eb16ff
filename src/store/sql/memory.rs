//! Long-term memory ([`MemoryStore`](crate::store::MemoryStore)), written once for both
//! backends, and the query sanitizer that turns free user text into safe full-text terms.
//!
//! Every statement is scoped to one user: this code must never return, count or delete another
//! user's memories, and user text must never reach the full-text query parser unquoted (no
//! syntax errors, no operators smuggled in).

/// At most this many distinct words of a query are searched.
const MAX_TERMS: usize = 32;
/// Longer words are cut to this many characters.
const MAX_TERM_CHARS: usize = 64;
/// Very common English words, left out of searches.
const STOPWORDS: &[&str] = &[
    "a", "about", "all", "am", "an", "and", "any", "are", "as", "at", "be", "but", "by", "can", "could", "did", "do",
    "does", "for", "from", "had", "has", "have", "he", "her", "him", "his", "how", "i", "if", "in", "into", "is", "it",
    "its", "me", "my", "no", "not", "of", "on", "or", "our", "she", "so", "than", "that", "the", "their", "them",
    "then", "there", "they", "this", "to", "us", "was", "we", "were", "what", "when", "where", "which", "who", "why",
    "will", "with", "would", "you", "your",
];

/// The words of a search query: runs of letters and digits, lowercased, deduplicated, in order.
/// Everything else (quotes, `*`, parentheses, `-`, `:`) separates words and is dropped, so the
/// result is safe to quote for either full-text syntax. Empty when there is nothing to search.
pub(crate) fn search_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in query.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let term: String = word.chars().take(MAX_TERM_CHARS).collect::<String>().to_lowercase();
        // Words in nearly every sentence would make every memory "relevant".
        if STOPWORDS.contains(&term.as_str()) {
            continue;
        }
        if !terms.contains(&term) {
            terms.push(term);
            if terms.len() == MAX_TERMS {
                break;
            }
        }
    }
    terms
}

/// Implements `MemoryStore` for `$store`; the search SQL and query syntax come from
/// `Self::SQL_MEMORY_SEARCH` (`$1` user, `$2` query, `$3` limit, `$4` scope) and `Self::fts_query`.
macro_rules! impl_memory {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::MemoryStore for $store {
            async fn memory_add(
                &self,
                owner: &$crate::store::MemoryScope,
                text: &str,
                source: Option<&str>,
            ) -> $crate::store::Result<$crate::store::MemoryRow> {
                use $crate::store::sql::error::db_err;
                let mut tx = self.begin_write().await?;
                let raw: $crate::store::sql::rows::MemoryRaw = sqlx::query_as(concat!(
                    "INSERT INTO memories (user_id, text, source, created_ms, updated_ms, scope) \
                     VALUES ($1, $2, $3, $4, $4, $5) RETURNING ",
                    $crate::store::sql::rows::cols!(memory)
                ))
                .bind(owner.user_id.as_str())
                .bind(text)
                .bind(source)
                .bind($crate::store::now_ms())
                .bind(owner.scope.as_str())
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err)?;
                let row: $crate::store::MemoryRow = raw.into();
                if self.embed_switch().on() {
                    sqlx::query($crate::store::sql::queue::SQL_QUEUE)
                        .bind($crate::store::EmbedRef::Memory(row.id).key())
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                }
                tx.commit().await.map_err(db_err)?;
                Ok(row)
            }

            /// Full-text search over this user's memories with OR semantics over the query's
            /// words (a memory matching only some words is found), ranked by relevance, then
            /// most recent first. A query without words returns nothing.
            async fn memory_search(
                &self,
                owner: &$crate::store::MemoryScope,
                query: &str,
                limit: usize,
            ) -> $crate::store::Result<Vec<$crate::store::MemoryRow>> {
                let terms = $crate::store::sql::memory::search_terms(query);
                if terms.is_empty() || limit == 0 {
                    return Ok(Vec::new());
                }
                // On Postgres not a cached prepared statement: it would switch to a generic plan
                // after five runs, and without the values it intersects the whole GIN match
                // (hundreds of thousands of rows for a common word) with the owner's rows: 14 ms
                // instead of 0.5 ms over a million memories (benches/memory.rs). SQLite's plans
                // never depend on the values (`sqlite::stable_plans`), so there it is prepared
                // once per connection instead of parsed on every turn's recall.
                let fts = Self::fts_query(&terms);
                let limit = $crate::store::sql::rows::sql_limit(limit);
                // Every turn's recall asks this: on SQLite it is read on this thread when it can.
                let here = self.lite().and_then(|lite| {
                    lite.read_here(|c| {
                        let values: [&dyn rusqlite::ToSql; 4] = [&owner.user_id, &fts, &limit, &owner.scope];
                        $crate::store::sql::lite::query(
                            c,
                            Self::SQL_MEMORY_SEARCH,
                            &values,
                            $crate::store::sql::rows::MemoryRaw::from_lite,
                        )
                    })
                });
                if let Some(found) = here {
                    return Ok(found?.into_iter().map(Into::into).collect());
                }
                let raw: Vec<$crate::store::sql::rows::MemoryRaw> = sqlx::query_as(Self::SQL_MEMORY_SEARCH)
                    .persistent(matches!(Self::BACKEND, $crate::store::Backend::Sqlite))
                    .bind(owner.user_id.as_str())
                    .bind(fts)
                    .bind(limit)
                    .bind(owner.scope.as_str())
                    .fetch_all(self.reader())
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                Ok(raw.into_iter().map(Into::into).collect())
            }

            /// This owner's memories in this scope, most recent first.
            async fn memory_list(
                &self,
                owner: &$crate::store::MemoryScope,
                limit: usize,
            ) -> $crate::store::Result<Vec<$crate::store::MemoryRow>> {
                let raw: Vec<$crate::store::sql::rows::MemoryRaw> = sqlx::query_as(concat!(
                    "SELECT ",
                    $crate::store::sql::rows::cols!(memory),
                    " FROM memories WHERE user_id = $1 AND scope = $3 ORDER BY created_ms DESC, id DESC LIMIT $2"
                ))
                .bind(owner.user_id.as_str())
                .bind($crate::store::sql::rows::sql_limit(limit))
                .bind(owner.scope.as_str())
                .fetch_all(self.reader())
                .await
                .map_err($crate::store::sql::error::db_err)?;
                Ok(raw.into_iter().map(Into::into).collect())
            }

            /// Deletes the memory only if it belongs to this owner and scope.
            async fn memory_forget(&self, owner: &$crate::store::MemoryScope, id: i64) -> $crate::store::Result<bool> {
                use $crate::store::sql::error::db_err;
                let mut tx = self.begin_write().await?;
                let done = sqlx::query("DELETE FROM memories WHERE id = $1 AND user_id = $2 AND scope = $3")
                    .bind(id)
                    .bind(owner.user_id.as_str())
                    .bind(owner.scope.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                if done.rows_affected() > 0 {
                    // Its vector and its place in the queue go with it.
                    sqlx::query("DELETE FROM memory_vectors WHERE memory_id = $1")
                        .bind(id)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    sqlx::query("DELETE FROM embed_queue WHERE ref = $1")
                        .bind($crate::store::EmbedRef::Memory(id).key())
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                }
                tx.commit().await.map_err(db_err)?;
                Ok(done.rows_affected() > 0)
            }

            /// Replaces the text of this owner's memory `id` (the full-text index follows).
            async fn memory_update(
                &self,
                owner: &$crate::store::MemoryScope,
                id: i64,
                text: &str,
            ) -> $crate::store::Result<bool> {
                use $crate::store::sql::error::db_err;
                let mut tx = self.begin_write().await?;
                let done = sqlx::query(
                    "UPDATE memories SET text = $4, updated_ms = $5 WHERE id = $1 AND user_id = $2 AND scope = $3",
                )
                .bind(id)
                .bind(owner.user_id.as_str())
                .bind(owner.scope.as_str())
                .bind(text)
                .bind($crate::store::now_ms())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                if done.rows_affected() > 0 {
                    // The old text's vector no longer says what the memory says.
                    sqlx::query("DELETE FROM memory_vectors WHERE memory_id = $1")
                        .bind(id)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    if self.embed_switch().on() {
                        sqlx::query($crate::store::sql::queue::SQL_QUEUE)
                            .bind($crate::store::EmbedRef::Memory(id).key())
                            .execute(&mut *tx)
                            .await
                            .map_err(db_err)?;
                    }
                }
                tx.commit().await.map_err(db_err)?;
                Ok(done.rows_affected() > 0)
            }
        }
    };
}
pub(crate) use impl_memory;

#[cfg(test)]
mod tests {
    use super::search_terms;

    #[test]
    fn search_terms_keep_only_words() {
        let cases: &[(&str, &[&str])] = &[
            ("coffee morning", &["coffee", "morning"]),
            ("\"", &[]),
            ("*", &[]),
            ("AND OR NOT", &[]),
            ("what is my cat called", &["cat", "called"]),
            ("NEAR(", &["near"]),
            ("'; drop table memories; --", &["drop", "table", "memories"]),
            ("Coffee coffee COFFEE", &["coffee"]),
            ("café-au-lait", &["café", "au", "lait"]),
            ("  ", &[]),
        ];
        for (input, want) in cases {
            assert_eq!(search_terms(input), *want, "{input:?}");
        }
        assert_eq!(search_terms(&"w ".repeat(100)).len(), 1);
        let many: String = (0..100).map(|i| format!("w{i} ")).collect();
        assert_eq!(search_terms(&many).len(), super::MAX_TERMS);
    }
}
