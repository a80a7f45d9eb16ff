//! Faults on the wire to the platforms (issue 36, point 3): one real `butler serve` (SQLite) with
//! Slack (the Events API: signed webhooks in, the Web API out), Discord (REST and the gateway
//! websocket, each behind its own proxy: the fake hands out the proxy's gateway and resume URL),
//! WhatsApp (webhooks in, the Graph API out), Signal (signal-cli's event stream and JSON-RPC) and
//! email (Dovecot's IMAP and the SMTP sink, each behind its own proxy), every platform behind TCP
//! fault proxies. Platform by platform, the proxies
//! 1. hold every byte (half-open connections: nothing arrives, nothing closes) while messages
//!    come in, long enough to show that nothing gets through, while every other platform is
//!    talked to and answered (a held platform holds up no other); then heal;
//! 2. reset every idle connection and refuse new ones for a while (a platform restart, as a
//!    client sees it) while messages come in, so that again nothing gets through; then heal;
//!    where the sends have a proxy of their own (Discord's REST API, SMTP), that proxy alone
//!    then does the same while messages come in and their turns run;
//! 3. add 30 ms to every chunk while messages come in.
//!
//! After the faults clear: every message is answered exactly once (none lost, none doubled),
//! with its own answer and no apology; Discord's gateway was resumed, never re-identified;
//! the watchdog shows no turn or delivery stuck or left running. Resets hit idle connections
//! only (2 s after the last answer): a reset between a platform taking a send and Butler reading
//! its answer is ambiguous (none of these APIs has an idempotency key) and the outbox sends
//! again, as with Telegram in `faults.rs`. Signal's messages after a reset are queued once the
//! daemon has seen its event stream close: what it hands to a connection it has not yet seen
//! die is gone with it, as with the real signal-cli. Slack's Socket Mode has the same faults in
//! `tests/slack/socket.rs` (the fake hands out a proxy's websocket address), Matrix with a
//! real Synapse in `matrix.rs`.
//! The platforms, their config sections and what a person says and sees on each are
//! `tests/support/platforms.rs`.

use super::llm_section;
use crate::support::fake_llm::FakeLlm;
use crate::support::fault_proxy::{Fault, FaultProxy};
use crate::support::platforms::{Endpoints, Fake, Fakes};
use crate::support::proc::Deployment;
use std::time::Duration;
use tokio::time::{sleep, sleep_until, Instant};

/// How long the proxy holds every byte, and refuses new connections.
const HOLD: Duration = Duration::from_secs(3);
const REFUSE: Duration = Duration::from_secs(2);
/// Messages per platform and phase.
const BATCH: usize = 3;

/// One platform: its fake, the proxies between Butler and it, and what people said on it.
struct Platform {
    name: &'static str,
    fake: Fake,
    proxies: Vec<FaultProxy>,
    /// The proxy that carries only Butler's sends, when the platform has one apart.
    sending: Option<usize>,
    said: Vec<String>,
}

/// A proxy in front of the server of `url` (`http://127.0.0.1:PORT/...`), and `url` through it.
async fn behind_proxy(url: &str) -> (FaultProxy, String) {
    let authority = url.strip_prefix("http://").and_then(|r| r.split('/').next()).expect("an http URL");
    let proxy = FaultProxy::start(authority.parse().expect("host:port")).await;
    let through = url.replacen(authority, &proxy.host_port(), 1);
    (proxy, through)
}

impl Platform {
    fn set(&self, fault: Fault) {
        self.proxies.iter().for_each(|p| p.set(fault));
    }

    fn reset_all(&self) {
        self.proxies.iter().for_each(FaultProxy::reset_all);
    }

    /// A person says `text` to Butler here; `n` is unique in the test.
    async fn say(&self, base: &str, n: usize, text: &str) {
        self.fake.say(base, n, text).await
    }

    /// `BATCH` messages at once, numbered from `*n`; their texts.
    async fn say_batch(&mut self, base: &str, phase: &str, n: &mut usize) -> Vec<String> {
        let texts: Vec<(usize, String)> = (0..BATCH).map(|i| (*n + i, format!("{} {phase} {i}", self.name))).collect();
        *n += BATCH;
        let me = &*self;
        futures::future::join_all(texts.iter().map(|(k, t)| me.say(base, *k, t))).await;
        let texts: Vec<String> = texts.into_iter().map(|(_, t)| t).collect();
        self.said.extend(texts.iter().cloned());
        texts
    }

