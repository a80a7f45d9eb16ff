//! Point 7: a 429 with `Retry-After` holds that method (and only it) for the time Slack asked;
//! the replies wait in the outbox and all go out, once each. With the replicas' shared gate
//! (issue 18) the hold applies on every replica.

use crate::support::fake_llm::Reply;
use crate::support::fake_slack::payloads as p;
use crate::support::fake_slack::{FakeSlack, BOT_TOKEN};
use crate::support::gates;
use crate::{start, Setup, ALICE, BOB, BOSS};
use butler::channel::{Channel, ChannelError, ConversationRef, Outbound};
use butler_slack::{SlackChannel, SlackSettings};
use std::time::Duration;

#[tokio::test]
async fn retry_after_is_honoured_per_method_and_nothing_is_dropped() {
    let rig = start(Setup::default()).await;
    rig.slack.rate_limit_next("chat.postMessage", 1, 2);
    let people = [(ALICE, "DALICE"), (BOB, "DBOB"), (BOSS, "DBOSS")];
    let dm = |(user, dm): (&str, &str)| {
        p::callback(&p::event_id(), p::message(user, dm, "im", &format!("hello from {dm}"), &p::ts(), None))
    };
    assert_eq!(rig.send.event(&dm(people[0]), None).await.status, 200);
    rig.slack.wait(10, "a 429", |f| f.calls_of("chat.postMessage").iter().any(|c| c.status == 429)).await;
    // Two more conversations while chat.postMessage is held.
    for who in &people[1..] {
        assert_eq!(rig.send.event(&dm(*who), None).await.status, 200);
    }
    for (_, dm) in people {
        rig.slack.wait_text(dm, &format!("echo: hello from {dm}")).await;
    }
    rig.slack.assert_quiet(1500).await;
    for (_, dm) in people {
        assert_eq!(rig.slack.messages(dm).len(), 1, "{dm}: delivered once");
    }
    let posts = rig.slack.calls_of("chat.postMessage");
    let first = posts.iter().find(|c| c.status == 429).unwrap().at;
    // No chat.postMessage reaches Slack until Retry-After (2 s) has passed...
    let window = first..first + Duration::from_millis(1950);
    let too_soon: Vec<_> =
        posts.iter().filter(|c| c.at > first && window.contains(&c.at)).map(|c| c.at - first).collect();
    assert!(too_soon.is_empty(), "calls inside the Retry-After window: {too_soon:?}");
    assert_eq!(posts.iter().filter(|c| c.status == 200).count(), 3);
    // ...while other methods go on (the working reactions of the two later messages).
    let reactions = rig.slack.calls_of("reactions.add");
    assert!(reactions.iter().any(|c| c.status == 200 && window.contains(&c.at)), "reactions were held too");
    rig.app.stop().await;
}

#[tokio::test]
async fn a_rate_limited_streaming_edit_still_ends_with_the_final_text() {
    let rig = start(Setup::default()).await;
    let words: Vec<String> = (0..30).map(|i| format!("w{i} ")).collect();
    let full: String = words.concat();
    rig.llm.on("stream", Reply::chunks(words).chunk_delay(Duration::from_millis(100)));
    rig.slack.rate_limit_next("chat.update", 3, 1);
    rig.send
        .event(&p::callback(&p::event_id(), p::message(ALICE, "DALICE", "im", "stream", &p::ts(), None)), None)
        .await;
    rig.slack
        .wait(20, "the final text", |f| {
            f.messages("DALICE").first().is_some_and(|m| m.shown().trim() == full.trim() && m.buttons.is_empty())
        })
        .await;
    assert_eq!(rig.slack.messages("DALICE").len(), 1);
    assert!(rig.slack.calls_of("chat.update").iter().any(|c| c.status == 429));
    rig.app.stop().await;
}

/// Issue 18 point 4: with the replicas' shared gate, a 429 one replica got holds the method on
/// the other too: its call is not sent while the hold lasts, and goes through after it.
#[tokio::test]
async fn a_429_on_one_replica_holds_the_method_on_the_other() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let slack = FakeSlack::start().await;
    let (gates, _) = gates::replicas(2).await;
    let mut replicas = Vec::new();
    for gate in &gates {
        let settings = SlackSettings {
            bot_token: BOT_TOKEN.into(),
            signing_secret: None,
            app_token: None,
            api_url: slack.api_url(),
            remembered_threads: 10,
            working_reaction: None,
            gate: gate.clone(),
            link_previews: false,
        };
        replicas.push(SlackChannel::connect(settings).await.unwrap());
    }
    let msg = |text: &str| Outbound::text(ConversationRef::new("slack", "DALICE"), text);
    slack.rate_limit_next("chat.postMessage", 1, 2);
    // (replica, what its send must come back with: None = sent, Some = held this long at least)
    let steps: [(usize, Option<Duration>); 2] =
        [(0, Some(Duration::from_secs(1))), (1, Some(Duration::from_millis(1500)))];
    for (r, held) in steps {
        match (replicas[r].send(&msg(&format!("from {r}"))).await, held) {
            (Err(ChannelError::RateLimited { retry_after }), Some(min)) => {
                assert!(retry_after >= min && retry_after <= Duration::from_secs(2), "replica {r}: {retry_after:?}")
            }
            (other, _) => panic!("replica {r}: {other:?}"),
        }
    }
    assert_eq!(slack.calls_of("chat.postMessage").len(), 1, "the held call never reached Slack");
    assert!(replicas[1].send(&msg("reply")).await.is_err(), "still held");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    replicas[1].send(&msg("after the wait")).await.unwrap();
    assert_eq!(slack.messages("DALICE").len(), 1);
}
