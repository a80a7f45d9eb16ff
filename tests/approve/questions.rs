//! `ask_user`: the model asks the person a question and the turn parks like an approval. The
//! question goes out with its options as buttons (web chat, Telegram's inline keyboard) or
//! numbered (a channel without buttons); a click on an option or the asked person's next message
//! (a number or their own words) answers it and resumes the turn with the answer as the tool
//! result; nobody in time -> "no answer in time (expired)"; /stop cancels it; anyone else's click
//! is refused, and anyone else's message is an ordinary message.

use crate::support::app::{config, TestApp};
use crate::support::fake_channel::FakeChannel;
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::fake_telegram::updates::{callback, dm, user};
use crate::support::fake_telegram::FakeTelegram;
use crate::{approval_id, click, refused_click, request_in, wait_for};
use async_trait::async_trait;
use butler::channel::{Caps, Channel, ChannelError, ConversationKind, EventBody, InboundEvent, MessageRef, Outbound};
use butler::store::{ApprovalKind, ApprovalStatus};
use serde_json::{json, Value};
use std::sync::Arc;

const QUESTION: &str = "Tea or coffee?";

async fn start(adjust: impl FnOnce(&mut butler::config::Config)) -> (TestApp, FakeLlm) {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    adjust(&mut cfg);
    let app = TestApp::start_with(cfg, Some(dir), vec![]).await;
    (app, llm)
}

fn texts(msgs: &[Value]) -> Vec<String> {
    msgs.iter().filter(|m| m["role"] == "assistant").map(|m| m["text"].as_str().unwrap().to_string()).collect()
}

/// When the user says `say`, the model asks the question (with `options`), then says `after`.
fn script(llm: &FakeLlm, say: &str, options: &[&str], after: &str) {
    let mut args = json!({"question": QUESTION});
    if !options.is_empty() {
        args["options"] = json!(options);
    }
    llm.on(say, Reply::tool_call("ask_user", args));
    llm.on(say, Reply::text(after));
}

/// The result the model got for its `ask_user` call, once the turn went on.
fn answer_seen(llm: &FakeLlm) -> String {
    llm.last_request().unwrap().last_tool_result().unwrap()
}

#[tokio::test]
async fn web_click_on_an_option_answers_and_resumes() {
    let (app, llm) = start(|_| {}).await;
    script(&llm, "pick a drink", &["Tea", "Coffee"], "Enjoy.");
    app.post("q1", "local", "pick a drink").await;
    let msgs = wait_for(&app, "q1", "the question", |m| request_in(m).is_some()).await;
    let request = request_in(&msgs).unwrap().clone();
    let id = approval_id(&request);
    let buttons: Vec<(String, String)> = request["buttons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["label"].as_str().unwrap().to_string(), b["action"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        buttons,
        [("Tea".to_string(), format!("ap:{id}:0")), ("Coffee".to_string(), format!("ap:{id}:1"))],
        "one button per option, no Approve/Deny"
    );
    assert!(request["text"].as_str().unwrap().contains(QUESTION), "{request}");
    assert_eq!(llm.request_count(), 1, "the turn is parked");

    // The record: a question asked of exactly the person who sent the message.
    let row = app.app.store.approval_get(&id).await.unwrap().unwrap();
    assert_eq!((row.kind, row.tool.as_str(), row.summary.as_str()), (ApprovalKind::Question, "ask_user", QUESTION));
    assert_eq!(
        (row.options.clone(), row.approvers.clone()),
        (vec!["Tea".into(), "Coffee".into()], vec!["web:local".into()])
    );
    assert_eq!(row.status, ApprovalStatus::Pending);
    assert!((row.expires_ms - row.created_ms - 600_000).abs() < 1000, "expires like an approval");

    assert_eq!(click(&app, "q1", "local", &format!("ap:{id}:1")).await, 202);
    let msgs = wait_for(&app, "q1", "the answer", |m| texts(m).iter().any(|t| t == "Enjoy.")).await;
    assert_eq!(answer_seen(&llm), "Coffee", "the answer is the tool result");
    let edited = msgs.iter().find(|m| m["id"] == request["id"]).unwrap();
    assert_eq!(edited["text"], format!("❓ {QUESTION}\n💬 local: Coffee"), "the request shows the answer");
    assert!(edited["buttons"].as_array().unwrap().is_empty());
    let row = app.app.store.approval_get(&id).await.unwrap().unwrap();
    assert_eq!((row.status, row.answer.as_deref()), (ApprovalStatus::Approved, Some("Coffee")));
    let outcomes: Vec<String> =
        app.app.store.audit_recent(10).await.unwrap().into_iter().rev().map(|a| a.outcome).collect();
    assert_eq!(outcomes, ["asked", "answered"]);

    // A second click changes nothing.
    refused_click(&app, "q1", &format!("ap:{id}:0")).await;
    assert_eq!(llm.request_count(), 2);
    app.stop().await;
}

