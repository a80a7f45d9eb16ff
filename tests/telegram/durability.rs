//! Point 6: nothing lost or doubled. The polling offset moves past an update only after the
//! ingress made it durable (an ingress that fails gets the same updates again); the webhook
//! answers 503 until the update is stored; a repeated update_id is answered once; and the real
//! binary, SIGKILLed while updates are pending and turns are running, answers every one of them
//! exactly once after a restart.

use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::fake_telegram::updates::dm;
use crate::support::fake_telegram::FakeTelegram;
use crate::support::proc::Deployment;
use crate::{settle, tls, Tg, OWNER, TOKEN};
use async_trait::async_trait;
use butler::channel::{Accepted, Channel, InboundEvent, Ingress, IngressError};
use butler_telegram::{Limits, Mode, Settings, TelegramChannel};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// An ingress that is unavailable for its first `failures` calls and records what it stored.
struct Flaky {
    failures: AtomicUsize,
    stored: Mutex<BTreeMap<String, Instant>>,
}

#[async_trait]
impl Ingress for Flaky {
    async fn accept(&self, event: InboundEvent) -> Result<Accepted, IngressError> {
        if self.failures.load(Ordering::SeqCst) > 0 {
            self.failures.fetch_sub(1, Ordering::SeqCst);
            return Err(IngressError::Unavailable("database is down".into()));
        }
        let mut stored = self.stored.lock().unwrap();
        Ok(match stored.contains_key(&event.id.0) {
            true => Accepted::Duplicate,
            false => {
                stored.insert(event.id.0.clone(), Instant::now());
                Accepted::New
            }
        })
    }
}

fn settings(fake: &FakeTelegram, mode: Mode) -> Settings {
    Settings {
        token: TOKEN.into(),
        api_url: fake.api_url(),
        mode,
        commands: vec![],
        limits: Limits::default(),
        gate: butler::channel::limit::Gate::local(),
        link_previews: false,
    }
}

#[tokio::test]
async fn the_offset_moves_only_past_stored_updates() {
    tls();
    let fake = FakeTelegram::start(TOKEN).await;
    let ids: Vec<i64> = (1..=6).map(|i| fake.push(dm(OWNER, i, &format!("m{i}")))).collect();
    let ingress = Arc::new(Flaky { failures: AtomicUsize::new(3), stored: Mutex::new(BTreeMap::new()) });
    let channel =
        TelegramChannel::connect(settings(&fake, Mode::Polling { timeout: Duration::from_secs(1) })).await.unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (channel, ingress, cancel) = (channel.clone(), ingress.clone(), cancel.clone());
        async move { channel.run(ingress, cancel).await }
    });
    for _ in 0..200 {
        if ingress.stored.lock().unwrap().len() == ids.len() && fake.pending() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cancel.cancel();
    run.await.unwrap().unwrap();
    let stored = ingress.stored.lock().unwrap().clone();
    assert_eq!(stored.len(), ids.len(), "every update stored");
    assert_eq!(fake.pending(), 0, "and then confirmed");
    // While the ingress failed, the same updates were fetched again.
    let handed = fake.handed_out();
    assert!(handed.iter().filter(|id| **id == ids[0]).count() >= 2, "{handed:?}");
    // Every offset sent confirmed only updates already stored before that call.
    for call in fake.calls("getUpdates") {
        let Some(offset) = call.body["offset"].as_i64() else { continue };
        for id in ids.iter().filter(|id| **id < offset) {
            let at = stored.get(&format!("telegram:update:{id}")).unwrap_or_else(|| panic!("{id} confirmed unstored"));
            assert!(*at < call.at, "update {id} confirmed (offset {offset}) before it was stored");
        }
    }
}

