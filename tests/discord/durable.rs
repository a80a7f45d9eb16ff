//! The adapter's core rule, checked on `butler_discord` directly with an inbox that fails on
//! purpose: a dispatch counts as processed only once `Ingress::accept` made it durable. When
//! the inbox cannot take an event, Butler drops the socket and resumes from the last event it
//! did store, so Discord replays the failed one; a click is acknowledged only after it is
//! stored. Nothing is lost, nothing is stored twice, order is kept.

use crate::support::fake_discord::payloads::UserMessage;
use crate::support::fake_discord::{FakeDiscord, TOKEN};
use crate::{alice, bob, DM};
use butler::channel::{Accepted, Channel, InboundEvent, Ingress, IngressError};
use butler_discord::{Discord, Settings};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// An inbox that refuses the events whose id contains `flaky` a number of times.
#[derive(Default)]
struct FlakyInbox {
    flaky: Mutex<Vec<(String, usize)>>,
    stored: Mutex<Vec<(Instant, String)>>,
}

#[async_trait::async_trait]
impl Ingress for FlakyInbox {
    async fn accept(&self, event: InboundEvent) -> Result<Accepted, IngressError> {
        {
            let mut flaky = self.flaky.lock().unwrap();
            if let Some((_, left)) =
                flaky.iter_mut().find(|(needle, left)| *left > 0 && event.id.0.contains(needle.as_str()))
            {
                *left -= 1;
                return Err(IngressError::Unavailable("the test inbox is down".into()));
            }
        }
        let mut stored = self.stored.lock().unwrap();
        if stored.iter().any(|(_, id)| *id == event.id.0) {
            return Ok(Accepted::Duplicate);
        }
        stored.push((Instant::now(), event.id.0));
        Ok(Accepted::New)
    }
}

impl FlakyInbox {
    fn ids(&self) -> Vec<String> {
        self.stored.lock().unwrap().iter().map(|(_, id)| id.clone()).collect()
    }
}

#[tokio::test]
async fn what_the_inbox_cannot_take_is_replayed_and_clicks_wait_for_it() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = FakeDiscord::start().await;
    let settings = Settings {
        token: TOKEN.into(),
        api_url: fake.url(),
        public_key: None,
        gate: Default::default(),
        link_previews: false,
    };
    let discord = Discord::new(settings).unwrap();
    let inbox = Arc::new(FlakyInbox::default());
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (discord, inbox, cancel) = (discord.clone(), inbox.clone(), cancel.clone());
        async move { discord.run(inbox, cancel).await }
    });
    fake.wait_connected().await;

    let a = fake.post(UserMessage::new(&fake.snowflake(), DM, &alice(), "a"));
    let stored_a = format!("discord:message:{}", a["id"].as_str().unwrap());
    fake.wait_for(10, "a stored", |_| inbox.ids().contains(&stored_a).then_some(())).await;
    let seq_a = fake.seq();

    // The inbox refuses "x" more often than Butler retries in place.
    let x_id = fake.snowflake();
    inbox.flaky.lock().unwrap().push((x_id.clone(), 4));
    fake.post(UserMessage::new(&x_id, DM, &alice(), "x"));
    let b = fake.post(UserMessage::new(&fake.snowflake(), DM, &alice(), "b"));
    let stored_b = format!("discord:message:{}", b["id"].as_str().unwrap());
    fake.wait_for(30, "b stored", |_| inbox.ids().contains(&stored_b).then_some(())).await;
    let log = fake.gateway_log();
    assert_eq!(log.identifies.len(), 1);
    assert_eq!(log.resumes.first(), Some(&seq_a), "resumed from the last stored event: {log:?}");
    assert_eq!(
        inbox.ids(),
        vec![stored_a.clone(), format!("discord:message:{x_id}"), stored_b.clone()],
        "in order, once"
    );

    // A click is acknowledged only once it is stored, even when storing takes a replay.
    let sent = fake.messages(DM)[0].clone();
    fake.wait_connected().await;
    inbox.flaky.lock().unwrap().push(("discord:interaction:".into(), 4));
    let click = fake.click(&bob(), &sent, "ap:x:once");
    let (acked_at, _, kind) =
        fake.wait_for(30, "the click acknowledged", |f| f.callbacks().into_iter().find(|(_, i, _)| *i == click)).await;
    assert_eq!(kind, 6);
    let stored_at = inbox
        .stored
        .lock()
        .unwrap()
        .iter()
        .find(|(_, id)| *id == format!("discord:interaction:{click}"))
        .map(|(t, _)| *t)
        .expect("the click is stored");
    assert!(stored_at <= acked_at, "acknowledged before it was stored");
    assert_eq!(fake.callbacks().iter().filter(|(_, i, _)| *i == click).count(), 1);

    cancel.cancel();
    assert!(task.await.unwrap().is_ok(), "the gateway stops cleanly on cancel");
}
