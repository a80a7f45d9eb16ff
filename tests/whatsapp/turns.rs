//! Points 3 and 4 (messages in and out) through the real App: a text answered end to end, a
//! long answer split at paragraph breaks, Markdown in WhatsApp's formatting, an approval by
//! reply buttons that only the approver can give, and the Graph API's refusals.

use crate::support::fake_llm::Reply;
use crate::support::fake_whatsapp::{button_reply, list_reply, reaction, text};
use crate::support::touch::Touch;
use crate::{settle, Wa, ALICE, MALLORY, OWNER};
use serde_json::json;

#[tokio::test]
async fn a_text_message_is_answered_without_a_link_preview() {
    let wa = Wa::start().await;
    wa.llm.on("hello", Reply::text("Hi! See https://example.com"));
    assert_eq!(wa.deliver(&text(OWNER, "wamid.in-1", "hello there")).await, 200);
    let sent = wa.fake.wait_sent(OWNER, 20, "the answer", |s| !s.is_empty()).await;
    assert_eq!(sent.len(), 1);
    let m = &sent[0];
    assert_eq!((m.kind.as_str(), m.text().as_str()), ("text", "Hi! See https://example.com"));
    assert_eq!(m.body["text"]["preview_url"], false);
    assert_eq!(m.body["recipient_type"], "individual");
    assert!(wa.llm.last_request().unwrap().last_user_text().contains("hello there"));
    // The read receipt with the typing indicator answered the person's message.
    let read = wa.fake.sent().into_iter().find(|m| m.kind == "read").expect("a read receipt");
    assert_eq!(read.body["message_id"], "wamid.in-1");
    assert_eq!(read.body["typing_indicator"]["type"], "text");
    wa.stop().await;
}

#[tokio::test]
async fn a_long_answer_is_split_at_paragraph_breaks() {
    let wa = Wa::start().await;
    let paragraph = "word ".repeat(199).trim_end().to_string() + ".";
    let answer: Vec<String> = (0..8).map(|i| format!("{i} {paragraph}")).collect();
    let answer = answer.join("\n\n");
    assert!(answer.chars().count() > 7000);
    wa.llm.on("essay", Reply::text(&answer));
    assert_eq!(wa.deliver(&text(OWNER, "wamid.in-2", "an essay please")).await, 200);
    let last = format!("7 {paragraph}");
    wa.fake.wait_sent(OWNER, 20, "all parts", |s| s.iter().any(|m| m.text().ends_with(&last))).await;
    settle().await;
    let sent = wa.fake.sent_to(OWNER);
    assert!(sent.len() >= 2, "{} parts", sent.len());
    for m in &sent {
        let t = m.text();
        assert!(t.chars().count() <= 4096, "{} chars", t.chars().count());
        assert!(t.ends_with('.'), "ends at a paragraph break: …{}", &t[t.len().saturating_sub(20)..]);
    }
    let joined: Vec<String> = sent.iter().map(|m| m.text().trim().to_string()).collect();
    assert_eq!(joined.join("\n\n"), answer, "nothing lost or repeated");
    wa.stop().await;
}

#[tokio::test]
async fn markdown_is_sent_in_whatsapp_formatting() {
    let wa = Wa::start().await;
    let cases = [
        ("fmt-bold", "**Done** and __done__", "*Done* and *done*"),
        ("fmt-italic", "*maybe* _maybe_", "_maybe_ _maybe_"),
        ("fmt-strike", "~~old~~ new", "~old~ new"),
        ("fmt-heading", "# Plan\n- one", "*Plan*\n- one"),
        ("fmt-code", "```sh\nls **x**\n```", "```\nls **x**\n```"),
        ("fmt-link", "[docs](https://docs.example)", "docs (https://docs.example)"),
    ];
    for (i, (key, markdown, _)) in cases.iter().enumerate() {
        wa.llm.on(key, Reply::text(markdown));
        assert_eq!(wa.deliver(&text(OWNER, &format!("wamid.fmt-{i}"), key)).await, 200);
        wa.fake.wait_sent(OWNER, 20, key, |s| s.len() > i).await;
    }
    let sent = wa.fake.sent_to(OWNER);
    for (i, (key, _, want)) in cases.iter().enumerate() {
        assert_eq!(sent[i].text(), *want, "{key}");
    }
    wa.stop().await;
}