#[tokio::test]
async fn the_webhook_answers_503_until_the_update_is_stored() {
    tls();
    let fake = FakeTelegram::start(TOKEN).await;
    let mode = Mode::Webhook { url: "https://example.com/channels/telegram/webhook".into(), secret: "abc".into() };
    let channel = TelegramChannel::connect(settings(&fake, mode)).await.unwrap();
    let ingress = Arc::new(Flaky { failures: AtomicUsize::new(1), stored: Mutex::new(BTreeMap::new()) });
    let router = butler_telegram::webhook_routes(channel, ingress.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, router).await });
    let mut update = dm(OWNER, 1, "hello");
    update["update_id"] = 5.into();
    let http = reqwest::Client::new();
    let post = || {
        http.post(format!("http://{addr}{}", butler_telegram::WEBHOOK_PATH))
            .header("X-Telegram-Bot-Api-Secret-Token", "abc")
            .json(&update)
            .send()
    };
    assert_eq!(post().await.unwrap().status(), 503, "not stored: Telegram must redeliver");
    assert!(ingress.stored.lock().unwrap().is_empty());
    assert_eq!(post().await.unwrap().status(), 200);
    assert_eq!(post().await.unwrap().status(), 200, "a redelivery is acknowledged too");
    assert_eq!(ingress.stored.lock().unwrap().len(), 1);
    server.abort();
}

#[tokio::test]
async fn a_repeated_update_id_is_answered_once() {
    let tg = Tg::start().await;
    tg.polling().await;
    let mut update = dm(OWNER, 1, "only once");
    update["update_id"] = 777_001.into();
    tg.fake.push(update.clone());
    tg.fake.push(update);
    assert_eq!(tg.texts(OWNER, 1).await, vec!["echo: only once"]);
    settle().await;
    assert_eq!(tg.fake.chat(OWNER).len(), 1);
    assert_eq!(tg.llm.request_count(), 1);
    tg.stop().await;
}

/// Answers per question: (chat, round) -> sendMessage calls carrying its answer
/// (`echo: q<round> from <chat>`).
fn answers(fake: &FakeTelegram) -> BTreeMap<(i64, i64), usize> {
    let mut out = BTreeMap::new();
    for c in fake.calls("sendMessage") {
        let (Some(chat), Some(text)) = (c.body["chat_id"].as_i64(), c.body["text"].as_str()) else { continue };
        let round = text.strip_prefix("echo: q").and_then(|r| r.split(' ').next()).and_then(|r| r.parse().ok());
        if let Some(round) = round {
            *out.entry((chat, round)).or_insert(0) += 1;
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_with_pending_updates_loses_and_doubles_nothing() {
    let fake = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    llm.set_default(Reply::echo().first_byte_delay(Duration::from_millis(1500)));
    let users = [OWNER, 112, 113];
    let owners: Vec<String> = users.iter().map(|u| format!("\"telegram:{u}\"")).collect();
    let dep = Deployment::new(&format!(
        "[llm]\nprovider = \"openai\"\nbase_url = \"{}\"\nmodel = \"fake-model\"\nmax_retries = 0\n\n\
         [access]\nowners = [{}]\n\n[channels.telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\npoll_timeout_secs = 2\n",
        llm.openai_url(),
        owners.join(", "),
        fake.api_url()
    ));
    let mut questions = Vec::new();
    let mut ask = |round: i64| {
        for u in users {
            fake.push(dm(u, round, &format!("q{round} from {u}")));
            questions.push((u, round));
        }
    };
    ask(1);
    let server = dep.serve().await;
    // Turns are running (the model is slow) when the process dies; more updates arrive just
    // before and while it is down.
    let deadline = Instant::now() + Duration::from_secs(20);
    while llm.request_count() < users.len() {
        assert!(Instant::now() < deadline, "the turns never started:\n{}", server.log_text());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    ask(2);
    server.kill();
    assert!(answers(&fake).is_empty(), "killed before any answer: {:?}", answers(&fake));
    ask(3);
    assert!(fake.pending() >= users.len(), "updates are waiting at Telegram");

    let server = dep.serve().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = answers(&fake);
        if questions.iter().all(|q| got.contains_key(q)) {
            break;
        }
        assert!(Instant::now() < deadline, "unanswered: {got:?}\n{}", server.log_text());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let got = answers(&fake);
    for q in &questions {
        assert_eq!(got.get(q), Some(&1), "question {q:?} answered {:?} times", got.get(q));
    }
    assert_eq!(got.len(), questions.len());
    for (chat, round) in &questions {
        let texts: Vec<String> = fake.chat(*chat).into_iter().map(|m| m.text).collect();
        assert!(texts.contains(&format!("echo: q{round} from {chat}")), "{chat}: {texts:?}");
    }
    assert_eq!(fake.calls("sendMessage").len(), questions.len(), "no other message was sent");
    drop(server);
}
