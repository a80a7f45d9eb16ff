//! The sync loop: `/sync` long polls (30 s) until Butler stops, reconnecting with backoff
//! (0.5 s doubling to 30 s).
//!
//! Per response: invites are answered (accepted from allowed people, declined otherwise), every
//! room event is handed to the ingress (again and again while it cannot store it) and each
//! room's newest stored message gets a read receipt; only then is the position saved with the
//! ingress ([`Position`]: the sync token, the device it belongs to, the newest event handled).
//! A crash before the save syncs the same events again, which the ingress recognises; nothing
//! after the save is lost.
//!
//! A sync token also carries the device's place in its stream of to-device messages (the room
//! keys), so it is only ever used by the device that made it. Another replica taking over (its
//! own device) starts with a full sync and catches up on each room by its history back to the
//! newest event the last reader handled (`catchup`); so does any room whose timeline a sync
//! cut short (more happened while Butler was away than one sync carries). The very first sync (no position at all)
//! takes no timeline events: that is history from before Butler. A message Butler cannot
//! decrypt gets a short notice asking to send it again.
//!
//! It must never log a message's text, nor save a position before the events before it are
//! stored.

use crate::normalize::{self, Me, RoomInfo};
use crate::{errors, MatrixChannel};
use butler_channel::{accept_until_stored, Accepted, Backoff, ChannelError, EventBody, Ingress, IngressError};
use matrix_sdk::config::{SyncSettings, SyncToken};
use matrix_sdk::ruma::api::client::filter::FilterDefinition;
use matrix_sdk::ruma::api::client::receipt::create_receipt::v3::ReceiptType;
use matrix_sdk::ruma::api::client::sync::sync_events::v3::Filter;
use matrix_sdk::ruma::events::receipt::ReceiptThread;
use matrix_sdk::ruma::OwnedEventId;
use matrix_sdk::sync::SyncResponse;
use matrix_sdk::{Client, Room, RoomMemberships};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long one `/sync` may wait for news on the homeserver.
const LONG_POLL: Duration = Duration::from_secs(30);
/// Undecryptable messages older than this get no notice (history from before Butler joined).
const UTD_NOTICE_AGE_MS: i64 = 5 * 60 * 1000;

/// The name of the read position for `user_id` (changing accounts starts afresh).
pub(crate) fn cursor_name(user_id: &str) -> String {
    format!("matrix:{user_id}")
}

impl MatrixChannel {
    pub(crate) async fn receive(
        &self,
        ingress: Arc<dyn Ingress>,
        cancel: CancellationToken,
    ) -> Result<(), ChannelError> {
        let mut backoff = Backoff::new(FIRST_BACKOFF, MAX_BACKOFF);
        backoff.repeat("matrix", &cancel, || self.sync_until_stopped(&*ingress, &cancel)).await;
        Ok(())
    }

    /// Syncs until an error or Butler stops; `Ok(true)` when at least one sync succeeded.
    async fn sync_until_stopped(
        &self,
        ingress: &dyn Ingress,
        cancel: &CancellationToken,
    ) -> Result<bool, ChannelError> {
        let client = self.client().await?;
        let me = Me {
            user_id: self.settings.user_id.clone(),
            display_name: client.account().get_display_name().await.ok().flatten(),
        };
        let device = client.device_id().map(|d| d.to_string()).unwrap_or_default();
        let name = cursor_name(&self.settings.user_id);
        let saved = ingress.cursor(&name).await.map_err(unavailable)?.and_then(|s| Position::parse(&s));
        // Our own token (a restart), else a full sync (a takeover, or the very first start).
        let (mut token, mut mode) = match &saved {
            Some(p) if p.device == device => (Some(p.token.clone()), Mode::Live),
            Some(_) => (None, Mode::CatchUp),
            None => (None, Mode::Skip),
        };
        let mut newest_ms = saved.as_ref().map(|p| p.newest_ms).unwrap_or(0);
        tracing::info!(channel = "matrix", ?mode, "syncing with the homeserver");
        let mut synced = false;
        loop {
            let wait = if mode == Mode::Live { LONG_POLL } else { Duration::ZERO };
            let mut settings = SyncSettings::default().timeout(wait).filter(filter());
            // Our own position, else a full sync: every room with its newest events (the history
            // before them is read where needed), never the SDK's own place, which a send may
            // have moved past events nobody handled.
            settings = settings.token(match &token {
                Some(token) => SyncToken::Specific(token.clone()),
                None => SyncToken::NoToken,
            });
            let known = sdk_token(client).await;
            let response = tokio::select! {
                _ = cancel.cancelled() => return Ok(synced),
                r = client.sync_once(settings) => r.map_err(errors::sdk)?,
            };
            // The SDK drops a response whose end it has reached before (its own sync at start,
            // a send's catch-up, or a crash between its save and ours): what it carried is read
            // from the rooms' history instead.
            let next = response.next_batch.as_str();
            let replayed = known.as_deref() == Some(next) && token.as_deref() != Some(next);
            if replayed {
                tracing::info!(channel = "matrix", "a sync the SDK had seen; reading the rooms' history");
            }
            self.answer_invites(client).await;
            let rooms = room_events(client, &response, replayed, newest_ms).await;
            match self.deliver(rooms, ingress, &me, (mode, newest_ms), cancel).await {
                Some(newest) => newest_ms = newest_ms.max(newest),
                None => return Ok(synced),
            }
            let position = Position { token: response.next_batch.clone(), device: device.clone(), newest_ms };
            if !save(ingress, &name, &position.to_string(), cancel).await {
                return Ok(synced);
            }
            token = Some(response.next_batch);
            mode = Mode::Live;
            synced = true;
        }
    }

