//! A room's recent history (`/messages`, backwards from the sync's `prev_batch`) back to the
//! newest event handled before: read when a sync cut a room's timeline short, or when a replica
//! takes over the sync from another device, so nothing between two reads is missed; events
//! seen twice are recognised by the ingress.
//!
//! It must never read more than [`MAX_PAGES`] pages of a room.

use matrix_sdk::room::MessagesOptions;
use matrix_sdk::Room;
use serde_json::Value;

/// Events this much older than the last reader's newest are read again (clocks and ordering
/// between servers differ); the ingress drops the ones already stored.
pub(crate) const MARGIN_MS: i64 = 60_000;
/// At most this many pages (of 50) per room.
const MAX_PAGES: usize = 20;

/// The events before `prev_batch` down to `since_ms` (minus the margin), oldest first.
pub(crate) async fn history(room: &Room, prev_batch: Option<&str>, since_ms: i64) -> Vec<Value> {
    let mut from = prev_batch.map(str::to_string);
    let mut older: Vec<Value> = Vec::new();
    for _ in 0..MAX_PAGES {
        let Some(token) = from.take() else { break };
        let mut options = MessagesOptions::backward().from(token.as_str());
        options.limit = 50u32.into();
        let page = match room.messages(options).await {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!(channel = "matrix", room = %room.room_id(), error = %e, "could not read the room's history");
                break;
            }
        };
        let mut reached = page.chunk.is_empty();
        for event in &page.chunk {
            let Ok(raw) = serde_json::from_str::<Value>(event.raw().json().get()) else { continue };
            if raw["origin_server_ts"].as_i64().unwrap_or(0) < since_ms - MARGIN_MS {
                reached = true;
                break;
            }
            older.push(raw);
        }
        if reached {
            break;
        }
        from = page.end;
    }
    older.reverse();
    older
}
