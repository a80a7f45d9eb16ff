//! Faults on the wire (step 24, point 3): a real `butler serve` on Postgres and Redis with every
//! connection - to Postgres, to Redis and to the model - through a fault proxy. Under a steady
//! load of web messages in 50 conversations the proxies in turn add latency, hold every byte
//! (half-open connections: nothing arrives, nothing closes), reset every connection and refuse
//! new ones for a while (what a client sees of a Postgres or Redis restart), and the model
//! stalls mid-stream and then drops its connections, and Telegram's Bot API holds every byte
//! past the long poll's timeout and then resets its connections. After the faults clear: every accepted
//! message is answered exactly once, none that was refused is answered, the watchdog shows no
//! work stuck or left running, and the people whose model stalled were told so (once per
//! message) instead of getting an apology or silence.

use super::llm_section;
use super::replicas_failure::Ledger;
use crate::support::cluster::{proxied, RedisServer};
use crate::support::db::PgTestDb;
use crate::support::fake_llm::FakeLlm;
use crate::support::fake_telegram::{updates::dm, FakeTelegram};
use crate::support::fault_proxy::{Fault, FaultProxy};
use crate::support::proc::{clean_command, free_port, Server};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

const TG_TOKEN: &str = "4343:fault-test-token";
const TG_OWNER: i64 = 4343;

