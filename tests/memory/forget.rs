//! Nothing silently forgotten (issue 31 point 4): a message leaves the request window only
//! inside a summary. A fact told in message 3 is still answered at message 300, through a tight
//! token window and through a small `[limits] history_messages`; the fake model answers only
//! from what it is sent (its summaries keep the lines it is asked to keep), so the fact can
//! only come through the summaries. Summary requests fit the window of the model that writes
//! them (the worker tier's), and one the model refuses as too long is retried with less.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, RecordedRequest, Reply};
use crate::{eventually, replies, user_texts};
use butler::config::{Config, LlmTier};

const SUMMARIZER: &str = "Summarize this conversation so far";
const FACT: &str = "remember: the code word is tangerine";

/// The fake's summaries keep every line with a fact in it (from the messages or the summary
/// so far), under the summary's headings; its answers come from what it is sent.
fn script(llm: &FakeLlm) {
    llm.on_every(
        SUMMARIZER,
        Reply::computed(|all| {
            let mut facts: Vec<&str> = all.lines().filter(|l| l.contains("remember:")).collect();
            facts.dedup();
            let facts: Vec<String> =
                facts.iter().map(|l| format!("- {}", &l[l.find("remember:").unwrap_or(0)..])).collect();
            format!("Goals\n- none\nFacts learned\n{}\nOpen tasks\n- none", facts.join("\n"))
        }),
    );
    llm.on_every(
        "What is the code word",
        Reply::computed(|all| {
            let known = all.contains(FACT);
            if known { "The code word is tangerine." } else { "I do not know the code word." }.to_string()
        }),
    );
}

fn is_summary(r: &RecordedRequest) -> bool {
    r.last_user_text().contains(SUMMARIZER)
}

/// Everything posted so far is answered: no event waits or runs (two cheap counts, not a read
/// of the whole conversation).
async fn drained(app: &TestApp) -> bool {
    use butler::store::InboxStatus::{Pending, Processing};
    let store = &app.app.store;
    store.inbox_count(Pending).await.unwrap() + store.inbox_count(Processing).await.unwrap() == 0
}

/// Sends `n` short messages (message 3 tells the fact), a mailbox's worth at a time, then asks
/// for the fact; returns the answer. One conversation: they are answered in order.
async fn chat(app: &TestApp, conv: &str, n: usize) -> String {
    for i in 1..n {
        let text = if i == 3 { format!("message {i}: {FACT}") } else { format!("message {i}: nothing much") };
        app.post(conv, "local", &text).await;
        if i % 25 == 0 {
            eventually(&format!("the first {i} answers"), || drained(app)).await;
        }
    }
    app.post(conv, "local", "What is the code word?").await;
    eventually("every answer", || drained(app)).await;
    // The session's transcript: every message and its answer, in order.
    let session = app.app.store.session_active(&format!("dm:web:{conv}:local")).await.unwrap().unwrap();
    let all = app.app.store.messages_recent(&session.id, 10_000).await.unwrap();
    assert_eq!(all.len(), 2 * n, "every message was answered");
    all.last().unwrap().msg.content.clone()
}

#[tokio::test]
async fn a_fact_from_message_3_is_answered_at_message_300() {
    type Tune = fn(&mut Config);
    // (how, the window, messages)
    let cases: [(&str, Tune, usize); 2] = [
        // A window of a few hundred tokens for the conversation (the tools' schemas take the rest).
        (
            "a tight token window",
            |c| {
                c.llm.context_window = 4_600;
                c.llm.max_tokens = 200;
            },
            300,
        ),
        // Plenty of tokens, but only 10 messages after the checkpoint are sent.
        ("a small history_messages", |c| c.limits.history_messages = 10, 60),
    ];
    for (how, tune, n) in cases {
        let llm = FakeLlm::start().await;
        script(&llm);
        let (mut cfg, dir) = config(Some(&llm.openai_url()));
        tune(&mut cfg);
        let history = cfg.limits.history_messages;
        let app = TestApp::start(cfg, Some(dir)).await;
        let answer = chat(&app, "f", n).await;
        assert_eq!(answer, "The code word is tangerine.", "{how}");
        let reqs = llm.requests();
        assert!(reqs.iter().any(is_summary), "{how}: summaries were made");
        // Every request carried at most `history_messages` messages after its checkpoint.
        for r in reqs.iter().filter(|r| !is_summary(r)) {
            let users = user_texts(r).len();
            assert!(users <= history / 2 + 2, "{how}: {users} user messages in one request");
        }
        app.stop().await;
    }
}

