//! Point 5 and 6 in rooms: an encrypted DM from an allowed person is joined and answered in
//! kind (encrypted, Markdown as HTML, the message marked read); invites from others are
//! declined; group rooms need a mention and get replies to the message; a thread is answered
//! in the thread.

use crate::support::fake_llm::Reply;
use crate::{settle, Mx, Person};
use serde_json::json;

#[tokio::test]
async fn an_encrypted_dm_from_an_allowed_person_is_answered_encrypted_as_a_reply() {
    let mx = Mx::start().await;
    mx.llm.on("hello", Reply::text("**Hi** Alice, *welcome*."));
    let room = mx.alice_dm().await;
    let asked = mx.alice.say(&room, "hello there", json!({})).await;
    let seen = mx
        .alice
        .wait(&room, 60, "Butler's answer", |s| {
            s.iter().any(|e| e.sender() == mx.butler && e.kind() == "m.room.message")
        })
        .await;
    let answer = seen.iter().find(|e| e.sender() == mx.butler && e.kind() == "m.room.message").unwrap();
    assert!(answer.encrypted, "the answer was end-to-end encrypted: {answer:?}");
    assert_eq!(answer.body(), "**Hi** Alice, *welcome*.");
    assert_eq!(answer.json["content"]["format"], "org.matrix.custom.html");
    assert_eq!(answer.json["content"]["formatted_body"], "<p><strong>Hi</strong> Alice, <em>welcome</em>.</p>");
    assert!(answer.relates().is_null(), "in a DM the answer simply follows: {:?}", answer.relates());
    let request = mx.llm.last_request().expect("the model was asked");
    assert!(request.last_user_text().contains("hello there"), "the model read the decrypted text");

    // Butler marked Alice's message read.
    let r = mx.alice.client.get_room(&room).unwrap();
    let butler = matrix_sdk::ruma::OwnedUserId::try_from(mx.butler.as_str()).unwrap();
    let mut read = None;
    for _ in 0..40 {
        read = r
            .load_user_receipt(
                matrix_sdk::ruma::events::receipt::ReceiptType::Read,
                matrix_sdk::ruma::events::receipt::ReceiptThread::Unthreaded,
                &butler,
            )
            .await
            .unwrap();
        if read.is_some() {
            break;
        }
        mx.alice.sync().await;
    }
    let (event, _) = read.expect("a read receipt from Butler");
    assert_eq!(event.as_str(), asked, "the receipt is on Alice's message");
    assert_eq!(mx.app.inbox_count().await, 1);
    mx.stop().await;
}

#[tokio::test]
async fn invites_from_people_not_allowed_are_declined() {
    let mx = Mx::start().await;
    let mallory = Person::register(&mx.hs, "mallory").await;
    let room = mallory.create_room(&[&mx.butler], false, true).await;
    mallory.wait_member(&room, &mx.butler, false, 30).await;
    // Bob may talk to Butler but not invite it (only Alice is in `allowed`).
    let room = mx.bob.create_room(&[&mx.butler], false, true).await;
    mx.bob.wait_member(&room, &mx.butler, false, 30).await;
    assert_eq!(mx.app.inbox_count().await, 0, "an invite is never a turn");
    assert_eq!(mx.llm.request_count(), 0);
    mx.stop().await;
}

#[tokio::test]
async fn in_a_group_room_butler_answers_only_when_mentioned() {
    let mx = Mx::start().await;
    mx.llm.on_every("weather", Reply::text("Sunny."));
    let room = mx.alice.create_room(&[&mx.butler, &mx.bob.user_id], true, false).await;
    mx.bob.sync().await;
    mx.bob.client.join_room_by_id(&room).await.unwrap();
    mx.alice.wait_member(&room, &mx.butler, true, 30).await;
    mx.alice.wait_member(&room, &mx.bob.user_id, true, 30).await;

    mx.alice.say(&room, "what is the weather, Bob?", json!({})).await;
    settle().await;
    settle().await;
    assert_eq!(mx.llm.request_count(), 0, "not addressed to Butler");

    let mention = json!({"m.mentions": {"user_ids": [mx.butler]}});
    let asked = mx.bob.say(&room, "weather today?", mention).await;
    let seen = mx
        .bob
        .wait(&room, 60, "the answer", |s| s.iter().any(|e| e.sender() == mx.butler && e.body() == "Sunny."))
        .await;
    let answer = seen.iter().find(|e| e.body() == "Sunny.").unwrap();
    assert!(answer.encrypted);
    assert_eq!(answer.relates()["m.in_reply_to"]["event_id"], asked.as_str());
    assert_eq!(mx.llm.request_count(), 1);

    // A thread under Alice's message is answered in the thread.
    let root = mx.alice.say(&room, "a thread about the weather", json!({})).await;
    let in_thread = json!({"m.mentions": {"user_ids": [mx.butler]},
        "m.relates_to": {"rel_type": "m.thread", "event_id": root, "is_falling_back": true, "m.in_reply_to": {"event_id": root}}});
    mx.alice.say(&room, "weather tomorrow?", in_thread).await;
    let seen = mx
        .alice
        .wait(&room, 60, "the answer in the thread", |s| {
            s.iter().any(|e| e.sender() == mx.butler && e.relates()["rel_type"] == "m.thread")
        })
        .await;
    let threaded = seen.iter().find(|e| e.sender() == mx.butler && e.relates()["rel_type"] == "m.thread").unwrap();
    assert_eq!(threaded.relates()["event_id"], root.as_str());
    mx.stop().await;
}