/// Heals `proxy` after `after`, while the load goes on (a POST may be waiting on the fault).
fn heal_later(proxy: &Arc<FaultProxy>, after: Duration) {
    let proxy = proxy.clone();
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        proxy.heal();
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_half_open_connections_restarts_and_a_stalled_model_lose_nothing() {
    let db = PgTestDb::create().await;
    let redis = RedisServer::start().await;
    let llm = FakeLlm::start().await;
    let pg = Arc::new(FaultProxy::start("127.0.0.1:5432".parse().unwrap()).await);
    let cache = Arc::new(FaultProxy::start(SocketAddr::from(([127, 0, 0, 1], redis.port))).await);
    let model = Arc::new(FaultProxy::start(llm.addr()).await);
    let tg = FakeTelegram::start(TG_TOKEN).await;
    let bot_api = Arc::new(FaultProxy::start(SocketAddr::from(([127, 0, 0, 1], tg.port()))).await);

    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = dir.path().join("butler.toml");
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:{port}\"\nshutdown_grace_secs = 10\n\n[database]\nurl = \"{}\"\n\n\
         [redis]\nurl = \"redis://{}\"\nlease_ms = 1000\n\n[memory]\narchivist = false\n\n\
         {}first_byte_timeout_secs = 3\nidle_timeout_secs = 2\n\n[channels.telegram]\ntoken = \"{TG_TOKEN}\"\n\
         api_url = \"http://{}\"\npoll_timeout_secs = 2\n\n[access]\nowners = [\"telegram:{TG_OWNER}\"]\n",
        proxied(&db.url, pg.addr.port()),
        cache.host_port(),
        llm_section(&format!("http://{}/v1", model.host_port())),
        bot_api.host_port(),
    );
    std::fs::write(&config, text).unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let mut cmd = clean_command(dir.path());
    cmd.arg("serve").arg("--config").arg(&config);
    let server = Server::start(cmd, dir.path().join("serve.log"), &base).await;
    let logs = || server.log_text();

    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();

    // 1. The database and Redis, under a steady load.
    let mut ledger = Ledger::default();
    for n in 0..220 {
        match n {
            30 => {
                pg.set(Fault::Latency(Duration::from_millis(30)));
                cache.set(Fault::Latency(Duration::from_millis(30)));
            }
            60 => {
                pg.heal();
                cache.heal();
            }
            // Half-open: the database holds every byte for 3 s, then lets them through.
            80 => {
                pg.set(Fault::Hold);
                heal_later(&pg, Duration::from_secs(3));
            }
            // A Postgres restart: every connection reset, new ones refused for 3 s.
            120 => {
                pg.set(Fault::Refuse);
                pg.reset_all();
                heal_later(&pg, Duration::from_secs(3));
            }
            // A Redis restart, as a client sees it.
            170 => {
                cache.set(Fault::Refuse);
                cache.reset_all();
                heal_later(&cache, Duration::from_secs(3));
            }
            _ => {}
        }
        ledger.send(&client, &base, n, "f").await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(ledger.accepted.len() >= 120, "most of the load was accepted: {}", ledger.accepted.len());
    ledger.check((&db.url, &logs), &base, "f").await;
    eprintln!(
        "faults f: {} accepted, {} unknown, {} refused",
        ledger.accepted.len(),
        ledger.unknown.len(),
        ledger.refused.len()
    );

    // 2. The model holds every byte past the first-byte timeout: each message is deferred.
    model.set(Fault::Hold);
    let mut held = Ledger::default();
    for n in 0..10 {
        held.send(&client, &base, n, "m").await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    model.heal();
    assert_eq!(held.accepted.len(), 10, "the web API takes messages while the model is away");
    held.check((&db.url, &logs), &base, "m").await;

    // 3. The model's connections drop mid-stream.
    llm.set_default(crate::support::fake_llm::Reply::echo().chunk_delay(Duration::from_millis(600)));
    let mut dropped = Ledger::default();
    for n in 0..5 {
        dropped.send(&client, &base, n, "x").await;
    }
    tokio::time::sleep(Duration::from_millis(900)).await;
    model.reset_all();
    dropped.check((&db.url, &logs), &base, "x").await;

    // 4. Telegram's Bot API behind the proxy: the long poll and everything else held for 5 s
    // (past the poll timeout), then every idle connection reset. Each DM answered once.
    llm.set_default(crate::support::fake_llm::Reply::echo());
    let answered = |m: &[crate::support::fake_telegram::Shown], tag: &str| {
        (0..5).all(|i| m.iter().any(|s| s.text == format!("echo: {tag} {i}")))
    };
    bot_api.set(Fault::Hold);
    for i in 0..5 {
        tg.push(dm(TG_OWNER, 10 + i, &format!("tg held {i}")));
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    bot_api.heal();
    tg.wait_chat(TG_OWNER, 60, "the held DMs answered", |m| answered(m, "tg held")).await;
    // Idle connections only: a reset between Telegram taking a send and Butler reading its
    // answer is ambiguous (the Bot API has no idempotency key), and the outbox sends again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    bot_api.reset_all();
    for i in 0..5 {
        tg.push(dm(TG_OWNER, 20 + i, &format!("tg reset {i}")));
    }
    tg.wait_chat(TG_OWNER, 60, "the DMs after the reset answered", |m| answered(m, "tg reset")).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let shown = tg.chat(TG_OWNER);
    for tag in ["tg held", "tg reset"] {
        for i in 0..5 {
            let want = format!("echo: {tag} {i}");
            assert_eq!(shown.iter().filter(|s| s.text == want).count(), 1, "{want} once: {shown:?}\n{}", logs());
        }
    }

    // No apology and no dead letter anywhere; each message that met the model away was told,
    // once: all ten held ones, and the ones whose stream dropped.
    let told_in = async |tag: &str| {
        let mut told = 0;
        for c in 0..10 {
            for text in super::replicas::answers(&base, &format!("{tag}{c}")).await {
                assert!(!text.starts_with("⚠️"), "{tag}{c}: {text}\n{}", logs());
                told += usize::from(text.starts_with("⏳ The model is not answering right now"));
            }
        }
        told
    };
    assert_eq!(told_in("m").await, 10, "each held message told once\n{}", logs());
    let told_x = told_in("x").await;
    assert!((1..=5).contains(&told_x), "a dropped stream is said, once a message: {told_x}\n{}", logs());
    for c in 0..50 {
        for text in super::replicas::answers(&base, &format!("f{c}")).await {
            assert!(!text.starts_with("⚠️"), "f{c}: {text}\n{}", logs());
        }
    }
    let rows =
        crate::query(&db.url, "SELECT count(*), count(DISTINCT key) FROM outbox WHERE key LIKE '%:model-away'").await;
    assert_eq!(rows[0][0], rows[0][1], "one notice per message: {rows:?}");

    // The watchdog: nothing stuck, nothing left running.
    super::assert_nothing_stuck(&base).await;
    server.kill();
}