/// Past `history_messages` a chat is folded down to three quarters of it: a summary every few
/// turns. Folding only the excess made a summary call at nearly every turn once past the limit.
#[tokio::test]
async fn past_history_messages_a_summary_comes_every_few_turns_not_every_turn() {
    let llm = FakeLlm::start().await;
    script(&llm);
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.limits.history_messages = 40;
    let app = TestApp::start(cfg, Some(dir)).await;
    let n = 60;
    assert_eq!(chat(&app, "q", n).await, "The code word is tangerine.");
    // 120 messages, 40 kept: folding the excess made about 40 summaries (one per turn past the
    // 20th); folding down to 30 makes one every five or six turns.
    let summaries = llm.requests().iter().filter(|r| is_summary(r)).count();
    assert!((3..=n / 4).contains(&summaries), "{summaries} summaries in {n} turns");
    app.stop().await;
}

#[tokio::test]
async fn a_backlog_is_folded_in_slices_that_fit_the_worker_and_a_refused_one_is_retried_with_less() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    // The worker writes the summaries, with a window far smaller than the main model's.
    let worker = LlmTier { model: Some("worker-model".into()), context_window: Some(2_500), ..Default::default() };
    cfg.llm.tiers.insert("worker".into(), worker);
    let app = TestApp::start(cfg, Some(dir)).await;
    // Thirty long messages, all sent whole (history_messages is 200 by default).
    for i in 1..=30 {
        let text = format!("message {i}: {}", if i == 3 { FACT.to_string() } else { "lorem ipsum ".repeat(30) });
        app.post("w", "local", &text).await;
        replies(&app, "w", i).await;
    }
    assert_eq!(llm.requests().iter().filter(|r| is_summary(r)).count(), 0, "nothing folded yet");
    // Restarted with history_messages = 6: the next request folds the backlog first. The first
    // summary request is refused as too long; then summaries come as scripted.
    let (mut cfg, dir) = (app.config.clone(), app._dir);
    app.app.shutdown().await;
    cfg.limits.history_messages = 6;
    llm.on(SUMMARIZER, Reply::context_too_long());
    script(&llm);
    let app = TestApp::start(cfg, dir).await;
    app.post("w", "local", "What is the code word?").await;
    assert_eq!(replies(&app, "w", 31).await.pop().unwrap(), "The code word is tangerine.");
    let summaries: Vec<RecordedRequest> = llm.requests().into_iter().filter(is_summary).collect();
    assert!(summaries.len() >= 4, "the backlog was folded in slices: {}", summaries.len());
    assert!(summaries.iter().all(|r| r.model() == "worker-model"), "summaries run on the worker");
    for r in &summaries {
        let tokens = r.body.to_string().len() / 4;
        assert!(tokens <= 2_500 * 3 / 4, "a summary request of about {tokens} tokens passes the worker's window");
    }
    let messages = |r: &RecordedRequest| r.last_user_text().matches(": message ").count();
    let (refused, retry) = (messages(&summaries[0]), messages(&summaries[1]));
    assert!(refused >= 2 && retry <= refused / 2, "the retry after `too long` carries half: {retry} of {refused}");
    app.stop().await;
}

#[tokio::test]
async fn compact_folds_on_demand_and_says_so() {
    let llm = FakeLlm::start().await;
    script(&llm);
    let (cfg, dir) = config(Some(&llm.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    app.post("k", "local", "/compact").await;
    assert_eq!(replies(&app, "k", 1).await.pop().unwrap(), "Nothing to compact yet: the conversation is short.");
    for i in 2..=7 {
        let text = if i == 3 { format!("message {i}: {FACT}") } else { format!("message {i}: nothing much") };
        app.post("k", "local", &text).await;
        replies(&app, "k", i).await;
    }
    app.post("k", "local", "/compact").await;
    let said = replies(&app, "k", 8).await.pop().unwrap();
    assert!(said.starts_with("🗜 Folded ") && said.contains("earlier messages"), "{said}");
    let session = app.app.store.session_active("dm:web:k:local").await.unwrap().unwrap();
    let summary = app.app.store.summary_latest(&session.id).await.unwrap().expect("a checkpoint");
    assert!(summary.text.contains(FACT), "{}", summary.text);
    app.post("k", "local", "What is the code word?").await;
    assert_eq!(replies(&app, "k", 9).await.pop().unwrap(), "The code word is tangerine.");
    app.stop().await;
}