#[tokio::test]
async fn a_thumbs_up_on_the_request_approves_and_other_reactions_do_nothing() {
    let tool = Touch::new();
    let wa = Wa::start_with(vec![tool.clone()]).await;
    wa.llm.on("lamp", Reply::tool_call("touch", json!({"name": "lamp"})));
    wa.llm.on("lamp", Reply::text("lamp done"));
    assert_eq!(wa.deliver(&text(ALICE, "wamid.r-1", "touch the lamp")).await, 200);
    let shown =
        wa.fake.wait_sent(ALICE, 20, "the approval request", |s| s.iter().any(|m| m.kind == "interactive")).await;
    let request = shown.iter().find(|m| m.kind == "interactive").unwrap().id.clone();
    // Mallory's 👍 on it (the id leaked, say), a laugh and a removed reaction from Alice: nothing.
    for (who, id, emoji) in [(MALLORY, "wamid.r-2", "👍"), (ALICE, "wamid.r-3", "😂"), (ALICE, "wamid.r-4", "")] {
        assert_eq!(wa.deliver(&reaction(who, id, &request, emoji)).await, 200);
    }
    settle().await;
    assert_eq!(tool.runs(), 0);
    assert_eq!(wa.llm.requests().len(), 1, "no reaction became a turn");
    assert_eq!(wa.deliver(&reaction(ALICE, "wamid.r-5", &request, "👍")).await, 200);
    wa.fake.wait_sent(ALICE, 20, "the answer", |s| s.iter().any(|m| m.text() == "lamp done")).await;
    assert_eq!(tool.runs(), 1);
    wa.stop().await;
}

#[tokio::test]
async fn approvals_are_reply_buttons_that_only_the_approver_can_press() {
    let tool = Touch::new();
    let wa = Wa::start_with(vec![tool.clone()]).await;
    wa.llm.on("lamp", Reply::tool_call("touch", json!({"name": "lamp"})));
    wa.llm.on("lamp", Reply::text("lamp done"));
    assert_eq!(wa.deliver(&text(ALICE, "wamid.alice-1", "touch the lamp")).await, 200);
    let shown =
        wa.fake.wait_sent(ALICE, 20, "the approval request", |s| s.iter().any(|m| m.kind == "interactive")).await;
    let request = shown.iter().find(|m| m.kind == "interactive").unwrap().clone();
    let buttons = request.buttons();
    assert!(!buttons.is_empty() && buttons.len() <= 3, "{buttons:?}");
    for (title, id) in &buttons {
        assert!(!title.is_empty() && title.chars().count() <= 20, "{title}");
        assert!(!id.contains("lamp"), "never the tool's arguments: {id}");
    }
    let approve = buttons[0].1.clone();

    // Mallory sends the same button id from her own chat: nothing runs.
    assert_eq!(wa.deliver(&button_reply(MALLORY, "wamid.m-1", &request.id, &approve, "Approve")).await, 200);
    settle().await;
    assert_eq!(tool.runs(), 0, "not Mallory's to decide");

    // Alice presses it: the tool runs and the answer follows.
    assert_eq!(wa.deliver(&button_reply(ALICE, "wamid.alice-2", &request.id, &approve, "Approve")).await, 200);
    wa.fake.wait_sent(ALICE, 20, "the answer", |s| s.iter().any(|m| m.text() == "lamp done")).await;
    assert_eq!(tool.runs(), 1);

    // Pressed again (a new click, not a redelivery): nothing runs twice.
    assert_eq!(wa.deliver(&button_reply(ALICE, "wamid.alice-3", &request.id, &approve, "Approve")).await, 200);
    settle().await;
    assert_eq!(tool.runs(), 1);
    wa.stop().await;
}

#[tokio::test]
async fn outside_the_window_a_reply_is_held_until_the_person_writes() {
    let wa = Wa::start().await;
    wa.llm.on("late", Reply::text("too late"));
    wa.llm.on("again", Reply::text("welcome back"));
    wa.fake.fail_next(131047);
    assert_eq!(wa.deliver(&text(OWNER, "wamid.late-1", "late question")).await, 200);
    settle().await;
    settle().await;
    assert!(wa.fake.sent_to(OWNER).is_empty(), "refused by WhatsApp, not sent again");
    // Nothing else from them (a status, a click) releases it; their next message does.
    assert_eq!(wa.deliver(&crate::support::fake_whatsapp::status("webhook_status_delivered.json")).await, 200);
    settle().await;
    assert!(wa.fake.sent_to(OWNER).is_empty());
    assert_eq!(wa.deliver(&text(OWNER, "wamid.late-2", "here again")).await, 200);
    let sent = wa.fake.wait_sent(OWNER, 20, "the held reply and the answer", |s| s.len() >= 2).await;
    let texts: Vec<String> = sent.iter().map(|m| m.text()).collect();
    let held = texts.iter().find(|t| t.ends_with("too late")).expect("the held reply");
    assert!(held.starts_with("(Held until you wrote again"), "{held}");
    assert!(texts.contains(&"welcome back".to_string()), "{texts:?}");
    settle().await;
    assert_eq!(wa.fake.sent_to(OWNER).len(), 2, "each once");
    wa.stop().await;
}