#[tokio::test]
async fn a_typed_reply_answers_by_number_or_in_words() {
    let (app, llm) = start(|_| {}).await;
    // (conversation, options, what the person types, the answer the model gets)
    let cases = [
        ("t1", vec!["Tea", "Coffee"], "2", "Coffee"),
        ("t2", vec!["Tea", "Coffee"], "green tea, please", "green tea, please"),
        ("t3", vec!["Tea", "Coffee"], "7", "7"),
        ("t4", vec![], "  black, no sugar ", "black, no sugar"),
    ];
    for (conv, options, typed, want) in cases {
        let say = format!("pick a drink in {conv}");
        script(&llm, &say, &options, &format!("Noted for {conv}."));
        app.post(conv, "local", &say).await;
        let msgs = wait_for(&app, conv, "the question", |m| texts(m).iter().any(|t| t.contains(QUESTION))).await;
        if options.is_empty() {
            let q = msgs.iter().find(|m| m["text"].as_str().unwrap().contains(QUESTION)).unwrap();
            assert!(q["buttons"].as_array().unwrap().is_empty(), "no options, no buttons: {q}");
            assert!(q["text"].as_str().unwrap().contains("Reply to answer"), "{q}");
        }
        let before = llm.request_count();
        app.post(conv, "local", typed).await;
        let done = format!("Noted for {conv}.");
        wait_for(&app, conv, "the answer", |m| texts(m).contains(&done)).await;
        assert_eq!(answer_seen(&llm), want, "{conv}: {typed:?}");
        assert_eq!(llm.request_count(), before + 1, "{conv}: the reply resumed the turn, it started none");
        assert_eq!(llm.last_request().unwrap().last_user_text(), say, "{conv}: the reply is not a new message");
    }
    app.stop().await;
}

#[tokio::test]
async fn stop_cancels_a_waiting_question() {
    let (app, llm) = start(|_| {}).await;
    script(&llm, "pick a drink", &["Tea", "Coffee"], "unused");
    app.post("s1", "local", "pick a drink").await;
    let msgs = wait_for(&app, "s1", "the question", |m| request_in(m).is_some()).await;
    let id = approval_id(request_in(&msgs).unwrap());
    app.post("s1", "local", "/stop").await;
    let msgs = wait_for(&app, "s1", "the stop", |m| texts(m).iter().any(|t| t.ends_with("⏹ Stopped."))).await;
    assert!(texts(&msgs).contains(&format!("❓ {QUESTION}\n⏹ Cancelled by local.")), "{msgs:#?}");
    let row = app.app.store.approval_get(&id).await.unwrap().unwrap();
    assert_eq!((row.status, row.answer), (ApprovalStatus::Cancelled, None));
    assert_eq!(llm.request_count(), 1, "stopping does not ask the model");
    app.stop().await;
}

#[tokio::test]
async fn an_unanswered_question_expires_and_the_turn_goes_on() {
    let (app, llm) = start(|c| c.permissions.approval_timeout_secs = 1).await;
    script(&llm, "pick a drink", &["Tea", "Coffee"], "Nobody answered, so water it is.");
    app.post("e1", "local", "pick a drink").await;
    let msgs = wait_for(&app, "e1", "the answer after expiry", |m| {
        texts(m).iter().any(|t| t == "Nobody answered, so water it is.")
    })
    .await;
    assert_eq!(answer_seen(&llm), "no answer in time (expired)");
    assert!(texts(&msgs).contains(&format!("❓ {QUESTION}\n⌛ No answer in time.")), "{msgs:#?}");
    // A late typed reply is an ordinary message now.
    app.post("e1", "local", "coffee!").await;
    wait_for(&app, "e1", "an ordinary answer", |m| texts(m).iter().any(|t| t == "echo: coffee!")).await;
    app.stop().await;
}

/// A platform without buttons: the fake channel with `Caps::buttons` off.
struct NoButtons(Arc<FakeChannel>);

#[async_trait]
impl Channel for NoButtons {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn caps(&self) -> Caps {
        Caps { buttons: false, ..self.0.caps() }
    }

    async fn send(&self, msg: &Outbound) -> Result<MessageRef, ChannelError> {
        self.0.send(msg).await
    }

    async fn edit(&self, target: &MessageRef, msg: &Outbound) -> Result<(), ChannelError> {
        self.0.edit(target, msg).await
    }
}

fn group_click(chat: &FakeChannel, user: &str, action: &str) -> InboundEvent {
    let mut ev = chat.message(user, user, "g", ConversationKind::Group, true, "");
    ev.body = EventBody::Action { action: action.to_string(), message: None, interaction: None };
    ev
}

