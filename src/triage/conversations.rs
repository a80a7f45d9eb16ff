//! `/sessions` and `/resume N`: a person's direct conversations on every channel (and every
//! account linked to them), numbered newest first, and taking one of them up again in the
//! current chat (the session actor does it, with a `JobKind::Reopen`).
//!
//! It only reads and decides: it must never list another person's conversations or a group's,
//! never show the list inside a group, and never pick a conversation it cannot resume.

use crate::store::{SessionSummary, StoreError, TranscriptStore, UserRow};
use butler_channel::{ConversationKind, InboundEvent};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use std::sync::Arc;

/// How many conversations `/sessions` lists (and `/resume N` picks from).
pub(super) const SHOWN: usize = 10;
/// The longest title shown, in characters.
const TITLE_CHARS: usize = 60;

const PRIVATE_ONLY: &str = "Earlier conversations are private: send /sessions or /resume N to me in a private chat.";

/// What `/resume N` comes to.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Pick {
    /// Reopen that session here; `label` names it in the answer.
    Reopen { session_id: String, label: String },
    /// Nothing to do but answer.
    Answer(String),
}

/// The conversation list of `/sessions` and `/resume`.
#[derive(Clone)]
pub(super) struct Conversations {
    pub(super) store: Arc<dyn TranscriptStore>,
}

impl Conversations {
    /// `/sessions`: the person's conversations, newest first, numbered as `/resume` takes them.
    pub(super) async fn list(&self, event: &InboundEvent, user: &UserRow, key: &str) -> Result<String, StoreError> {
        if event.kind == ConversationKind::Group {
            return Ok(PRIVATE_ONLY.to_string());
        }
        let rows = self.store.sessions_recent(&user.id, SHOWN).await?;
        Ok(render(&rows, key, zone(user)))
    }

    /// `/resume N`: the Nth conversation of `/sessions`, when it can be taken up here.
    pub(super) async fn pick(
        &self,
        n: Option<usize>,
        event: &InboundEvent,
        user: &UserRow,
        key: &str,
    ) -> Result<Pick, StoreError> {
        if event.kind == ConversationKind::Group {
            return Ok(Pick::Answer(PRIVATE_ONLY.to_string()));
        }
        let Some(n) = n else {
            return Ok(Pick::Answer("Say which one: `/resume N`, with a number /sessions shows.".to_string()));
        };
        let rows = self.store.sessions_recent(&user.id, SHOWN).await?;
        Ok(choose(&rows, n, key, zone(user)))
    }
}

fn zone(user: &UserRow) -> Tz {
    user.timezone.parse().unwrap_or(chrono_tz::UTC)
}

fn date(ms: i64, tz: Tz) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map_or_else(|| ms.to_string(), |t| t.with_timezone(&tz).format("%Y-%m-%d %H:%M").to_string())
}

/// The start of the first thing the person said, on one line.
fn title(row: &SessionSummary) -> String {
    let text = row.title.as_deref().unwrap_or_default().split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return "(no message of yours)".to_string();
    }
    if text.chars().count() <= TITLE_CHARS {
        return format!("“{text}”");
    }
    format!("“{}…”", text.chars().take(TITLE_CHARS).collect::<String>().trim_end())
}

/// Whether `row` is the conversation of this chat now.
fn is_here(row: &SessionSummary, key: &str) -> bool {
    row.is_open() && row.key == key
}

fn render(rows: &[SessionSummary], key: &str, tz: Tz) -> String {
    if rows.is_empty() {
        return "No conversations yet.".to_string();
    }
    let lines: Vec<String> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let here = if is_here(r, key) { " (this chat)" } else { "" };
            let count = if r.messages == 1 { "1 message".to_string() } else { format!("{} messages", r.messages) };
            format!("{}. {} · {} · {} ({count}){here}", i + 1, date(r.last_ms, tz), r.channel(), title(r))
        })
        .collect();
    format!("Your conversations, newest first:\n{}\n`/resume N` continues one of them here.", lines.join("\n"))
}