    /// Answers every pending invite (as the SDK knows them: one it took in a sync of its own
    /// too, and one whose answer failed before).
    async fn answer_invites(&self, client: &Client) {
        for room in client.invited_rooms() {
            let room_id = room.room_id().to_owned();
            let inviter = match room.invite_details().await {
                Ok(invite) => invite.inviter_id.to_string(),
                Err(e) => {
                    tracing::warn!(channel = "matrix", room = %room_id, error = %e, "an invite without its details");
                    continue;
                }
            };
            let (accept, result) = if self.settings.may_invite(&inviter) {
                (true, room.join().await)
            } else {
                (false, room.leave().await)
            };
            match result {
                Ok(()) => tracing::info!(channel = "matrix", room = %room_id, inviter, accept, "invite answered"),
                Err(e) => tracing::warn!(channel = "matrix", room = %room_id, error = %e, "could not answer an invite"),
            }
        }
    }

    /// Hands each room's events to the ingress: none in `Skip` mode; in `CatchUp`, only events
    /// from `since_ms` (the newest handled before) on. The newest event's time, or `None` when
    /// Butler stopped first.
    async fn deliver(
        &self,
        rooms: Vec<(Room, Vec<Value>)>,
        ingress: &dyn Ingress,
        me: &Me,
        (mode, since_ms): (Mode, i64),
        cancel: &CancellationToken,
    ) -> Option<i64> {
        if mode == Mode::Skip {
            // What is there is history from before Butler: a later takeover starts from now.
            return Some(butler_channel::now_ms());
        }
        let mut newest_ms = 0;
        for (room, mut events) in rooms {
            let info = RoomInfo { id: room.room_id().to_string(), direct: direct(&room).await };
            if mode == Mode::CatchUp {
                events.retain(|e| {
                    e["origin_server_ts"].as_i64().unwrap_or(i64::MAX) >= since_ms - crate::catchup::MARGIN_MS
                });
            }
            let mut newest: Option<OwnedEventId> = None;
            for raw in &events {
                newest_ms = newest_ms.max(raw["origin_server_ts"].as_i64().unwrap_or(0));
                let event = match normalize::event(raw, &info, me) {
                    Ok(event) => event,
                    Err(why) => {
                        if raw["type"] == "m.room.encrypted" && raw["sender"].as_str() != Some(me.user_id.as_str()) {
                            self.undecryptable(&room, raw).await;
                        }
                        tracing::debug!(channel = "matrix", why, "not an event");
                        continue;
                    }
                };
                match accept_until_stored("matrix", ingress, &event, cancel).await {
                    Some(Accepted::New) if matches!(event.body, EventBody::Message { .. }) => {
                        newest = event.message_id.as_deref().and_then(|id| OwnedEventId::try_from(id).ok());
                    }
                    Some(_) => {}
                    None => return None,
                }
            }
            if let Some(event_id) = newest {
                if let Err(e) = room.send_single_receipt(ReceiptType::Read, ReceiptThread::Unthreaded, event_id).await {
                    tracing::debug!(channel = "matrix", error = %e, "read receipt not sent");
                }
            }
        }
        Some(newest_ms)
    }

