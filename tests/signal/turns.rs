//! Points 6 and 7 (messages in and out) through the real App: a direct message answered (read
//! receipt, typing, no quote), Markdown as Signal text styles, a long answer split, a group
//! message answered only when it mentions the bot (and then quoting it), and approvals answered
//! by a 👍 / 👎 reaction or a numbered reply quoting the request, only by the approver, once.

use crate::support::fake_llm::Reply;
use crate::support::fake_signal::envelopes::{direct, group, quote_reply, reaction, uuid_for, ACCOUNT, BOT_UUID};
use crate::support::fake_signal::Sent;
use crate::support::touch::Touch;
use crate::{listening, settle, Sg, ALICE, GROUP, GROUP_CONVERSATION, MALLORY, OWNER};

use serde_json::json;

const T: i64 = 1_760_000_000_000;

fn to(sent: &[Sent], who: &str) -> Vec<Sent> {
    sent.iter().filter(|s| s.to == who).cloned().collect()
}

#[tokio::test]
async fn a_direct_message_is_answered_read_and_typed() {
    let sg = Sg::start().await;
    listening(&sg.fake).await;
    sg.llm.on("hello", Reply::text("Hi there"));
    sg.fake.push(direct(OWNER, &uuid_for(OWNER), T, "hello Butler"));
    let sent = sg.fake.wait_sent(20, "the answer", |s| !to(s, OWNER).is_empty()).await;
    let answer = &to(&sent, OWNER)[0];
    assert_eq!((answer.text.as_str(), answer.quote), ("Hi there", None), "a direct answer quotes nothing");
    assert!(sg.llm.last_request().unwrap().last_user_text().contains("hello Butler"));
    let receipts = sg.fake.calls_of("sendReceipt");
    assert_eq!(receipts.len(), 1, "{receipts:?}");
    assert_eq!(receipts[0].params["targetTimestamp"], json!([T]));
    assert_eq!(receipts[0].params["type"], "read");
    let typing = sg.fake.calls_of("sendTyping");
    assert!(typing.iter().any(|c| c.params["recipient"] == json!([OWNER])), "{typing:?}");
    for call in sg.fake.calls() {
        assert_eq!(call.params["account"], ACCOUNT, "every call names the account: {}", call.method);
    }
    sg.stop().await;
}

#[tokio::test]
async fn markdown_becomes_signal_text_styles_and_long_answers_are_split() {
    let sg = Sg::start().await;
    listening(&sg.fake).await;
    sg.llm.on("styles", Reply::text("**Done**: `ls` is ~~old~~ *fine*"));
    sg.fake.push(direct(OWNER, &uuid_for(OWNER), T, "styles please"));
    let sent = sg.fake.wait_sent(20, "the styled answer", |s| !to(s, OWNER).is_empty()).await;
    let m = &to(&sent, OWNER)[0];
    assert_eq!(m.text, "Done: ls is old fine");
    assert_eq!(m.styles, ["0:4:BOLD", "6:2:MONOSPACE", "12:3:STRIKETHROUGH", "16:4:ITALIC"]);

    let paragraph = "word ".repeat(150).trim_end().to_string() + ".";
    let answer: Vec<String> = (0..6).map(|i| format!("{i} {paragraph}")).collect();
    let answer = answer.join("\n\n");
    sg.llm.on("essay", Reply::text(&answer));
    sg.fake.push(direct(OWNER, &uuid_for(OWNER), T + 1, "an essay please"));
    let last = format!("5 {paragraph}");
    sg.fake.wait_sent(20, "all parts", |s| s.iter().any(|m| m.text.ends_with(&last))).await;
    settle().await;
    let parts: Vec<Sent> = to(&sg.fake.sent(), OWNER).into_iter().skip(1).collect();
    assert!(parts.len() >= 2, "{} parts", parts.len());
    for p in &parts {
        assert!(p.text.chars().count() <= butler_signal::MAX_LEN, "{} chars", p.text.chars().count());
    }
    let joined: Vec<&str> = parts.iter().map(|p| p.text.trim()).collect();
    assert_eq!(joined.join("\n\n"), answer, "nothing lost or repeated");
    sg.stop().await;
}

