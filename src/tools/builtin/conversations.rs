//! `conversation_search`: what the user and Butler said in earlier conversations, found by
//! keywords, as dated excerpts naming the conversation each came from. In a direct conversation
//! it reads every direct conversation of the user (all their channels and linked accounts);
//! inside a group only that group's. The current session is left out (it is in context).
//!
//! It must never read another person's direct conversations or another group's, and never
//! return tool output (only user and assistant text is searched).

use crate::store::{Role, TranscriptHit, TranscriptScope};
use crate::tools::{parse_args, Tool, ToolCtx, ToolError, ToolSpec};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Deserialize;
use serde_json::{json, Value};

/// Excerpts returned when the model does not say.
const DEFAULT_LIMIT: usize = 8;
/// Excerpts returned at most.
const MAX_LIMIT: usize = 20;

pub struct ConversationSearch(ToolSpec);

impl ConversationSearch {
    pub fn new() -> Self {
        Self(ToolSpec {
            name: "conversation_search".into(),
            description: "Search earlier conversations with the user by keywords (their messages and your \
                          answers, every channel; in a group only this group's). Returns dated excerpts naming \
                          their conversation."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "keywords to look for"},
                    "limit": {"type": "integer", "description": "most excerpts (up to 20)"}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
            // Reads only the user's own conversations: runs without asking.
            read_only: true,
        })
    }
}

impl Default for ConversationSearch {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Deserialize)]
struct Args {
    query: String,
    limit: Option<usize>,
}

/// `ms` in `tz` with `format`.
fn local(ms: i64, tz: Tz, format: &str) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map_or_else(|| ms.to_string(), |t| t.with_timezone(&tz).format(format).to_string())
}

/// One hit as a line: `2026-05-04 14:02 · telegram · conversation started 2026-05-01: user: ...`.
fn line(hit: &TranscriptHit, tz: Tz) -> String {
    let who = match hit.role {
        Role::User => "user",
        Role::Assistant | Role::Tool => "assistant",
    };
    format!(
        "{} · {} · conversation started {}: {who}: {}",
        local(hit.created_ms, tz, "%Y-%m-%d %H:%M"),
        hit.channel(),
        local(hit.session_created_ms, tz, "%Y-%m-%d"),
        hit.content
    )
}

#[async_trait]
impl Tool for ConversationSearch {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn untrusted_output(&self) -> bool {
        true
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        let query = args.query.trim();
        if query.is_empty() {
            return Err(ToolError::InvalidArgs("`query` is empty".into()));
        }
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let within = match ctx.kind {
            butler_channel::ConversationKind::Direct => TranscriptScope::Private,
            butler_channel::ConversationKind::Group => TranscriptScope::Group(ctx.session_key.clone()),
        };
        let hits = ctx
            .store
            .conversation_search(&within, query, Some(&ctx.session_id), limit)
            .await
            .map_err(|e| ToolError::Failed(format!("past conversations are unavailable right now ({e})")))?;
        if hits.is_empty() {
            return Ok("No earlier conversation mentions that.".into());
        }
        let tz: Tz = ctx.user.timezone.parse().unwrap_or(chrono_tz::UTC);
        let lines: Vec<String> = hits.iter().map(|h| format!("- {}", line(h, tz))).collect();
        Ok(format!("From earlier conversations (times in {}), best match first:\n{}", tz.name(), lines.join("\n")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_is_one_dated_line_in_the_zone() {
        let hit = |role, ms| TranscriptHit {
            session_id: "s".into(),
            session_key: "dm:telegram:42:42".into(),
            conversation: "telegram:42".into(),
            seq: 3,
            role,
            content: "my bike is blue".into(),
            created_ms: ms,
            session_created_ms: 1_777_593_600_000, // 2026-05-01 00:00 UTC
        };
        // 2026-05-04 12:02 UTC
        let at = 1_777_896_120_000;
        let cases = [
            (Role::User, "UTC", "2026-05-04 12:02 · telegram · conversation started 2026-05-01: user: my bike is blue"),
            (
                Role::Assistant,
                "Europe/Berlin",
                "2026-05-04 14:02 · telegram · conversation started 2026-05-01: assistant: my bike is blue",
            ),
            (
                Role::User,
                "America/New_York",
                "2026-05-04 08:02 · telegram · conversation started 2026-04-30: user: my bike is blue",
            ),
        ];
        for (role, zone, want) in cases {
            assert_eq!(line(&hit(role, at), zone.parse().unwrap()), want, "{zone}");
        }
    }
}
