//! Point 5: one send scheduler keeps Butler under Telegram's limits (1 message per second per
//! chat, 30 per second overall); a 429 is waited out for its retry_after and the message still
//! arrives once; a 5xx is retried; nothing is dropped.

use crate::support::fake_telegram::updates::{dm, user};
use crate::support::fake_telegram::Failure;
use crate::{Tg, OWNER};
use butler::config::AccessPolicy;
use std::time::Duration;

#[tokio::test]
async fn one_chat_one_message_a_second_and_thirty_a_second_overall() {
    let tg = Tg::start_with(|cfg| cfg.access.policy = AccessPolicy::Open, vec![]).await;
    tg.polling().await;
    // Five questions from the owner at once (one session: answered in turn) ...
    for i in 0..5 {
        tg.fake.push(dm(OWNER, i + 1, &format!("q{i}")));
    }
    // ... and 60 people asking at the same moment.
    for u in 0..60 {
        let id = 10_000 + u;
        let mut update = dm(id, 1, &format!("hi from {u}"));
        update["message"]["from"] = user(id, &format!("P{u}"));
        tg.fake.push(update);
    }
    tg.fake.wait_chat(OWNER, 30, "five answers", |m| m.len() == 5).await;
    for u in 0..60 {
        tg.fake.wait_chat(10_000 + u, 30, "an answer", |m| m.len() == 1).await;
    }
    let sends = tg.fake.calls("sendMessage");
    assert_eq!(sends.len(), 65, "every answer sent once");
    let owner: Vec<_> = sends.iter().filter(|c| c.body["chat_id"] == OWNER).collect();
    for pair in owner.windows(2) {
        let gap = pair[1].at.duration_since(pair[0].at);
        assert!(gap >= Duration::from_millis(900), "two messages to one chat {gap:?} apart");
    }
    let violations = tg.fake.violations(Duration::from_millis(900));
    assert!(violations.is_empty(), "{violations:?}");
    // 65 messages at 30/s need a bit more than two seconds: the scheduler paces, it does not stall.
    let span = sends.last().unwrap().at.duration_since(sends[0].at);
    assert!(span >= Duration::from_millis(1900) && span < Duration::from_secs(15), "{span:?}");
    tg.stop().await;
}

#[tokio::test]
async fn a_429_is_honoured_and_the_message_still_arrives_once() {
    let tg = Tg::start().await;
    tg.polling().await;
    tg.fake.fail_next("sendMessage", Failure::RetryAfter(2));
    tg.fake.push(dm(OWNER, 1, "slow down"));
    let shown = tg.fake.wait_chat(OWNER, 20, "the answer", |m| !m.is_empty()).await;
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0].text, "echo: slow down");
    let sends = tg.fake.calls("sendMessage");
    assert_eq!(sends.len(), 2, "the refused send and its retry");
    let waited = sends[1].at.duration_since(sends[0].at);
    assert!(waited >= Duration::from_millis(1950), "retried after {waited:?}, before retry_after");

    // A 429 on a streamed edit: the draft waits, the final text still lands.
    tg.fake.fail_next("editMessageText", Failure::RetryAfter(1));
    tg.fake.fail_next("editMessageText", Failure::RetryAfter(1));
    tg.llm.on(
        "stream",
        crate::support::fake_llm::Reply::chunks((0..20).map(|i| format!("s{i} ")))
            .chunk_delay(Duration::from_millis(150)),
    );
    tg.fake.push(dm(OWNER, 2, "stream it"));
    let want: String = (0..20).map(|i| format!("s{i} ")).collect::<String>().trim_end().to_string();
    tg.fake
        .wait_chat(OWNER, 30, "the streamed answer", |m| m.len() == 2 && m[1].text == want && m[1].buttons.is_empty())
        .await;
    tg.stop().await;
}

#[tokio::test]
async fn a_server_error_is_retried_and_nothing_is_dropped() {
    let tg = Tg::start().await;
    tg.polling().await;
    tg.fake.fail_next("sendMessage", Failure::Server(500));
    tg.fake.push(dm(OWNER, 1, "are you there"));
    // teloxide waits 10 s after a 5xx before it reports it; the outbox then retries.
    let shown = tg.fake.wait_chat(OWNER, 40, "the answer", |m| !m.is_empty()).await;
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0].text, "echo: are you there");
    assert_eq!(tg.fake.calls("sendMessage").len(), 2);
    tg.stop().await;
}