    /// A recent message Butler cannot read gets a notice (once: the notice's transaction id is
    /// the event's).
    async fn undecryptable(&self, room: &Room, raw: &Value) {
        // Counted with the updates no channel could read (`/metrics`).
        butler_channel::count_unreadable(crate::CHANNEL);
        let age = butler_channel::now_ms() - raw["origin_server_ts"].as_i64().unwrap_or(0);
        let Some(event_id) = raw["event_id"].as_str().filter(|_| age < UTD_NOTICE_AGE_MS) else { return };
        tracing::warn!(channel = "matrix", room = %room.room_id(), event = event_id, "a message Butler cannot decrypt");
        let content = json!({
            "msgtype": "m.notice",
            "body": "I could not decrypt that message (its key has not reached me). Please send it again.",
            "m.relates_to": {"m.in_reply_to": {"event_id": event_id}},
        });
        let mut send = room.send_raw("m.room.message", content);
        let txn = crate::send::txn_id(Some(event_id), "utd");
        if let Some(txn) = &txn {
            send = send.with_transaction_id(txn);
        }
        if let Err(e) = send.await {
            tracing::debug!(channel = "matrix", error = %e, "notice not sent");
        }
    }
}

/// Each joined room with the events a sync brought: its timeline, and where the timeline was cut
/// short (`limited`: more happened than one sync carries) the history before it back to
/// `since_ms`; when the SDK dropped the sync as `replayed`, every joined room's history back to
/// `since_ms` instead. Each event once, oldest first.
async fn room_events(
    client: &Client,
    response: &SyncResponse,
    replayed: bool,
    since_ms: i64,
) -> Vec<(Room, Vec<Value>)> {
    let mut rooms = Vec::new();
    if replayed {
        for room in client.joined_rooms() {
            let events = match since_ms {
                0 => Vec::new(),
                _ => crate::catchup::history(&room, Some(&response.next_batch), since_ms).await,
            };
            rooms.push((room, events));
        }
        return rooms;
    }
    for (room_id, update) in &response.rooms.joined {
        let Some(room) = client.get_room(room_id) else { continue };
        let mut events: Vec<Value> = Vec::new();
        if update.timeline.limited && since_ms > 0 {
            events = crate::catchup::history(&room, update.timeline.prev_batch.as_deref(), since_ms).await;
        }
        events.extend(update.timeline.events.iter().filter_map(|e| serde_json::from_str(e.raw().json().get()).ok()));
        // History and timeline may overlap.
        let mut seen = std::collections::HashSet::new();
        events.retain(|e| seen.insert(e["event_id"].as_str().unwrap_or_default().to_string()));
        rooms.push((room, events));
    }
    rooms
}

/// The sync token the SDK last took in (it drops a response that ends there).
async fn sdk_token(client: &Client) -> Option<String> {
    use matrix_sdk::store::StateStoreDataKey;
    client
        .state_store()
        .get_kv_data(StateStoreDataKey::SyncToken)
        .await
        .ok()
        .flatten()
        .and_then(|v| v.into_sync_token())
}

/// A room of Butler and one person (joined or invited), by its members as the store knows them
/// (the room summary's counts are not always sent).
async fn direct(room: &Room) -> bool {
    match room.members_no_sync(RoomMemberships::ACTIVE).await {
        Ok(members) if !members.is_empty() => members.len() <= 2,
        _ => room.active_members_count() <= 2,
    }
}

/// Up to 50 events per room and sync (the homeserver's default is 10), so a busy room rarely
/// needs its history read.
fn filter() -> Filter {
    let mut definition = FilterDefinition::default();
    definition.room.timeline.limit = Some(50u32.into());
    Filter::FilterDefinition(definition)
}

/// How a sync's timeline is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Every event (our own token: nothing before it is new).
    Live,
    /// No position at all: the timeline is history from before Butler.
    Skip,
    /// Another device read before: the events from the newest it handled on (the rooms'
    /// history too).
    CatchUp,
}

/// The saved read position: a sync token, the device whose it is, and the newest event handled.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Position {
    token: String,
    device: String,
    newest_ms: i64,
}

impl Position {
    fn parse(s: &str) -> Option<Self> {
        serde_json::from_str(s).ok()
    }
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&serde_json::to_string(self).unwrap_or_default())
    }
}

fn unavailable(e: IngressError) -> ChannelError {
    ChannelError::Transient(e.to_string())
}

/// Saves the read position until it is stored; `false` when Butler stopped first.
async fn save(ingress: &dyn Ingress, name: &str, position: &str, cancel: &CancellationToken) -> bool {
    let mut wait = Duration::from_millis(200);
    loop {
        match ingress.save_cursor(name, position).await {
            Ok(()) => return true,
            Err(e) => tracing::warn!(channel = "matrix", error = %e, "cannot save the sync position yet; retrying"),
        }
        tokio::select! {
            _ = cancel.cancelled() => return false,
            _ = tokio::time::sleep(wait) => {}
        }
        wait = (wait * 2).min(Duration::from_secs(10));
    }
}