#[tokio::test]
async fn outside_the_window_the_answer_goes_as_the_briefing_template() {
    let wa = Wa::start_full(vec![], |w| w.briefing_template = Some("daily_briefing".into())).await;
    wa.llm.on("brief", Reply::text("**Today**\n\n- rain\n- meeting at 10"));
    wa.fake.fail_next(131047);
    assert_eq!(wa.deliver(&text(OWNER, "wamid.brief-1", "brief me")).await, 200);
    let sent = wa.fake.wait_sent(OWNER, 20, "the template", |s| !s.is_empty()).await;
    assert_eq!(sent[0].kind, "template");
    assert_eq!(sent[0].body["template"]["name"], "daily_briefing");
    assert_eq!(sent[0].text(), "*Today* - rain - meeting at 10");
    settle().await;
    assert_eq!(wa.fake.sent_to(OWNER).len(), 1, "sent once");
    wa.stop().await;
}

#[tokio::test]
async fn a_question_with_many_options_is_a_list_answered_by_a_row() {
    let wa = Wa::start().await;
    let options = ["Tea", "Coffee", "Water", "Juice", "A very long drink name indeed"];
    wa.llm.on("drink", Reply::tool_call("ask_user", json!({"question": "Which drink?", "options": options})));
    wa.llm.on("drink", Reply::text("Enjoy."));
    assert_eq!(wa.deliver(&text(OWNER, "wamid.q-1", "a drink please")).await, 200);
    let shown = wa.fake.wait_sent(OWNER, 20, "the question", |s| s.iter().any(|m| m.kind == "interactive")).await;
    let question = shown.iter().find(|m| m.kind == "interactive").unwrap().clone();
    assert_eq!(question.body["interactive"]["type"], "list");
    assert!(question.text().contains("Which drink?"), "{}", question.text());
    let rows = question.buttons();
    assert!(rows.len() >= options.len(), "{rows:?}");
    let coffee = rows.iter().find(|(title, _)| title == "Coffee").expect("a Coffee row").1.clone();
    assert_eq!(wa.deliver(&list_reply(OWNER, "wamid.q-2", &question.id, &coffee, "Coffee")).await, 200);
    wa.fake.wait_sent(OWNER, 20, "the answer", |s| s.iter().any(|m| m.text() == "Enjoy.")).await;
    let seen = wa.llm.last_request().unwrap().last_tool_result().unwrap();
    assert!(seen.contains("Coffee"), "{seen}");
    wa.stop().await;
}

#[tokio::test]
async fn commands_and_access_rules_apply_on_whatsapp() {
    let wa = Wa::start().await;
    assert_eq!(wa.deliver(&text(OWNER, "wamid.cmd-1", "/help")).await, 200);
    let sent = wa.fake.wait_sent(OWNER, 20, "the help", |s| !s.is_empty()).await;
    assert!(sent[0].text().contains("/new") && sent[0].text().contains("/approve"), "{}", sent[0].text());
    // Someone not in [access] starts no turn.
    let stranger = "16505559999";
    assert_eq!(wa.deliver(&text(stranger, "wamid.s-1", "hello?")).await, 200);
    settle().await;
    assert!(wa.llm.requests().is_empty(), "no model call for a stranger");
    assert!(wa.fake.sent_to(stranger).len() <= 1, "at most one refusal");
    wa.stop().await;
}

#[tokio::test]
async fn a_pair_rate_refusal_is_waited_out_and_sent_once() {
    let wa = Wa::start().await;
    wa.llm.on("busy", Reply::text("after the wait"));
    wa.fake.fail_next(131056);
    let asked = std::time::Instant::now();
    assert_eq!(wa.deliver(&text(OWNER, "wamid.busy-1", "busy line")).await, 200);
    wa.fake.wait_sent(OWNER, 30, "the answer", |s| s.iter().any(|m| m.text() == "after the wait")).await;
    assert!(asked.elapsed() >= std::time::Duration::from_secs(5), "waited out: {:?}", asked.elapsed());
    settle().await;
    assert_eq!(wa.fake.sent_to(OWNER).len(), 1);
    wa.stop().await;
}
