//! Points 5-7 beyond plain rooms: streaming by editing one message (`m.replace`); approvals by
//! Butler's preset reactions (only the approver's counts) and by a numbered reply; files both
//! ways (an encrypted photo reaches the model, Butler's file arrives encrypted); `butler doctor`.
//! Restarts are tested with real processes (tests/process/matrix.rs): matrix-sdk's client keeps
//! tasks and its store open for the life of the process, so a second Butler in the same process
//! on the same store is not what a restart is.

use crate::support::fake_llm::Reply;
use crate::support::payloads::{out_file, pdf, png};
use crate::support::touch::Touch;
use crate::{matrix, settle, Mx, Seen};
use butler::channel::{Channel, ConversationRef, Outbound};
use serde_json::json;
use std::time::Duration;

/// The text a message shows after its edits.
fn shown(seen: &[Seen], id: &str) -> String {
    let mut edits = seen.iter().filter(|e| e.relates()["rel_type"] == "m.replace" && e.relates()["event_id"] == id);
    match edits.next_back() {
        Some(edit) => edit.json["content"]["m.new_content"]["body"].as_str().unwrap_or_default().to_string(),
        None => seen.iter().find(|e| e.id() == id).map(|e| e.body().to_string()).unwrap_or_default(),
    }
}

#[tokio::test]
async fn a_streamed_answer_is_one_message_edited_in_place() {
    let mx = Mx::start().await;
    let words: Vec<String> = (0..30).map(|i| format!("w{i} ")).collect();
    mx.llm.on("stream", Reply::chunks(words.clone()).chunk_delay(Duration::from_millis(200)));
    let room = mx.alice_dm().await;
    mx.alice.say(&room, "stream please", json!({})).await;
    let want = words.concat().trim_end().to_string();
    let seen = mx
        .alice
        .wait(&room, 90, "the final text", |s| {
            let first = s.iter().find(|e| e.sender() == mx.butler && e.kind() == "m.room.message");
            first.is_some_and(|f| shown(s, f.id()) == want)
        })
        .await;
    let messages = mx.alice.messages_from(&room, &mx.butler);
    assert_eq!(messages.len(), 1, "one message, edited: {messages:#?}");
    let edits: Vec<&Seen> = seen.iter().filter(|e| e.relates()["rel_type"] == "m.replace").collect();
    assert!(!edits.is_empty(), "the draft was edited in place");
    assert!(edits.iter().all(|e| e.encrypted && e.sender() == mx.butler));
    mx.stop().await;
}

/// Waits until Butler's three reactions are under `request` (as a person sees them before
/// answering).
async fn reactions_shown(mx: &Mx, room: &matrix_sdk::ruma::OwnedRoomId, request: &str) -> Vec<Seen> {
    mx.alice
        .wait(room, 30, "Butler's three reactions", |s| {
            let reactions = s.iter().filter(|e| e.kind() == "m.reaction" && e.sender() == mx.butler);
            reactions.filter(|e| e.relates()["event_id"] == request).count() == 3
        })
        .await
}