    /// Every reply Butler shows the person here, as it reads now.
    fn replies(&self) -> Vec<String> {
        self.fake.said(0).into_iter().map(|s| s.text).collect()
    }

    /// Which of `texts` are answered.
    fn answered<'a>(&self, texts: &'a [String]) -> Vec<&'a String> {
        let replies = self.replies();
        texts.iter().filter(|t| replies.contains(&format!("echo: {t}"))).collect()
    }

    /// Waits (60 s at most) until each of `texts` is answered.
    async fn wait_answered(&self, texts: &[String], what: &str, logs: &dyn Fn() -> String) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.answered(texts).len() < texts.len() {
            assert!(
                Instant::now() < deadline,
                "{}: {what} never all answered: {texts:?}; replies: {:#?}\n{}",
                self.name,
                self.replies(),
                logs()
            );
            sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits (30 s at most) until the platform's side of Butler's connections is up: Discord's
    /// gateway session live, Signal's event stream open (`open` true) or seen closed.
    async fn wait_link(&self, open: bool, logs: &dyn Fn() -> String) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let done = match &self.fake {
                Fake::Discord(f) if open => {
                    f.wait_connected().await;
                    true
                }
                Fake::Signal(f) => (f.streams_open() > 0) == open,
                _ => true,
            };
            if done {
                return;
            }
            assert!(Instant::now() < deadline, "{}: link open = {open} never seen\n{}", self.name, logs());
            sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Waits (30 s at most) until the model has been asked about each of `texts`.
async fn wait_asked(llm: &FakeLlm, texts: &[String], logs: &dyn Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let asked = || {
        let requests = llm.requests();
        texts.iter().all(|t| requests.iter().any(|r| r.last_user_text().contains(t.as_str())))
    };
    while !asked() {
        assert!(Instant::now() < deadline, "the model never asked about all of {texts:?}\n{}", logs());
        sleep(Duration::from_millis(50)).await;
    }
}

/// The five platforms behind their proxies, and the config sections that point Butler at them.
async fn platforms() -> (Vec<Platform>, String) {
    let Fakes { slack, discord, whatsapp, signal, imap, smtp, .. } = Fakes::start(false).await;
    let (slack_proxy, slack_url) = behind_proxy(&slack.api_url()).await;
    let (rest_proxy, discord_url) = behind_proxy(&discord.url()).await;
    let gateway_proxy = FaultProxy::start(([127, 0, 0, 1], discord.gateway_port).into()).await;
    // The gateway URL (and the resume URL in Ready) Discord hands out is the proxy's.
    discord.lock().gw.port = gateway_proxy.addr.port();
    let (wa_proxy, wa_url) = behind_proxy(&whatsapp.api_url()).await;
    let (signal_proxy, signal_url) = behind_proxy(&signal.url()).await;
    let imap_proxy = FaultProxy::start(([127, 0, 0, 1], imap.port).into()).await;
    let smtp_proxy = FaultProxy::start(([127, 0, 0, 1], smtp.port).into()).await;
    let sections = Endpoints {
        telegram: None,
        slack: slack_url,
        discord: discord_url,
        whatsapp: wa_url,
        signal: signal_url,
        imap_port: imap_proxy.addr.port(),
        smtp_port: smtp_proxy.addr.port(),
    }
    .sections();
    let platform = |name, fake, proxies, sending| Platform { name, fake, proxies, sending, said: Vec::new() };
    let all = vec![
        platform("slack", Fake::Slack(slack), vec![slack_proxy], None),
        platform("discord", Fake::Discord(discord), vec![rest_proxy, gateway_proxy], Some(0)),
        platform("whatsapp", Fake::WhatsApp(whatsapp), vec![wa_proxy], None),
        platform("signal", Fake::Signal(signal), vec![signal_proxy], None),
        platform("email", Fake::Email(imap, smtp), vec![imap_proxy, smtp_proxy], Some(1)),
    ];
    (all, sections)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_reset_and_slow_platform_connections_lose_and_double_nothing() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let llm = FakeLlm::start().await;
    let (mut all, sections) = platforms().await;
    let deployment = Deployment::new(&format!("{}\n{sections}", llm_section(&llm.openai_url())));
    let base = deployment.base();
    let server = deployment.serve().await;
    let logs = || server.log_text();
    for p in &all {
        p.wait_link(true, &logs).await;
    }

    let mut n = 0;
    for k in 0..all.len() {
        let started = std::time::Instant::now();
        let name = all[k].name;

        // 1. Half-open: every byte held. Nothing gets through; another platform still answers.
        all[k].set(Fault::Hold);
        let held_at = Instant::now();
        let held = all[k].say_batch(&base, "held", &mut n).await;
        // Meanwhile every other platform is talked to and answered: the load is mixed.
        for other in (0..all.len()).filter(|&j| j != k) {
            let beside = all[other].say_batch(&base, &format!("beside {name}"), &mut n).await;
            all[other].wait_answered(&beside, &format!("while {name} is held"), &logs).await;
        }
        sleep_until(held_at + HOLD).await;
        assert_eq!(all[k].answered(&held), Vec::<&String>::new(), "{name}: nothing gets through a held proxy");
        all[k].set(Fault::None);
        all[k].wait_answered(&held, "the messages that came in while held", &logs).await;

        // 2. A restart: idle connections reset, new ones refused for a while.
        sleep(Duration::from_secs(2)).await;
        all[k].set(Fault::Refuse);
        all[k].reset_all();
        let refused_at = Instant::now();
        all[k].wait_link(false, &logs).await;
        let reset = all[k].say_batch(&base, "reset", &mut n).await;
        sleep_until(refused_at + REFUSE).await;
        assert_eq!(all[k].answered(&reset), Vec::<&String>::new(), "{name}: nothing gets through a refusing proxy");
        all[k].set(Fault::None);
        all[k].wait_answered(&reset, "the messages that came in while refused", &logs).await;

        // 2b. Where the sends have a proxy of their own, only it restarts: the messages come in
        // and their turns run while every send is refused.
        if let Some(i) = all[k].sending {
            sleep(Duration::from_secs(2)).await;
            all[k].proxies[i].set(Fault::Refuse);
            all[k].proxies[i].reset_all();
            let refused_at = Instant::now();
            let sends = all[k].say_batch(&base, "send refused", &mut n).await;
            wait_asked(&llm, &sends, &logs).await;
            sleep_until(refused_at + REFUSE).await;
            assert_eq!(all[k].answered(&sends), Vec::<&String>::new(), "{name}: no send gets through");
            all[k].proxies[i].set(Fault::None);
            all[k].wait_answered(&sends, "the messages whose sends were refused", &logs).await;
        }

        // 3. Latency on every chunk.
        all[k].set(Fault::Latency(Duration::from_millis(30)));
        let slow = all[k].say_batch(&base, "slow", &mut n).await;
        all[k].wait_answered(&slow, "the messages under latency", &logs).await;
        all[k].set(Fault::None);
        eprintln!("faults on {name}: done in {:?}", started.elapsed());
    }

    // A late double would show by now.
    sleep(Duration::from_secs(2)).await;
    for p in &all {
        let replies = p.replies();
        for text in &p.said {
            let want = format!("echo: {text}");
            let count = replies.iter().filter(|r| **r == want).count();
            assert_eq!(count, 1, "{}: {want:?} once: {replies:#?}\n{}", p.name, logs());
        }
        for reply in &replies {
            assert!(!reply.starts_with("⚠️"), "{}: an apology: {reply}\n{}", p.name, logs());
            let own = reply.strip_prefix("echo: ").is_some_and(|t| p.said.iter().any(|s| s == t));
            assert!(own, "{}: a reply to nothing said: {reply:?}\n{}", p.name, logs());
        }
        assert_eq!(replies.len(), p.said.len(), "{}: one reply per message: {replies:#?}", p.name);
        // The long-lived connections went through the proxy and came back after the reset.
        match &p.fake {
            Fake::Discord(f) => {
                let gateway = f.gateway_log();
                assert_eq!(gateway.identifies.len(), 1, "one gateway session, resumed: {gateway:?}");
                assert!(!gateway.resumes.is_empty(), "the reset gateway was resumed: {gateway:?}");
            }
            Fake::Signal(f) => assert!(f.streams_opened() >= 2, "the event stream opened again after the reset"),
            _ => {}
        }
    }

    // The watchdog: nothing stuck, nothing left running.
    super::assert_nothing_stuck(&base).await;
    server.kill();
}
