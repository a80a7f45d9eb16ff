//! Point 4: the agent's Markdown arrives as Slack mrkdwn; long answers are split within Slack's
//! limits (3,000 characters per section, 40,000 per message; the fake refuses anything larger,
//! as Slack does) without breaking code blocks; streaming edits one message by chat.update at
//! most once a second and always ends with the final text.

use crate::support::fake_llm::Reply;
use crate::support::fake_slack::payloads as p;
use crate::{start, Setup, ALICE};
use std::time::Duration;

async fn ask(rig: &crate::Rig, channel: &str, text: &str) -> String {
    let ts = p::ts();
    let a = rig.send.event(&p::callback(&p::event_id(), p::mention(ALICE, channel, text, &ts, None)), None).await;
    assert_eq!(a.status, 200);
    ts
}

#[tokio::test]
async fn markdown_becomes_mrkdwn() {
    let rig = start(Setup::default()).await;
    let md = "# Plan\n**Bold** & <b>tags</b> with [a link](https://example.com/?a=1&b=2)\n\n- first\n  - nested\n1. one\n\n```rust\nif a < b && c > d {}\n```\n\n| k | v |\n|---|---|\n| x | 1 |";
    rig.llm.on("format please", Reply::text(md));
    let thread = ask(&rig, "CFMT", "format please").await;
    let m = rig.slack.wait_text("CFMT", "*Plan*").await;
    assert_eq!(m.thread_ts.as_deref(), Some(thread.as_str()));
    rig.slack.wait(10, "the final text", |f| f.messages("CFMT")[0].buttons.is_empty()).await;
    let shown = rig.slack.messages("CFMT")[0].shown();
    let want = "*Plan*\n*Bold* &amp; &lt;b&gt;tags&lt;/b&gt; with <https://example.com/?a=1&amp;b=2|a link>\n\n• first\n    ◦ nested\n1. one\n\n```\nif a &lt; b &amp;&amp; c &gt; d {}\n```\n\n```\nk | v\n--+--\nx | 1\n```";
    assert_eq!(shown, want);
    rig.app.stop().await;
}

#[tokio::test]
async fn long_answers_split_within_slacks_limits_without_breaking_code() {
    let rig = start(Setup::default()).await;
    let mut md = String::new();
    for i in 0..12 {
        md.push_str(&format!("## Part {i}\n\n{}\n\n", "Some words & more words. ".repeat(60)));
        md.push_str("```python\n");
        for j in 0..60 {
            md.push_str(&format!("print('part {i} line {j}')  # < code >\n"));
        }
        md.push_str("```\n\n");
    }
    assert!(md.chars().count() > 40_000, "{}", md.chars().count());
    rig.llm.on("long please", Reply::text(&md));
    let thread = ask(&rig, "CLONG", "long please").await;
    rig.slack
        .wait(30, "the whole answer", |f| f.messages("CLONG").iter().any(|m| m.shown().contains("part 11 line 59")))
        .await;
    rig.slack.wait(10, "the final text", |f| f.messages("CLONG").iter().all(|m| m.buttons.is_empty())).await;
    let msgs = rig.slack.messages("CLONG");
    assert!(msgs.len() >= 2, "more than one message: {}", msgs.len());
    let mut all = String::new();
    for m in &msgs {
        assert_eq!(m.thread_ts.as_deref(), Some(thread.as_str()), "every part in the thread");
        assert!(m.text.chars().count() <= 40_000);
        let total: usize = m.sections.iter().map(|s| s.chars().count()).sum();
        assert!(total <= 50 * 3_000 && m.sections.len() <= 50);
        for s in &m.sections {
            assert!(s.chars().count() <= 3_000, "a section of {}", s.chars().count());
            let fences = s.lines().filter(|l| l.trim() == "```").count();
            assert_eq!(fences % 2, 0, "a section with a broken code block:\n{s}");
        }
        all.push_str(&m.shown());
        all.push('\n');
    }
    for i in 0..12 {
        for j in 0..60 {
            let line = format!("print('part {i} line {j}')  # &lt; code &gt;");
            assert_eq!(all.matches(&line).count(), 1, "{line} appears once");
        }
    }
    assert!(rig.slack.calls().iter().all(|c| c.error.is_none()), "Slack refused nothing");
    rig.app.stop().await;
}

#[tokio::test]
async fn streaming_edits_at_most_once_a_second_and_ends_with_the_final_text() {
    let rig = start(Setup::default()).await;
    let words: Vec<String> = (0..45).map(|i| format!("word{i} ")).collect();
    let full: String = words.concat();
    rig.llm.on("stream please", Reply::chunks(words.clone()).chunk_delay(Duration::from_millis(80)));
    ask(&rig, "CSTREAM", "stream please").await;
    rig.slack
        .wait(20, "the final text", |f| {
            f.messages("CSTREAM").first().is_some_and(|m| m.shown().trim() == full.trim() && m.buttons.is_empty())
        })
        .await;
    rig.slack.assert_quiet(1500).await;
    let msgs = rig.slack.messages("CSTREAM");
    assert_eq!(msgs.len(), 1, "one message, edited in place");
    let m = &msgs[0];
    let updates = rig.slack.calls_of("chat.update").into_iter().filter(|c| c.params["ts"] == m.ts.as_str()).count();
    assert_eq!(updates + 1, m.writes.len());
    assert!(updates >= 2, "streamed by chat.update ({updates} updates)");
    // 45 chunks over ~3.6 s: at most one write a second (plus the first post and the final edit).
    assert!(m.writes.len() <= 7, "{} writes", m.writes.len());
    let gaps: Vec<Duration> = m.writes.windows(2).map(|w| w[1] - w[0]).collect();
    let min = gaps.iter().min().unwrap();
    assert!(*min >= Duration::from_millis(950), "writes closer than a second: {gaps:?}");
    rig.app.stop().await;
}