fn choose(rows: &[SessionSummary], n: usize, key: &str, tz: Tz) -> Pick {
    let Some(row) = n.checked_sub(1).and_then(|i| rows.get(i)) else {
        return Pick::Answer(format!(
            "There is no conversation {n}: /sessions lists {} (`/resume N` with one of their numbers).",
            rows.len()
        ));
    };
    if is_here(row, key) {
        return Pick::Answer("That is this conversation already.".to_string());
    }
    if row.is_open() {
        return Pick::Answer(format!(
            "That conversation is still open in its own chat ({}): carry on there, or send /new there first and \
             then resume it here.",
            row.channel()
        ));
    }
    let label = format!("the {} conversation of {} ({})", row.channel(), date(row.last_ms, tz), title(row));
    Pick::Reopen { session_id: row.id.clone(), label }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, key: &str, closed: bool, title: Option<&str>) -> SessionSummary {
        SessionSummary {
            id: id.into(),
            key: key.into(),
            conversation: key.trim_start_matches("dm:").rsplit_once(':').map(|(c, _)| c.to_string()).unwrap(),
            created_ms: 1_777_593_600_000,
            updated_ms: 1_777_593_600_000,
            last_ms: 1_777_896_120_000, // 2026-05-04 12:02 UTC
            closed_ms: closed.then_some(1_777_896_120_000),
            messages: 4,
            title: title.map(str::to_string),
        }
    }

    #[test]
    fn the_list_is_numbered_and_marks_this_chat() {
        let rows = [
            row("s2", "dm:web:c:local", false, Some("what colour\nis my bike?")),
            row("s1", "dm:telegram:42:42", true, Some(&"long ".repeat(30))),
            row("s0", "dm:web:c:local", true, None),
        ];
        let text = render(&rows, "dm:web:c:local", "Europe/Berlin".parse().unwrap());
        let lines: Vec<&str> = text.lines().collect();
        let want = [
            "Your conversations, newest first:",
            "1. 2026-05-04 14:02 · web · “what colour is my bike?” (4 messages) (this chat)",
            &format!("2. 2026-05-04 14:02 · telegram · “{}…” (4 messages)", "long ".repeat(12).trim_end()),
            "3. 2026-05-04 14:02 · web · (no message of yours) (4 messages)",
            "`/resume N` continues one of them here.",
        ];
        assert_eq!(lines, want);
        assert_eq!(render(&[], "k", chrono_tz::UTC), "No conversations yet.");
    }

    #[test]
    fn resume_picks_only_what_can_be_taken_up_here() {
        let here = "dm:web:c:local";
        let rows = [
            row("s3", here, false, Some("now")),
            row("s2", "dm:telegram:42:42", false, Some("open elsewhere")),
            row("s1", "dm:telegram:42:42", true, Some("my bike is blue")),
        ];
        let answer = |p: Pick| match p {
            Pick::Answer(t) => t,
            other => panic!("{other:?}"),
        };
        // (N, the answer starts with; None: reopened)
        let cases: &[(usize, Option<&str>)] = &[
            (0, Some("There is no conversation 0: /sessions lists 3")),
            (4, Some("There is no conversation 4")),
            (1, Some("That is this conversation already.")),
            (2, Some("That conversation is still open in its own chat (telegram)")),
            (3, None),
        ];
        for (n, want) in cases {
            let pick = choose(&rows, *n, here, chrono_tz::UTC);
            match want {
                Some(want) => assert!(answer(pick).starts_with(want), "{n}"),
                None => assert_eq!(
                    pick,
                    Pick::Reopen {
                        session_id: "s1".into(),
                        label: "the telegram conversation of 2026-05-04 12:02 (“my bike is blue”)".into()
                    }
                ),
            }
        }
    }
}