#[tokio::test]
async fn a_group_message_needs_a_mention_and_the_answer_quotes_it() {
    let sg = Sg::start().await;
    listening(&sg.fake).await;
    sg.llm.on("weather", Reply::text("Sunny"));
    sg.fake.push(group(ALICE, &uuid_for(ALICE), T, GROUP, "what's the weather", &[]));
    settle().await;
    assert!(sg.fake.sent().is_empty(), "not addressed: no answer");
    sg.fake.push(group(ALICE, &uuid_for(ALICE), T + 1, GROUP, "\u{FFFC} what's the weather", &[(0, 1, BOT_UUID)]));
    let sent = sg.fake.wait_sent(20, "the group answer", |s| !s.is_empty()).await;
    assert_eq!(sent[0].to, format!("group:{GROUP}"), "sent to the group by its real id");
    use sqlx::Connection;
    let mut db = sqlx::SqliteConnection::connect(&sg.app.db_url()).await.unwrap();
    let stored: Vec<(String,)> =
        sqlx::query_as("SELECT DISTINCT conversation FROM inbox").fetch_all(&mut db).await.unwrap();
    assert_eq!(stored, [(format!("signal:{GROUP_CONVERSATION}"),)], "the group's conversation id has no `/`");
    assert_eq!((sent[0].text.as_str(), sent[0].quote), ("Sunny", Some(T + 1)));
    let send = &sg.fake.calls_of("send")[0];
    assert_eq!(send.params["quoteAuthor"], ALICE);
    assert_eq!(sg.llm.requests().len(), 1, "the unaddressed message never reached the model");
    assert!(sg.llm.last_request().unwrap().last_user_text().contains("what's the weather"));
    assert!(
        !sg.llm.last_request().unwrap().last_user_text().contains('\u{FFFC}'),
        "the bot's mention is not part of the text"
    );
    sg.stop().await;
}

/// The approval request for `tool`'s call in the group, asked by Alice: its message timestamp.
async fn request_in_group(sg: &Sg) -> i64 {
    sg.llm.on("lamp", Reply::tool_call("touch", json!({"name": "lamp"})));
    sg.llm.on("lamp", Reply::text("lamp done"));
    sg.fake.push(group(ALICE, &uuid_for(ALICE), T, GROUP, "\u{FFFC} touch the lamp", &[(0, 1, BOT_UUID)]));
    let sent = sg.fake.wait_sent(20, "the request", |s| s.iter().any(|m| m.text.contains("Approval needed"))).await;
    let request = sent.iter().find(|m| m.text.contains("Approval needed")).unwrap();
    assert!(
        request.text.ends_with("Reply to this message with a number: 1 Approve once · 2 Always for this session · 3 Deny, or react 👍 / 👎."),
        "{}",
        request.text
    );
    assert!(!request.text.contains("lamp\""), "never the raw arguments");
    request.timestamp
}

#[tokio::test]
async fn a_thumbs_up_from_the_approver_approves_once_and_others_change_nothing() {
    let tool = Touch::new();
    let sg = Sg::start_with(vec![tool.clone()]).await;
    listening(&sg.fake).await;
    let ts = request_in_group(&sg).await;
    // Mallory reacts 👍 in the same group: not hers to decide.
    sg.fake.push(reaction(MALLORY, &uuid_for(MALLORY), T + 10, "👍", ACCOUNT, ts, false, Some(GROUP)));
    // A heart from Alice, and Alice's 👍 to another message, answer nothing.
    sg.fake.push(reaction(ALICE, &uuid_for(ALICE), T + 11, "❤️", ACCOUNT, ts, false, Some(GROUP)));
    sg.fake.push(reaction(ALICE, &uuid_for(ALICE), T + 12, "👍", ACCOUNT, ts - 5, false, Some(GROUP)));
    settle().await;
    assert_eq!(tool.runs(), 0);
    // Alice's 👍 (with a skin tone) on the request: the tool runs once and the answer follows.
    sg.fake.push(reaction(ALICE, &uuid_for(ALICE), T + 13, "👍🏽", ACCOUNT, ts, false, Some(GROUP)));
    sg.fake.wait_sent(20, "the answer", |s| s.iter().any(|m| m.text == "lamp done")).await;
    assert_eq!(tool.runs(), 1);
    // Again (a new reaction, not a redelivery): nothing runs twice.
    sg.fake.push(reaction(ALICE, &uuid_for(ALICE), T + 14, "👍", ACCOUNT, ts, false, Some(GROUP)));
    settle().await;
    assert_eq!(tool.runs(), 1);
    sg.stop().await;
}