#[tokio::test]
async fn a_request_is_answered_by_the_approvers_reaction_or_number_and_no_one_elses() {
    let tool = Touch::new();
    let mx = Mx::start_with(vec![tool.clone()]).await;
    mx.llm.on("lamp", Reply::tool_call("touch", json!({"name": "lamp"})));
    mx.llm.on("lamp", Reply::text("lamp done"));
    mx.llm.on("door", Reply::tool_call("touch", json!({"name": "door"})));
    mx.llm.on("door", Reply::text("door left alone"));
    let room = mx.alice.create_room(&[&mx.butler, &mx.bob.user_id], true, false).await;
    mx.bob.sync().await;
    mx.bob.client.join_room_by_id(&room).await.unwrap();
    mx.alice.wait_member(&room, &mx.butler, true, 30).await;
    mx.alice.wait_member(&room, &mx.bob.user_id, true, 30).await;
    let mention = json!({"m.mentions": {"user_ids": [mx.butler]}});

    mx.alice.say(&room, "touch the lamp", mention.clone()).await;
    let is_request = |e: &Seen| e.sender() == mx.butler && e.body().contains("Reply to this message with a number");
    let seen = mx.alice.wait(&room, 60, "the request", |s| s.iter().any(is_request)).await;
    let request = seen.iter().find(|e| is_request(e)).unwrap().clone();
    assert!(request.body().contains("react ✅ once · 🔁 always · ❌ deny"), "{}", request.body());
    let seen = reactions_shown(&mx, &room, request.id()).await;
    let keys: Vec<&str> = seen
        .iter()
        .filter(|e| e.kind() == "m.reaction" && e.sender() == mx.butler)
        .filter_map(|e| e.relates()["key"].as_str())
        .collect();
    assert_eq!(keys, ["✅", "🔁", "❌"]);

    mx.bob.sync().await;
    mx.bob.react(&room, request.id(), "✅").await;
    settle().await;
    settle().await;
    assert_eq!(tool.runs(), 0, "not Bob's to decide");
    mx.alice.react(&room, request.id(), "✅").await;
    mx.alice.wait(&room, 60, "the answer", |s| s.iter().any(|e| e.body() == "lamp done")).await;
    assert_eq!(tool.runs(), 1);

    // The next request, answered by a numbered reply: 3 is Deny.
    mx.alice.say(&room, "touch the door", mention).await;
    let seen =
        mx.alice.wait(&room, 60, "the second request", |s| s.iter().filter(|e| is_request(e)).count() == 2).await;
    let second = seen.iter().filter(|e| is_request(e)).nth(1).unwrap().clone();
    reactions_shown(&mx, &room, second.id()).await;
    // As a client writes a reply: Butler named in `m.mentions`, the quote before the answer.
    let reply =
        json!({"m.relates_to": {"m.in_reply_to": {"event_id": second.id()}}, "m.mentions": {"user_ids": [mx.butler]}});
    mx.alice.say(&room, &format!("> <{}> the request\n\n3", mx.butler), reply).await;
    mx.alice.wait(&room, 60, "the answer", |s| s.iter().any(|e| e.body() == "door left alone")).await;
    assert_eq!(tool.runs(), 1, "denied: the tool did not run");

    // 🔁 approves for the session: the next call runs without asking.
    for n in 0..2 {
        mx.llm.on("window", Reply::tool_call("touch", json!({"name": format!("window {n}")})));
        mx.llm.on("window", Reply::text(&format!("window {n} done")));
    }
    mx.alice.say(&room, "touch the window", json!({"m.mentions": {"user_ids": [mx.butler]}})).await;
    let seen = mx.alice.wait(&room, 60, "the third request", |s| s.iter().filter(|e| is_request(e)).count() == 3).await;
    let third = seen.iter().filter(|e| is_request(e)).nth(2).unwrap().clone();
    reactions_shown(&mx, &room, third.id()).await;
    mx.alice.react(&room, third.id(), "🔁").await;
    mx.alice.wait(&room, 60, "the answer", |s| s.iter().any(|e| e.body() == "window 0 done")).await;
    mx.alice.say(&room, "touch the window again", json!({"m.mentions": {"user_ids": [mx.butler]}})).await;
    let seen = mx.alice.wait(&room, 60, "the answer", |s| s.iter().any(|e| e.body() == "window 1 done")).await;
    assert_eq!(seen.iter().filter(|e| is_request(e)).count(), 3, "no fourth request");
    assert_eq!(tool.runs(), 3);
    mx.stop().await;
}

