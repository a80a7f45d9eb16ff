//! Exporting and importing a user's memories as JSON (`butler memory export|import`): every
//! scope of that user, with ids, texts, sources and times. An import adds memories (skipping
//! texts the user already has in that scope); it never touches another user's.

use crate::store::{MemoryRow, MemoryScope, MemoryStore, StoreError};
use serde::{Deserialize, Serialize};

/// The JSON document.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct MemoryFile {
    pub user: String,
    pub memories: Vec<MemoryEntry>,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct MemoryEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    #[serde(default)]
    pub scope: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default)]
    pub created_ms: i64,
}

impl From<MemoryRow> for MemoryEntry {
    fn from(m: MemoryRow) -> Self {
        Self { id: Some(m.id), scope: m.scope, text: m.text, source: m.source, created_ms: m.created_ms }
    }
}

/// Every memory of `user_id` in the given scopes (the personal scope is always included).
pub(crate) async fn export_user(
    store: &dyn MemoryStore,
    user_id: &str,
    scopes: &[String],
) -> Result<MemoryFile, StoreError> {
    let mut memories = Vec::new();
    let mut all: Vec<String> = vec![String::new()];
    all.extend(scopes.iter().filter(|s| !s.is_empty()).cloned());
    for scope in all {
        let owner = MemoryScope { user_id: user_id.to_string(), scope };
        let mut rows = store.memory_list(&owner, usize::MAX >> 1).await?;
        rows.reverse();
        memories.extend(rows.into_iter().map(MemoryEntry::from));
    }
    Ok(MemoryFile { user: user_id.to_string(), memories })
}

/// Adds the file's memories to `user_id` (the file's own user field is ignored); returns how
/// many were added and how many were already there.
pub(crate) async fn import_user(
    store: &dyn MemoryStore,
    user_id: &str,
    file: &MemoryFile,
) -> Result<(usize, usize), StoreError> {
    let (mut added, mut skipped) = (0, 0);
    for m in &file.memories {
        let owner = MemoryScope { user_id: user_id.to_string(), scope: m.scope.clone() };
        let existing = store.memory_list(&owner, usize::MAX >> 1).await?;
        if existing.iter().any(|e| e.text == m.text) {
            skipped += 1;
            continue;
        }
        store.memory_add(&owner, &m.text, m.source.as_deref().or(Some("import"))).await?;
        added += 1;
    }
    Ok((added, skipped))
}
