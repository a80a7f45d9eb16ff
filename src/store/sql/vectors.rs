//! Recall by meaning in the store, written once for both backends: the embedding queue
//! ([`EmbedQueueStore`](crate::store::EmbedQueueStore)) and the vectors recall reads
//! ([`VectorStore`](crate::store::VectorStore)). Vectors are plain bytes in ordinary tables (no
//! database extension), one owner's read at a time.
//!
//! This code must never return another owner's vectors or memories, and never store a vector
//! for a text whose claim was lost (the text changed, or another replica took the batch).

/// Whose sessions a transcript read reaches.
pub(crate) enum Whose<'a> {
    /// The person's direct sessions.
    Person(&'a str),
    /// One group key's sessions.
    Group(&'a str),
}

impl<'a> Whose<'a> {
    /// `None` for a group scope whose key is not a group's.
    pub(crate) fn of(user_id: &'a str, within: &'a crate::store::TranscriptScope) -> Option<Self> {
        match within {
            crate::store::TranscriptScope::Private => Some(Self::Person(user_id)),
            crate::store::TranscriptScope::Group(key) if key.starts_with(crate::store::GROUP_KEY_PREFIX) => {
                Some(Self::Group(key))
            }
            crate::store::TranscriptScope::Group(_) => None,
        }
    }

    /// The condition on sessions `s` (with `$1` the person or the key) and what `$1` is.
    pub(crate) fn condition(&self) -> (&'static str, &'a str) {
        match self {
            Self::Person(user) => ("s.user_id = $1 AND substr(s.key, 1, 3) = 'dm:'", user),
            Self::Group(key) => ("s.key = $1 AND substr(s.key, 1, 6) = 'group:'", key),
        }
    }
}

/// Implements `EmbedQueueStore` and `VectorStore` for `$store` (over `$db`), which supplies
/// `fn embed_switch(&self) -> &EmbedSwitch`.
macro_rules! impl_vectors {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::EmbedQueueStore for $store {
            async fn embed_track(&self, model: Option<&str>) -> $crate::store::Result<()> {
                self.embed_switch().set(model.is_some());
                if model.is_none() {
                    sqlx::query("DELETE FROM embed_models")
                        .execute(self.writer())
                        .await
                        .map_err($crate::store::sql::error::db_err)?;
                }
                Ok(())
            }

            async fn embed_backfill(&self, model: &str, force: bool) -> $crate::store::Result<u64> {
                use $crate::store::sql::error::db_err;
                let mut tx = self.begin_write().await?;
                let known: Option<String> = sqlx::query_scalar("SELECT model FROM embed_models WHERE model = $1")
                    .bind(model)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_err)?;
                if known.is_some() && !force {
                    return Ok(0);
                }
                let memories = sqlx::query(
                    "INSERT INTO embed_queue (ref, attempts, next_ms) SELECT 'm:' || m.id, 0, 0 FROM memories m \
                     WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id AND v.model = $1) \
                     ON CONFLICT (ref) DO NOTHING",
                )
                .bind(model)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                let messages = sqlx::query(
                    "INSERT INTO embed_queue (ref, attempts, next_ms) \
                     SELECT 't:' || m.seq || ':' || m.session_id, 0, 0 FROM messages m JOIN sessions s ON s.id = m.session_id \
                     WHERE m.role IN ('user', 'assistant') AND TRIM(m.content) <> '' \
                     AND (s.key LIKE 'dm:%' OR s.key LIKE 'group:%') \
                     AND NOT EXISTS (SELECT 1 FROM message_vectors v WHERE v.session_id = m.session_id \
                     AND v.seq = m.seq AND v.model = $1) \
                     ON CONFLICT (ref) DO NOTHING",
                )
                .bind(model)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                sqlx::query(
                    "INSERT INTO embed_models (model, queued_ms) VALUES ($1, $2) \
                     ON CONFLICT (model) DO UPDATE SET queued_ms = excluded.queued_ms",
                )
                .bind(model)
                .bind($crate::store::now_ms())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                tx.commit().await.map_err(db_err)?;
                Ok(memories.rows_affected() + messages.rows_affected())
            }

            async fn embed_claim(
                &self,
                claim: &str,
                limit: usize,
                lease_ms: i64,
            ) -> $crate::store::Result<Vec<$crate::store::EmbedItem>> {
                use $crate::store::sql::error::db_err;
                use $crate::store::EmbedRef;
                let now = $crate::store::now_ms();
                let claimed: Vec<(String, i32)> = sqlx::query_as(
                    "UPDATE embed_queue SET claim = $1, attempts = attempts + 1, next_ms = $2 + $4 \
                     WHERE ref IN (SELECT ref FROM embed_queue WHERE next_ms <= $2 ORDER BY next_ms, ref LIMIT $3) \
                     RETURNING ref, attempts",
                )
                .bind(claim)
                .bind(now)
                .bind($crate::store::sql::rows::sql_limit(limit))
                .bind(lease_ms)
                .fetch_all(self.writer())
                .await
                .map_err(db_err)?;
                let mut memories = Vec::new();
                let mut messages = Vec::new();
                let mut attempts = std::collections::HashMap::new();
                for (key, tries) in claimed {
                    match EmbedRef::parse(&key) {
                        Some(r) => {
                            match &r {
                                EmbedRef::Memory(id) => memories.push(*id),
                                EmbedRef::Message { session_id, seq } => messages.push((session_id.clone(), *seq)),
                            }
                            attempts.insert(r, i64::from(tries));
                        }
                        None => {
                            sqlx::query("DELETE FROM embed_queue WHERE ref = $1")
                                .bind(&key)
                                .execute(self.writer())
                                .await
                                .map_err(db_err)?;
                        }
                    }
                }
                let mut items = Vec::new();
                if !memories.is_empty() {
                    let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT id, text FROM memories WHERE id IN (");
                    let mut list = qb.separated(", ");
                    for id in &memories {
                        list.push_bind(*id);
                    }
                    qb.push(")");
                    let rows: Vec<(i64, String)> = qb.build_query_as().fetch_all(self.reader()).await.map_err(db_err)?;
                    items.extend(rows.into_iter().map(|(id, text)| (EmbedRef::Memory(id), text)));
                }
                if !messages.is_empty() {
                    let mut qb = sqlx::QueryBuilder::<$db>::new(
                        "SELECT session_id, seq, content FROM messages WHERE (session_id, seq) IN (VALUES ",
                    );
                    let mut list = qb.separated(", ");
                    for (session_id, seq) in &messages {
                        list.push("(");
                        list.push_bind_unseparated(session_id.clone());
                        list.push_unseparated(", ");
                        list.push_bind_unseparated(*seq);
                        list.push_unseparated(")");
                    }
                    qb.push(")");
                    let rows: Vec<(String, i64, String)> =
                        qb.build_query_as().fetch_all(self.reader()).await.map_err(db_err)?;
                    items.extend(
                        rows.into_iter().map(|(session_id, seq, text)| (EmbedRef::Message { session_id, seq }, text)),
                    );
                }
                let found: std::collections::HashSet<&EmbedRef> = items.iter().map(|(r, _)| r).collect();
                for gone in attempts.keys().filter(|r| !found.contains(r)) {
                    sqlx::query("DELETE FROM embed_queue WHERE ref = $1 AND claim = $2")
                        .bind(gone.key())
                        .bind(claim)
                        .execute(self.writer())
                        .await
                        .map_err(db_err)?;
                }
                Ok(items
                    .into_iter()
                    .map(|(item, text)| {
                        let attempts = attempts.get(&item).copied().unwrap_or(1);
                        $crate::store::EmbedItem { item, text, attempts }
                    })
                    .collect())
            }

            async fn embed_done(
                &self,
                claim: &str,
                model: &str,
                done: &[($crate::store::EmbedRef, Vec<u8>)],
            ) -> $crate::store::Result<u64> {
                use $crate::store::sql::error::db_err;
                use $crate::store::EmbedRef;
                let now = $crate::store::now_ms();
                let mut tx = self.begin_write().await?;
                let mut stored = 0;
                for (item, vec) in done {
                    let held = sqlx::query("DELETE FROM embed_queue WHERE ref = $1 AND claim = $2")
                        .bind(item.key())
                        .bind(claim)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    if held.rows_affected() == 0 {
                        continue;
                    }
                    let q = match item {
                        EmbedRef::Memory(id) => sqlx::query(
                            "INSERT INTO memory_vectors (memory_id, user_id, scope, model, vec, created_ms) \
                             SELECT id, user_id, scope, $2, $3, $4 FROM memories WHERE id = $1 \
                             ON CONFLICT (memory_id) DO UPDATE SET user_id = excluded.user_id, scope = excluded.scope, \
                             model = excluded.model, vec = excluded.vec, created_ms = excluded.created_ms",
                        )
                        .bind(*id),
                        EmbedRef::Message { session_id, seq } => sqlx::query(
                            "INSERT INTO message_vectors (session_id, seq, model, vec, created_ms) \
                             SELECT session_id, seq, $3, $4, $5 FROM messages WHERE session_id = $1 AND seq = $2 \
                             ON CONFLICT (session_id, seq) DO UPDATE SET model = excluded.model, vec = excluded.vec, \
                             created_ms = excluded.created_ms",
                        )
                        .bind(session_id.as_str())
                        .bind(*seq),
                    };
                    stored += q.bind(model).bind(vec.as_slice()).bind(now).execute(&mut *tx).await.map_err(db_err)?.rows_affected();
                }
                tx.commit().await.map_err(db_err)?;
                Ok(stored)
            }

            async fn embed_retry(
                &self,
                claim: &str,
                items: &[$crate::store::EmbedRef],
                next_ms: i64,
                error: &str,
            ) -> $crate::store::Result<()> {
                use $crate::store::sql::error::db_err;
                let mut tx = self.begin_write().await?;
                for item in items {
                    sqlx::query("UPDATE embed_queue SET claim = NULL, next_ms = $3, error = $4 WHERE ref = $1 AND claim = $2")
                        .bind(item.key())
                        .bind(claim)
                        .bind(next_ms)
                        .bind(error)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                }
                tx.commit().await.map_err(db_err)
            }

            async fn embed_progress(&self, model: &str) -> $crate::store::Result<$crate::store::EmbedProgress> {
                let (memories, memories_embedded, messages_embedded, queued, failing): (i64, i64, i64, i64, i64) =
                    sqlx::query_as(
                        "SELECT (SELECT COUNT(*) FROM memories), \
                         (SELECT COUNT(*) FROM memory_vectors WHERE model = $1), \
                         (SELECT COUNT(*) FROM message_vectors WHERE model = $1), \
                         (SELECT COUNT(*) FROM embed_queue), \
                         (SELECT COUNT(*) FROM embed_queue WHERE error IS NOT NULL)",
                    )
                    .bind(model)
                    .fetch_one(self.reader())
                    .await
                    .map_err($crate::store::sql::error::db_err)?;
                let n = |v: i64| u64::try_from(v).unwrap_or(0);
                Ok($crate::store::EmbedProgress {
                    memories: n(memories),
                    memories_embedded: n(memories_embedded),
                    messages_embedded: n(messages_embedded),
                    queued: n(queued),
                    failing: n(failing),
                })
            }
        }

        #[async_trait::async_trait]
        impl $crate::store::VectorStore for $store {
            async fn memory_vectors(
                &self,
                owner: &$crate::store::MemoryScope,
                model: &str,
            ) -> $crate::store::Result<Vec<(i64, Vec<u8>)>> {
                sqlx::query_as("SELECT memory_id, vec FROM memory_vectors WHERE user_id = $1 AND scope = $2 AND model = $3")
                    .bind(owner.user_id.as_str())
                    .bind(owner.scope.as_str())
                    .bind(model)
                    .fetch_all(self.reader())
                    .await
                    .map_err($crate::store::sql::error::db_err)
            }

            async fn memories_by_ids(
                &self,
                owner: &$crate::store::MemoryScope,
                ids: &[i64],
            ) -> $crate::store::Result<Vec<$crate::store::MemoryRow>> {
                if ids.is_empty() {
                    return Ok(Vec::new());
                }
                let mut qb = sqlx::QueryBuilder::<$db>::new(concat!(
                    "SELECT ",
                    $crate::store::sql::rows::cols!(memory),
                    " FROM memories WHERE user_id = "
                ));
                qb.push_bind(owner.user_id.as_str()).push(" AND scope = ").push_bind(owner.scope.as_str());
                qb.push(" AND id IN (");
                let mut list = qb.separated(", ");
                for id in ids {
                    list.push_bind(*id);
                }
                qb.push(")");
                let raw: Vec<$crate::store::sql::rows::MemoryRaw> =
                    qb.build_query_as().fetch_all(self.reader()).await.map_err($crate::store::sql::error::db_err)?;
                Ok(raw.into_iter().map(Into::into).collect())
            }

            async fn transcript_vectors(
                &self,
                user_id: &str,
                within: &$crate::store::TranscriptScope,
                model: &str,
                except: Option<&str>,
            ) -> $crate::store::Result<Vec<(String, i64, Vec<u8>)>> {
                let Some(owner) = $crate::store::sql::vectors::Whose::of(user_id, within) else {
                    return Ok(Vec::new());
                };
                let (whose, bind) = owner.condition();
                let sql = format!(
                    "SELECT v.session_id, v.seq, v.vec FROM sessions s JOIN message_vectors v ON v.session_id = s.id \
                     WHERE {whose} AND v.model = $2 AND s.id <> $3"
                );
                sqlx::query_as(sqlx::AssertSqlSafe(sql))
                    .bind(bind)
                    .bind(model)
                    .bind(except.unwrap_or(""))
                    .fetch_all(self.reader())
                    .await
                    .map_err($crate::store::sql::error::db_err)
            }

            async fn transcript_hits(
                &self,
                user_id: &str,
                within: &$crate::store::TranscriptScope,
                refs: &[(String, i64)],
            ) -> $crate::store::Result<Vec<$crate::store::TranscriptHit>> {
                let Some(owner) = $crate::store::sql::vectors::Whose::of(user_id, within) else {
                    return Ok(Vec::new());
                };
                if refs.is_empty() {
                    return Ok(Vec::new());
                }
                let mut qb = sqlx::QueryBuilder::<$db>::new(
                    "SELECT m.session_id, s.key AS session_key, s.conversation, m.seq, m.role, m.content, m.created_ms, \
                     s.created_ms AS session_created_ms FROM sessions s JOIN messages m ON m.session_id = s.id WHERE ",
                );
                match owner {
                    $crate::store::sql::vectors::Whose::Person(user) => {
                        qb.push("s.user_id = ").push_bind(user).push(" AND substr(s.key, 1, 3) = 'dm:'");
                    }
                    $crate::store::sql::vectors::Whose::Group(key) => {
                        qb.push("s.key = ").push_bind(key).push(" AND substr(s.key, 1, 6) = 'group:'");
                    }
                }
                qb.push(" AND m.role IN ('user', 'assistant') AND (m.session_id, m.seq) IN (VALUES ");
                let mut list = qb.separated(", ");
                for (session_id, seq) in refs {
                    list.push("(");
                    list.push_bind_unseparated(session_id.as_str());
                    list.push_unseparated(", ");
                    list.push_bind_unseparated(*seq);
                    list.push_unseparated(")");
                }
                qb.push(")");
                let raw: Vec<$crate::store::sql::transcripts::TranscriptHitRaw> =
                    qb.build_query_as().fetch_all(self.reader()).await.map_err($crate::store::sql::error::db_err)?;
                raw.into_iter().map(TryInto::try_into).collect()
            }
        }
    };
}
pub(crate) use impl_vectors;