#[tokio::test]
async fn a_message_butler_cannot_decrypt_gets_a_notice_and_is_counted() {
    let mx = Mx::start().await;
    let room = mx.alice.create_room(&[&mx.butler], false, true).await;
    mx.alice.wait_member(&room, &mx.butler, true, 30).await;
    // What a client sends when its keys never reached Butler's device: a Megolm message of a
    // session Butler does not have.
    let bogus = json!({"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgAEnB4om1u", "session_id": "unknown-session",
                       "sender_key": "Kt0e7ogjfKa0Mt9GlMlAHpGQx0Co7XHeR1Ndqe1YEGo", "device_id": "ALICEDEV"});
    let event_id = {
        let r = mx.alice.client.get_room(&room).unwrap();
        r.send_raw("m.room.encrypted", bogus).await.unwrap().response.event_id.to_string()
    };
    let seen = mx
        .alice
        .wait(&room, 60, "the notice", |s| {
            s.iter().any(|e| e.sender() == mx.butler && e.body().contains("could not decrypt"))
        })
        .await;
    let notice = seen.iter().find(|e| e.sender() == mx.butler && e.body().contains("could not decrypt")).unwrap();
    assert_eq!(notice.json["content"]["msgtype"], "m.notice");
    assert_eq!(notice.relates()["m.in_reply_to"]["event_id"], event_id.as_str());
    assert_eq!(mx.app.inbox_count().await, 0, "nothing to answer");
    assert_eq!(mx.llm.request_count(), 0);
    let metrics = mx.app.http.get(mx.app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    // The counter is the process's (the tests of this binary share it): at least this one.
    let line = metrics.lines().find(|l| l.starts_with("butler_channel_unreadable_updates_total{channel=\"matrix\"}"));
    let n: u64 = line.and_then(|l| l.rsplit(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(n >= 1, "{metrics}");
    mx.stop().await;
}

#[tokio::test]
async fn a_briefing_targeting_a_room_is_delivered_there() {
    let mx = Mx::start().await;
    mx.llm.on("brief-matrix", Reply::text("**Today**: rain"));
    let room = mx.alice_dm().await;
    let (target, owner) = (format!("matrix:{room}"), format!("matrix:{}", mx.alice.user_id));
    crate::support::app::briefing_due(&mx.app.app.store, "morning", "brief-matrix: the day", &target, &owner).await;
    let seen = mx.alice.wait(&room, 60, "the briefing", |s| s.iter().any(|e| e.body() == "**Today**: rain")).await;
    let brief = seen.iter().find(|e| e.body() == "**Today**: rain").unwrap();
    assert!(brief.encrypted && brief.sender() == mx.butler);
    assert_eq!(brief.json["content"]["formatted_body"], "<p><strong>Today</strong>: rain</p>");
    mx.stop().await;
}

/// The SDK drops a sync response that ends where it has been before. Butler's Matrix client
/// syncs on its own too (at start, and before a send on a replica that does not read), and a
/// crash can fall between the SDK's save and Butler's: then Butler's read position is behind
/// the SDK's, and what Alice wrote in between must still be answered, once.
#[tokio::test]
async fn a_message_the_matrix_client_took_in_before_butler_read_it_is_answered_once() {
    let mx = Mx::start().await;
    let room = mx.alice_dm().await;
    mx.alice.say(&room, "first", json!({})).await;
    mx.alice.wait(&room, 60, "the first answer", |s| s.iter().any(|e| e.body() == "echo: first")).await;
    let Mx { mut app, hs, llm, alice, bob, butler } = mx;
    let dir = app._dir.take();
    app.stop().await;

    alice.say(&room, "while away", json!({})).await;
    // Butler's Matrix client (its store, its device) syncs past the message before Butler reads.
    let store = dir.as_ref().unwrap().path().join("matrix");
    let settings = butler_matrix::Settings {
        homeserver: hs.url(),
        user_id: butler.clone(),
        login: butler_matrix::Login::Password(crate::BUTLER_PASSWORD.into()),
        device_id: None,
        store_path: store,
        allowed: vec![],
    };
    let client = butler_matrix::MatrixChannel::new(settings).unwrap();
    client.warm(std::time::Duration::from_secs(30)).await;
    drop(client);

    let app = Mx::app(&hs, &llm, &alice, &bob, dir, vec![]).await;
    let from_butler =
        |s: &[crate::Seen], text: &str| s.iter().filter(|e| e.sender() == butler && e.body() == text).count();
    alice.wait(&room, 60, "the answer after the restart", |s| from_butler(s, "echo: while away") == 1).await;
    settle().await;
    alice.sync().await;
    let seen = alice.in_room(&room);
    assert_eq!(from_butler(&seen, "echo: while away"), 1, "answered once");
    assert_eq!(from_butler(&seen, "echo: first"), 1, "nothing before it again");
    assert_eq!(app.inbox_count().await, 2);
    app.stop().await;
}
