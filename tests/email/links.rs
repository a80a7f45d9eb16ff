//! Email point 3's links: a request lists a signed web link per choice (with `[server]
//! public_url` set). Opening one shows a page and answers nothing (mail scanners fetch links);
//! its button answers as the person the mail was for, once; a changed, expired or re-used link,
//! or one made out to someone else, answers nothing.

use crate::support::fake_llm::Reply;
use crate::support::touch::Touch;
use crate::{app_tuned, mail, Rig, ALICE, BOB, BUTLER, PASSWORD};
use base64::Engine;
use butler_channel::{Button, ButtonStyle, ConversationRef};
use serde_json::json;

/// Butler with email and answer links served at its own address.
async fn rig(tool: std::sync::Arc<Touch>) -> Rig {
    let imap = crate::support::dovecot::Dovecot::start(&[(BUTLER, PASSWORD)]).await;
    let smtp = crate::support::smtp_sink::SmtpSink::start().await;
    let llm = crate::support::fake_llm::FakeLlm::start().await;
    let port = crate::support::proc::free_port();
    let app = app_tuned(&imap, &smtp, &llm, None, vec![tool], |cfg| {
        cfg.server.listen = format!("127.0.0.1:{port}");
        cfg.server.public_url = format!("http://127.0.0.1:{port}/");
    })
    .await;
    Rig { app, imap, smtp, llm }
}

/// Alice asks for the lamp; the request mail's links, as (label, address).
async fn request_links(rig: &Rig) -> Vec<(String, String)> {
    rig.llm.on("lamp", Reply::tool_call("touch", json!({"name": "lamp"})));
    rig.llm.on("lamp", Reply::text("lamp done"));
    rig.deliver(&mail(ALICE, true, "a1@example.com", "Lamp", "", "touch the lamp")).await;
    let sent = rig.smtp.wait(20, "the request", |m| m.iter().any(|m| m.data.contains("Approval needed"))).await;
    let text = sent.iter().find(|m| m.data.contains("Approval needed")).unwrap().text();
    assert!(text.contains("Reply with APPROVE or DENY"), "the reply form stays: {text}");
    assert!(text.contains("Or open a link (each works once, and only for you):"), "{text}");
    text.lines()
        .filter_map(|l| l.strip_prefix("- ")?.split_once(": <"))
        .map(|(label, url)| (label.to_string(), url.trim_end_matches('>').to_string()))
        .collect()
}

/// What a link's token says (its payload), to make others like it.
fn claim_of(url: &str) -> serde_json::Value {
    let token = url.rsplit('/').next().unwrap();
    let payload = token.split('.').next().unwrap();
    serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

async fn status(rig: &Rig, post: bool, url: &str) -> (u16, String) {
    let r = if post { rig.app.http.post(url).send().await } else { rig.app.http.get(url).send().await }.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test]
async fn a_request_is_answered_once_by_its_link_and_a_look_answers_nothing() {
    let tool = Touch::new();
    let rig = rig(tool.clone()).await;
    let links = request_links(&rig).await;
    let labels: Vec<&str> = links.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["Approve once", "Always for this session", "Deny"]);
    let (approve, deny) = (&links[0].1, &links[2].1);
    assert!(approve.starts_with(&format!("{}/approve/", rig.app.base)), "{approve}");

    // Opening it (a mail scanner does) shows the request and one button, and answers nothing.
    let (code, page) = status(&rig, false, approve).await;
    assert_eq!(code, 200, "{page}");
    assert!(
        page.contains("touch") && page.contains("<form method=\"post\"><button type=\"submit\">Approve once</button>"),
        "{page}"
    );
    // A changed token, or one choice's payload under another's signature: not valid.
    let mac = |u: &str| u.rsplit('.').next().unwrap().to_string();
    let swapped = format!("{}.{}", deny.rsplit_once('.').unwrap().0, mac(approve));
    let flipped = format!("{}{}", &approve[..approve.len() - 1], if approve.ends_with('0') { "1" } else { "0" });
    for bad in [&swapped, &flipped] {
        for post in [false, true] {
            let (code, body) = status(&rig, post, bad).await;
            assert_eq!(code, 400, "{body}");
            assert!(body.contains("\"invalid_link\""), "{body}");
        }
    }
    crate::support::app::settle().await;
    assert_eq!(tool.runs(), 0, "nothing answered yet");

    // The button: answered as Alice, the turn goes on.
    let (code, page) = status(&rig, true, approve).await;
    assert_eq!(code, 200, "{page}");
    assert!(page.contains("Your answer (Approve once) was taken"), "{page}");
    rig.smtp.wait(20, "the answer", |m| m.iter().any(|m| m.data.contains("lamp done"))).await;
    assert_eq!(tool.runs(), 1);
    // Once: the same link again, or the other choice's, answer nothing more.
    for url in [approve, deny] {
        let (code, body) = status(&rig, true, url).await;
        assert_eq!(code, 409, "{body}");
        assert!(body.contains("already_answered") || body.contains("link_used"), "{body}");
    }
    crate::support::app::settle().await;
    assert_eq!(tool.runs(), 1, "once");
    rig.app.stop().await;
}

#[tokio::test]
async fn an_expired_link_or_one_made_out_to_someone_else_answers_nothing() {
    let tool = Touch::new();
    let rig = rig(tool.clone()).await;
    let links = request_links(&rig).await;
    let claim = claim_of(&links[0].1);
    let action = claim["a"].as_str().unwrap();
    // Links signed with Butler's own key (from its database), as it would make them.
    let store = &rig.app.app.store;
    let made = butler::links::Links::load(&rig.app.config.server, &**store, store.clone()).await.unwrap().unwrap();
    let button = Button::new("Approve once", action, ButtonStyle::Primary);
    let alice =
        ConversationRef { channel: "email".into(), id: ALICE.into(), thread: claim["t"].as_str().map(str::to_string) };
    let now = butler_channel::now_ms();
    let expired = made.link_until(&alice, ALICE, &button, now - 1).unwrap();
    for post in [false, true] {
        let (code, body) = status(&rig, post, &expired).await;
        assert_eq!(code, 410, "{body}");
        assert!(body.contains("\"link_expired\""), "{body}");
    }
    // Bob (allowed to talk to Butler) with a link for Alice's request in his own name: the
    // press reaches triage as his, and he is not the approver.
    let bob = ConversationRef { channel: "email".into(), id: BOB.into(), thread: alice.thread.clone() };
    let for_bob = made.link_until(&bob, BOB, &button, now + 60_000).unwrap();
    let (code, body) = status(&rig, true, &for_bob).await;
    assert_eq!(code, 200, "{body}");
    crate::support::app::settle().await;
    crate::support::app::settle().await;
    assert_eq!(tool.runs(), 0, "not Bob's to decide");
    // Alice's own link still works.
    let (code, body) = status(&rig, true, &links[0].1).await;
    assert_eq!(code, 200, "{body}");
    rig.smtp.wait(20, "the answer", |m| m.iter().any(|m| m.data.contains("lamp done"))).await;
    assert_eq!(tool.runs(), 1);
    rig.app.stop().await;
}
