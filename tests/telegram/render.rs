//! Point 3 through the whole path: the agent's Markdown arrives as Telegram HTML the fake parses
//! like Telegram (bold, code, pre with language, links, escaped specials); a long answer comes
//! in chunks of at most 4,096 UTF-16 units, code blocks whole in each, emoji intact; a typing
//! indicator while the turn runs; streaming edits one message at most once per second, and
//! the final text always lands, "message is not modified" or not.

use crate::support::fake_llm::Reply;
use crate::support::fake_telegram::updates::dm;
use crate::support::fake_telegram::Failure;
use crate::{Tg, OWNER};
use std::time::Duration;

#[tokio::test]
async fn markdown_becomes_telegram_html() {
    let tg = Tg::start().await;
    tg.polling().await;
    let md = "**Done**: run `ls <dir> & echo` then see [the docs](https://example.com/a?b=1&c=2).\n\n\
              ```rust\nfn main() { if a < b && c > d {} }\n```\n\n- one\n- *two*";
    tg.llm.on("format", Reply::text(md));
    tg.fake.push(dm(OWNER, 1, "format please"));
    let shown = tg.fake.wait_chat(OWNER, 20, "the answer", |m| !m.is_empty()).await;
    let m = &shown[0];
    assert_eq!(
        m.text,
        "Done: run ls <dir> & echo then see the docs.\n\nfn main() { if a < b && c > d {} }\n\n• one\n• two"
    );
    let kinds: Vec<(&str, &str, Option<&str>)> =
        m.entities.iter().map(|e| (e.kind.as_str(), e.text.as_str(), e.value.as_deref())).collect();
    for want in [
        ("bold", "Done", None),
        ("code", "ls <dir> & echo", None),
        ("text_link", "the docs", Some("https://example.com/a?b=1&c=2")),
        ("code", "fn main() { if a < b && c > d {} }", Some("language-rust")),
        ("pre", "fn main() { if a < b && c > d {} }", None),
        ("italic", "two", None),
    ] {
        assert!(kinds.contains(&want), "{want:?} not among {kinds:?}");
    }
    tg.stop().await;
}

#[tokio::test]
async fn long_answers_come_in_whole_chunks() {
    let tg = Tg::start().await;
    tg.polling().await;
    // ~10,000 UTF-16 units: prose with emoji (surrogate pairs), then a long code block.
    let prose: String =
        (0..60).map(|i| format!("Paragraph {i} with **bold** and 😀 emoji 😀😀 {}\n\n", "word ".repeat(20))).collect();
    let code: String = (0..150).map(|i| format!("let value_{i} = compute({i}) * 2; // 🚀\n")).collect();
    let md = format!("{prose}```rust\n{code}```\n\nThe end.");
    tg.llm.on("long", Reply::text(&md));
    tg.fake.push(dm(OWNER, 1, "long answer please"));
    let shown = tg
        .fake
        .wait_chat(OWNER, 30, "the last chunk", |m| m.last().is_some_and(|m| m.text.ends_with("The end.")))
        .await;
    assert!(shown.len() >= 3, "{} chunks", shown.len());
    let mut code_lines = 0;
    for m in &shown {
        assert!(m.text.encode_utf16().count() <= 4096, "a chunk of {} units", m.text.encode_utf16().count());
        // The fake parsed every chunk's HTML like Telegram: tags balanced, entities whole.
        for e in &m.entities {
            if e.kind == "bold" {
                assert!(e.text.starts_with("bold"), "a bold entity cut: {:?}", e.text);
            }
        }
        let pre: Vec<_> = m.entities.iter().filter(|e| e.kind == "pre").collect();
        for p in &pre {
            for line in p.text.lines() {
                assert!(line.starts_with("let value_") && line.ends_with("// 🚀"), "a code line cut: {line:?}");
                code_lines += 1;
            }
        }
        assert!(!m.text.contains("```"), "fences are rendered, never shown");
    }
    assert_eq!(code_lines, 150, "every code line arrived inside a code block");
    let emoji: usize = shown.iter().map(|m| m.text.matches('😀').count()).sum();
    assert_eq!(emoji, 180, "no emoji split or lost");
    tg.stop().await;
}

#[tokio::test]
async fn streaming_edits_one_message_at_most_once_a_second() {
    let tg = Tg::start().await;
    tg.polling().await;
    let words: Vec<String> = (0..40).map(|i| format!("w{i} ")).collect();
    tg.llm.on("stream", Reply::chunks(words.clone()).chunk_delay(Duration::from_millis(100)));
    // One draft edit is refused as "not modified": tolerated.
    tg.fake.fail_next("editMessageText", Failure::NotModified);
    tg.fake.push(dm(OWNER, 1, "stream please"));
    let want = words.concat().trim_end().to_string();
    let shown = tg
        .fake
        .wait_chat(OWNER, 30, "the final text", |m| m.len() == 1 && m[0].text == want && m[0].buttons.is_empty())
        .await;
    assert!(shown[0].edits >= 1, "the draft was edited in place");

    let typing = tg.fake.calls("sendChatAction");
    let first_send = &tg.fake.calls("sendMessage")[0];
    assert!(typing.first().is_some_and(|t| t.at <= first_send.at && t.body["action"] == "typing"), "typing first");
    assert_eq!(tg.fake.calls("sendMessage").len(), 1, "one message, edited");
    let draft = &first_send.body;
    assert!(draft["reply_markup"]["inline_keyboard"][0][0]["callback_data"].as_str().unwrap().starts_with("stop:"));
    let edits = tg.fake.calls("editMessageText");
    let mut prev = first_send.at;
    for e in &edits {
        assert!(e.at.duration_since(prev) >= Duration::from_millis(900), "edits {:?} apart", e.at.duration_since(prev));
        prev = e.at;
    }
    assert!(
        tg.fake.violations(Duration::from_millis(900)).is_empty(),
        "{:?}",
        tg.fake.violations(Duration::from_millis(900))
    );
    tg.stop().await;
}