#[tokio::test]
async fn numbered_replies_and_a_thumbs_down_answer_the_request_they_quote() {
    let tool = Touch::new();
    let sg = Sg::start_with(vec![tool.clone()]).await;
    listening(&sg.fake).await;
    let ts = request_in_group(&sg).await;
    // Mallory quotes it with "1": refused, nothing runs.
    let mut from_mallory = quote_reply(MALLORY, &uuid_for(MALLORY), T + 20, "1", ts, ACCOUNT);
    from_mallory["dataMessage"]["groupInfo"] = json!({"groupId": GROUP, "type": "DELIVER"});
    sg.fake.push(from_mallory);
    settle().await;
    assert_eq!(tool.runs(), 0);
    // Alice quotes it with "3" (Deny): the tool never runs, and the turn ends with the denial.
    let mut from_alice = quote_reply(ALICE, &uuid_for(ALICE), T + 21, "3", ts, ACCOUNT);
    from_alice["dataMessage"]["groupInfo"] = json!({"groupId": GROUP, "type": "DELIVER"});
    sg.fake.push(from_alice);
    settle().await;
    assert_eq!(tool.runs(), 0);
    // A later 👍 on the decided request does nothing.
    sg.fake.push(reaction(ALICE, &uuid_for(ALICE), T + 22, "👍", ACCOUNT, ts, false, Some(GROUP)));
    settle().await;
    assert_eq!(tool.runs(), 0);
    let texts: Vec<String> = sg.fake.sent().into_iter().map(|s| s.text).collect();
    assert!(texts.iter().any(|t| t.contains("Denied") || t.contains("denied")), "{texts:#?}");

    // A second request, approved by a numbered reply "1" in a direct chat with the owner.
    sg.llm.on("fan", Reply::tool_call("touch", json!({"name": "fan"})));
    sg.llm.on("fan", Reply::text("fan done"));
    sg.fake.push(direct(OWNER, &uuid_for(OWNER), T + 30, "touch the fan"));
    let sent = sg
        .fake
        .wait_sent(20, "the second request", |s| to(s, OWNER).iter().any(|m| m.text.contains("Approval needed")))
        .await;
    let request = to(&sent, OWNER).into_iter().find(|m| m.text.contains("Approval needed")).unwrap();
    sg.fake.push(quote_reply(OWNER, &uuid_for(OWNER), T + 31, "1", request.timestamp, ACCOUNT));
    sg.fake.wait_sent(20, "the answer", |s| s.iter().any(|m| m.text == "fan done")).await;
    assert_eq!(tool.runs(), 1);
    sg.stop().await;
}

#[tokio::test]
async fn commands_access_rules_and_a_briefing_to_a_group_apply_on_signal() {
    let sg = Sg::start().await;
    listening(&sg.fake).await;
    sg.fake.push(direct(OWNER, &uuid_for(OWNER), T, "/help"));
    let sent = sg.fake.wait_sent(20, "the help", |s| !to(s, OWNER).is_empty()).await;
    let help = &to(&sent, OWNER)[0].text;
    assert!(help.contains("/new") && help.contains("/approve"), "{help}");
    // Someone not in [access] starts no turn, in a direct chat or in a group.
    let stranger = "+15550009999";
    sg.fake.push(direct(stranger, &uuid_for(stranger), T + 1, "hello?"));
    sg.fake.push(group(stranger, &uuid_for(stranger), T + 2, GROUP, "\u{FFFC} hi", &[(0, 1, BOT_UUID)]));
    settle().await;
    assert!(sg.llm.requests().is_empty(), "no model call for a stranger");
    assert!(to(&sg.fake.sent(), stranger).len() <= 1, "at most one answer (the pairing code)");

    // A briefing whose target is the group: delivered there, by the group's real id.
    sg.llm.on("brief-signal", Reply::text("**Today**: rain"));
    let target = format!("signal:{GROUP_CONVERSATION}");
    let owner = format!("signal:{OWNER}");
    crate::support::app::briefing_due(&sg.app.app.store, "morning", "brief-signal: the day", &target, &owner).await;
    let sent = sg.fake.wait_sent(30, "the briefing", |s| s.iter().any(|m| m.text == "Today: rain")).await;
    let brief = sent.iter().find(|m| m.text == "Today: rain").unwrap();
    assert_eq!(
        (brief.to.as_str(), brief.styles.clone()),
        (format!("group:{GROUP}").as_str(), vec!["0:5:BOLD".to_string()])
    );
    sg.stop().await;
}
