//! Point 5: one send scheduler keeps Butler under Telegram's limits (1 message per second per
//! chat, 30 per second overall); a 429 is waited out for its retry_after and the message still
//! arrives once; a 5xx is retried; nothing is dropped. With several replicas (issue 18) the
//! limits and a 429's hold are kept in the shared gate, so they hold for the bot as a whole.

use crate::support::fake_telegram::updates::{dm, user};
use crate::support::fake_telegram::{Failure, FakeTelegram};
use crate::support::gates;
use crate::{tls, Tg, OWNER, TOKEN};
use butler::channel::limit::Gate;
use butler::channel::{Channel, ConversationRef, Outbound};
use butler::config::AccessPolicy;
use butler_telegram::{Limits, Mode, Settings, TelegramChannel};
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// Two channels for one bot (two replicas) on the fake, their limits in `gates`.
async fn replicas(fake: &FakeTelegram, gates: &[Gate], per_chat: Duration) -> Vec<Arc<TelegramChannel>> {
    tls();
    let mut out = Vec::new();
    for gate in gates {
        let settings = Settings {
            token: TOKEN.into(),
            api_url: fake.api_url(),
            mode: Mode::Polling { timeout: Duration::from_secs(1) },
            commands: vec![],
            limits: Limits { per_chat, per_second: 30 },
            gate: gate.clone(),
            link_previews: false,
        };
        out.push(TelegramChannel::connect(settings).await.unwrap());
    }
    out
}

/// Issue 18 point 4: with a shared gate, two replicas sending to one chat together keep its
/// limit as one process would (their waits add up); with gates of their own they would not.
#[tokio::test]
async fn two_replicas_keep_one_chats_limit_together() {
    let per_chat = Duration::from_millis(400);
    // (shared gate, each replica's sends, expected: smallest gap between two sends at least)
    let cases = [(true, 3, Some(Duration::from_millis(370))), (false, 3, None)];
    for (shared, sends, min_gap) in cases {
        let fake = FakeTelegram::start(TOKEN).await;
        let gates = if shared { gates::replicas(2).await.0 } else { vec![Gate::local(), Gate::local()] };
        let channels = replicas(&fake, &gates, per_chat).await;
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for (r, channel) in channels.iter().enumerate() {
            for i in 0..sends {
                let channel = channel.clone();
                let msg = Outbound::text(ConversationRef::new("telegram", OWNER.to_string()), format!("r{r} m{i}"));
                tasks.spawn(async move { channel.send(&msg).await.map(|_| ()) });
            }
        }
        while let Some(sent) = tasks.join_next().await {
            sent.unwrap().unwrap();
        }
        let calls = fake.calls("sendMessage");
        assert_eq!(calls.len(), 2 * sends, "shared={shared}: every message sent once");
        let gaps: Vec<Duration> = calls.windows(2).map(|w| w[1].at.duration_since(w[0].at)).collect();
        let smallest = gaps.iter().min().copied().unwrap();
        match min_gap {
            Some(min) => {
                assert!(smallest >= min, "shared gate: two sends to one chat {smallest:?} apart ({gaps:?})");
                // Six sends at 400 ms: the waits of both replicas add up to five intervals.
                let took = started.elapsed();
                assert!(took >= per_chat * 5 - Duration::from_millis(100), "done after {took:?}");
            }
            None => assert!(smallest < per_chat / 2, "gates of their own do not see each other ({gaps:?})"),
        }
    }
}

/// Issue 18 point 4: a 429 one replica got holds the chat for the other replica too.
#[tokio::test]
async fn a_429_on_one_replica_holds_the_chat_on_the_other() {
    let fake = FakeTelegram::start(TOKEN).await;
    let (gates, _) = gates::replicas(2).await;
    let channels = replicas(&fake, &gates, Duration::from_millis(100)).await;
    let to_owner = |text: &str| Outbound::text(ConversationRef::new("telegram", OWNER.to_string()), text);
    fake.fail_next("sendMessage", Failure::RetryAfter(2));
    let first = tokio::spawn({
        let (a, msg) = (channels[0].clone(), to_owner("from a"));
        async move { a.send(&msg).await.map(|_| ()) }
    });
    let refused = fake.wait_calls("sendMessage", 1, 10).await[0].at;
    // Replica A has the 429 and holds the chat in the shared gate; B's message waits it out.
    tokio::time::sleep(Duration::from_millis(200)).await;
    channels[1].send(&to_owner("from b")).await.unwrap();
    first.await.unwrap().unwrap();
    let calls = fake.calls("sendMessage");
    assert_eq!(calls.len(), 3, "the refused send, its retry and B's send");
    for c in &calls[1..] {
        let after = c.at.duration_since(refused);
        assert!(after >= Duration::from_millis(1900), "{} went {after:?} after the 429", c.body["text"]);
    }
}