#[tokio::test]
async fn files_go_both_ways_encrypted() {
    let mx = Mx::start().await;
    mx.llm.on("picture", Reply::text("a gradient"));
    let room = mx.alice_dm().await;
    let r = mx.alice.client.get_room(&room).unwrap();
    let caption = matrix_sdk::ruma::events::room::message::TextMessageEventContent::plain("what is in this picture");
    let config = matrix_sdk::attachment::AttachmentConfig::new().caption(Some(caption));
    r.send_attachment("x.png", &mime::IMAGE_PNG, png(64, 48), config).await.unwrap();
    mx.alice.wait(&room, 60, "the answer", |s| s.iter().any(|e| e.body() == "a gradient")).await;
    assert_eq!(mx.llm.last_request().unwrap().images().len(), 1, "the photo was given to the model");

    // Butler's own file (from a second device of Butler's: its own store).
    let dir = tempfile::tempdir().unwrap();
    let cfg = matrix(&mx.hs, dir.path(), &[&mx.alice.user_id]);
    let section: butler::channels::MatrixConfig = cfg;
    let settings = butler_matrix::Settings {
        homeserver: section.homeserver.clone(),
        user_id: section.user_id.clone(),
        login: butler_matrix::Login::Password(crate::BUTLER_PASSWORD.into()),
        device_id: None,
        store_path: dir.path().join("second"),
        allowed: vec![],
    };
    let channel = butler_matrix::MatrixChannel::new(settings).unwrap();
    let report = pdf("Q3");
    let file = out_file(dir.path(), "report.pdf", "application/pdf", &report, false);
    let msg =
        Outbound { file: Some(file), ..Outbound::text(ConversationRef::new("matrix", room.as_str()), "The report") };
    let sent = channel.send(&msg).await.unwrap();
    let seen = mx.alice.wait(&room, 60, "the file", |s| s.iter().any(|e| e.id() == sent.id)).await;
    let got = seen.iter().find(|e| e.id() == sent.id).unwrap();
    assert!(got.encrypted);
    assert_eq!(got.json["content"]["msgtype"], "m.file");
    assert_eq!(got.json["content"]["filename"], "report.pdf");
    assert_eq!(got.body(), "The report", "the text is the caption");
    assert!(got.json["content"]["file"]["url"].as_str().unwrap().starts_with("mxc://"), "an encrypted upload");
    let source: matrix_sdk::ruma::events::room::MediaSource =
        serde_json::from_value(json!({"file": got.json["content"]["file"]})).unwrap();
    let request = matrix_sdk::media::MediaRequestParameters { source, format: matrix_sdk::media::MediaFormat::File };
    let bytes = mx.alice.client.media().get_media_content(&request, false).await.unwrap();
    assert_eq!(bytes, report, "Alice decrypts the same bytes");
    mx.stop().await;
}

#[tokio::test]
async fn doctor_checks_the_homeserver_and_the_login() {
    let mx = Mx::start().await;
    let dir = tempfile::tempdir().unwrap();
    let good = matrix(&mx.hs, dir.path(), &[&mx.alice.user_id]);
    let ok = crate::support::app::doctor_channel("matrix", good.to_table()).await.unwrap();
    assert!(ok.contains("logged in as @butler:hs.test") && ok.contains("spec"), "{ok}");
    let other = tempfile::tempdir().unwrap();
    let wrong = butler::channels::MatrixConfig {
        password: butler::config::Secret::new("not-the-password"),
        ..matrix(&mx.hs, other.path(), &[])
    };
    let (problem, fix) = crate::support::app::doctor_channel("matrix", wrong.to_table()).await.unwrap_err();
    assert!(problem.contains("refused") && fix.contains("password"), "{problem} / {fix}");
    assert!(!problem.contains("not-the-password") && !fix.contains("not-the-password"));
    let gone =
        butler::channels::MatrixConfig { homeserver: "http://127.0.0.1:9".into(), ..matrix(&mx.hs, other.path(), &[]) };
    let (problem, fix) = crate::support::app::doctor_channel("matrix", gone.to_table()).await.unwrap_err();
    assert!(problem.contains("cannot reach") && fix.contains("homeserver"), "{problem} / {fix}");
    mx.stop().await;
}
