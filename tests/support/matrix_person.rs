//! People on Matrix for the tests: each a matrix-sdk client of their own (encrypting, with its
//! own store) on the test's Synapse, who keeps every room event they have seen, decrypted, and
//! creates rooms, speaks and reacts as a person's app would.
//!
//! It must never reach into Butler: it only speaks Matrix.

use crate::support::synapse::Synapse;
use matrix_sdk::config::SyncSettings;
use matrix_sdk::ruma::api::client::room::create_room::v3::{Request as CreateRoom, RoomPreset};
use matrix_sdk::ruma::events::room::encryption::RoomEncryptionEventContent;
use matrix_sdk::ruma::events::InitialStateEvent;
use matrix_sdk::ruma::{OwnedRoomId, OwnedUserId};
use matrix_sdk::Client;
use serde_json::Value;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A person with a Matrix client of their own (encrypting, with its own store), who keeps every
/// room event they have seen, decrypted.
pub struct Person {
    pub client: Client,
    pub user_id: String,
    seen: Mutex<Vec<Seen>>,
    _dir: tempfile::TempDir,
}

/// A room event as the person's client saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub room: String,
    pub json: Value,
    /// It arrived encrypted and was decrypted.
    pub encrypted: bool,
}

impl Seen {
    pub fn sender(&self) -> &str {
        self.json["sender"].as_str().unwrap_or_default()
    }

    pub fn kind(&self) -> &str {
        self.json["type"].as_str().unwrap_or_default()
    }

    pub fn body(&self) -> &str {
        self.json["content"]["body"].as_str().unwrap_or_default()
    }

    pub fn id(&self) -> &str {
        self.json["event_id"].as_str().unwrap_or_default()
    }

    /// A message's shown text: the newest `m.new_content` of its edits is applied by the caller.
    pub fn relates(&self) -> &Value {
        &self.json["content"]["m.relates_to"]
    }
}

impl Person {
    pub async fn register(hs: &Synapse, local: &str) -> Self {
        let password = format!("{local}-pw");
        let user_id = hs.register(local, &password).await;
        let dir = tempfile::tempdir().unwrap();
        let client = Client::builder().homeserver_url(hs.url()).sqlite_store(dir.path(), None).build().await.unwrap();
        client.matrix_auth().login_username(&user_id, &password).initial_device_display_name(local).await.unwrap();
        let me = Self { client, user_id, seen: Mutex::new(Vec::new()), _dir: dir };
        me.sync().await;
        me
    }

    /// One sync (a short long poll), keeping what arrived.
    pub async fn sync(&self) {
        let response =
            self.client.sync_once(SyncSettings::default().timeout(Duration::from_millis(500))).await.unwrap();
        let mut seen = self.seen.lock().unwrap();
        for (room, update) in response.rooms.joined {
            for event in update.timeline.events {
                let encrypted = event.encryption_info().is_some();
                let json: Value = serde_json::from_str(event.raw().json().get()).unwrap();
                seen.push(Seen { room: room.to_string(), json, encrypted });
            }
        }
    }

    /// Syncs until `pred` holds over everything seen in `room` (panics after `secs`).
    pub async fn wait(&self, room: &OwnedRoomId, secs: u64, what: &str, pred: impl Fn(&[Seen]) -> bool) -> Vec<Seen> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let now = self.in_room(room);
            if pred(&now) {
                return now;
            }
            assert!(Instant::now() < deadline, "{}: no {what} in {secs} s; seen: {now:#?}", self.user_id);
            self.sync().await;
        }
    }

    /// Everything seen in `room`.
    pub fn in_room(&self, room: &OwnedRoomId) -> Vec<Seen> {
        self.seen.lock().unwrap().iter().filter(|s| s.room == room.as_str()).cloned().collect()
    }

    /// Messages from `sender` in `room` that are not edits.
    pub fn messages_from(&self, room: &OwnedRoomId, sender: &str) -> Vec<Seen> {
        self.in_room(room)
            .into_iter()
            .filter(|s| s.sender() == sender && s.kind() == "m.room.message" && s.relates()["rel_type"] != "m.replace")
            .collect()
    }

    /// A room with `invite`d people, encrypted or not, direct or not.
    pub async fn create_room(&self, invite: &[&str], encrypted: bool, direct: bool) -> OwnedRoomId {
        let mut request = CreateRoom::new();
        request.invite = invite.iter().map(|u| OwnedUserId::try_from(*u).unwrap()).collect();
        request.is_direct = direct;
        request.preset = Some(RoomPreset::TrustedPrivateChat);
        if encrypted {
            let content = RoomEncryptionEventContent::with_recommended_defaults();
            request.initial_state = vec![InitialStateEvent::with_empty_state_key(content).to_raw_any()];
        }
        let room = self.client.create_room(request).await.unwrap();
        room.room_id().to_owned()
    }

    /// Syncs until `user` has joined `room` (or left it: `joined` false).
    pub async fn wait_member(&self, room: &OwnedRoomId, user: &str, joined: bool, secs: u64) {
        let what = if joined { "join" } else { "leave" };
        let want = if joined { "join" } else { "leave" };
        self.wait(room, secs, &format!("{user}'s {what}"), |seen| {
            seen.iter().any(|s| {
                s.kind() == "m.room.member" && s.json["state_key"] == user && s.json["content"]["membership"] == want
            })
        })
        .await;
    }

    /// Sends a text (with `extra` merged into the content); its event id.
    pub async fn say(&self, room: &OwnedRoomId, body: &str, extra: Value) -> String {
        let mut content = serde_json::json!({"msgtype": "m.text", "body": body});
        if let (Some(c), Some(e)) = (content.as_object_mut(), extra.as_object()) {
            c.extend(e.clone());
        }
        let r = self.client.get_room(room).expect("a room the person is in");
        r.send_raw("m.room.message", content).await.unwrap().response.event_id.to_string()
    }

    /// Reacts to `event_id` with `key`.
    pub async fn react(&self, room: &OwnedRoomId, event_id: &str, key: &str) {
        let content =
            serde_json::json!({"m.relates_to": {"rel_type": "m.annotation", "event_id": event_id, "key": key}});
        self.client.get_room(room).unwrap().send_raw("m.reaction", content).await.unwrap();
    }
}