#[tokio::test]
async fn in_a_group_without_buttons_only_the_asked_person_answers() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.access.allow = vec!["chat:alice".parse().unwrap(), "chat:bob".parse().unwrap()];
    let chat = FakeChannel::new("chat");
    let platform: Arc<dyn Channel> = Arc::new(NoButtons(chat.clone()));
    let app = TestApp::start_full(cfg, Some(dir), vec![], vec![platform]).await;
    let say = |who: &str, name: &str, text: &str| chat.message(who, name, "g", ConversationKind::Group, true, text);

    script(&llm, "pick a drink", &["Yes please", "No thanks"], "Coffee is coming.");
    app.emit(say("alice", "Alice", "@butler pick a drink")).await;
    let shown = chat.wait_texts("g", 2).await;
    let question = shown.iter().find(|t| t.contains(QUESTION)).expect("the question");
    assert!(
        question.ends_with("1. Yes please  2. No thanks - reply with a number or your own words"),
        "numbered options: {question}"
    );
    let asked = chat.shown("g").into_iter().find(|m| m.text.contains(QUESTION)).unwrap();
    assert!(asked.buttons.is_empty(), "no buttons on this platform: {asked:?}");
    let id: String = {
        let pool = sqlx::SqlitePool::connect(&app.db_url()).await.unwrap();
        let id = sqlx::query_scalar("SELECT id FROM approvals").fetch_one(&pool).await.unwrap();
        pool.close().await;
        id
    };

    // Bob's (forged) click is refused politely and changes nothing.
    let n = chat.shown("g").len();
    app.emit(group_click(&chat, "bob", &format!("ap:{id}:0"))).await;
    let texts = chat.wait_texts("g", n + 1).await;
    assert!(texts.last().unwrap().contains("this question is for chat:alice"), "{texts:?}");
    assert_eq!(app.app.store.approval_get(&id).await.unwrap().unwrap().status, ApprovalStatus::Pending);

    // Alice answers by number.
    app.emit(say("alice", "Alice", "@butler 1")).await;
    let texts = chat.wait_texts("g", n + 2).await;
    assert_eq!(texts.last().unwrap(), "Coffee is coming.", "{texts:?}");
    assert_eq!(answer_seen(&llm), "Yes please");
    assert!(chat.shown("g").iter().any(|m| m.text == format!("❓ {QUESTION}\n💬 Alice: Yes please")));

    // Another question to Alice: Bob's message is an ordinary message, not her answer.
    script(&llm, "another drink", &["Yes please", "No thanks"], "unused");
    app.emit(say("alice", "Alice", "@butler another drink")).await;
    let texts = chat.wait_texts("g", n + 4).await;
    assert!(texts.iter().filter(|t| t.contains(QUESTION)).count() >= 2, "{texts:?}");
    app.emit(say("bob", "Bob", "@butler 2")).await;
    let texts = chat.wait_texts("g", n + 5).await;
    assert_eq!(texts.last().unwrap(), "echo: [Bob] @butler 2", "an ordinary turn: {texts:?}");
    let second: String = {
        let pool = sqlx::SqlitePool::connect(&app.db_url()).await.unwrap();
        let sql = "SELECT id FROM approvals ORDER BY created_ms DESC LIMIT 1";
        let id = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
        pool.close().await;
        id
    };
    let row = app.app.store.approval_get(&second).await.unwrap().unwrap();
    assert_eq!((row.status, row.answer), (ApprovalStatus::Cancelled, None), "Bob's message did not answer it");
    app.stop().await;
}

#[tokio::test]
async fn telegram_shows_the_options_as_an_inline_keyboard() {
    const TOKEN: &str = "123456:TEST-fake-token";
    const ALICE: i64 = 222;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    let section = format!("token = \"{TOKEN}\"\napi_url = \"{}\"\npoll_timeout_secs = 5\n", fake.api_url());
    cfg.channels.set("telegram", section.parse().unwrap());
    cfg.access.allow = vec![format!("telegram:{ALICE}").parse().unwrap()];
    let app = TestApp::start_with(cfg, Some(dir), vec![]).await;
    fake.wait_calls("getUpdates", 1, 10).await;

    script(&llm, "pick a drink", &["Tea", "Coffee"], "Enjoy.");
    fake.push(dm(ALICE, 10, "pick a drink"));
    let is_question = |m: &crate::support::fake_telegram::Shown| m.buttons.iter().any(|(_, d)| d.starts_with("ap:"));
    let shown = fake.wait_chat(ALICE, 20, "the question", |m| m.iter().any(is_question)).await;
    let question = shown.iter().find(|m| is_question(m)).unwrap().clone();
    let labels: Vec<&str> = question.buttons.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["Tea", "Coffee"], "the inline keyboard has the options");
    for (n, (_, data)) in question.buttons.iter().enumerate() {
        assert!(data.len() <= 64 && data.starts_with("ap:") && data.ends_with(&format!(":{n}")), "{data}");
    }
    assert!(question.text.contains(QUESTION), "{}", question.text);

    let on = fake.message_json(ALICE, question.id);
    fake.push(callback("q-alice", user(ALICE, "Alice"), &on, &question.buttons[1].1));
    let done = fake.wait_chat(ALICE, 20, "the answer", |m| m.iter().any(|m| m.text == "Enjoy.")).await;
    assert_eq!(answer_seen(&llm), "Coffee");
    let edited = done.iter().find(|m| m.id == question.id).unwrap();
    assert!(edited.text.ends_with("💬 Alice: Coffee") && edited.buttons.is_empty(), "{edited:?}");
    app.stop().await;
}
