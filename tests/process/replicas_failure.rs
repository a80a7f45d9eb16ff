//! Failures under load with three real replicas: SIGKILL of one replica at a random moment
//! and of another after the first restarted, a Redis restart, and Postgres unreachable for a
//! few seconds. Every accepted message is answered exactly once (counted); a message whose
//! POST got no answer (the replica died under it) is answered at most once; while the
//! database is away nothing is acknowledged.

use super::llm_section;
use super::replicas::{answers, try_post};
use crate::support::cluster::Replicas;
use crate::support::fake_llm::FakeLlm;
use std::collections::HashMap;
use std::time::Duration;

const CONVERSATIONS: usize = 50;

/// What the load generator knows about each message it sent.
#[derive(Default)]
pub(super) struct Ledger {
    /// Accepted (202): must be answered exactly once.
    pub accepted: Vec<(String, String)>,
    /// No answer at all (the replica died mid-request): at most once.
    pub unknown: Vec<(String, String)>,
    /// Refused (not 202): never answered.
    pub refused: Vec<(String, String)>,
}

impl Ledger {
    pub(super) async fn send(&mut self, client: &reqwest::Client, base: &str, n: usize, tag: &str) {
        let conv = format!("{tag}{}", n % CONVERSATIONS);
        let text = format!("{tag}-msg-{n}");
        match try_post(client, base, &conv, &text).await {
            Some(202) => self.accepted.push((conv, text)),
            Some(_) => self.refused.push((conv, text)),
            None => self.unknown.push((conv, text)),
        }
    }

    /// Waits until every accepted message is answered, then checks the counts.
    pub(super) async fn check(&self, (db_url, logs): (&str, &dyn Fn() -> String), base: &str, tag: &str) {
        let convs: Vec<String> = (0..CONVERSATIONS).map(|i| format!("{tag}{i}")).collect();
        let count = async |convs: &[String]| {
            let mut seen: HashMap<String, usize> = HashMap::new();
            for c in convs {
                for a in answers(base, c).await {
                    *seen.entry(a).or_default() += 1;
                }
            }
            seen
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        loop {
            let seen = count(&convs).await;
            let missing: Vec<&String> =
                self.accepted.iter().map(|(_, t)| t).filter(|t| !seen.contains_key(&format!("echo: {t}"))).collect();
            if missing.is_empty() {
                break;
            }
            if std::time::Instant::now() > deadline {
                let rows = inbox_rows(db_url, &missing).await;
                panic!("accepted but never answered: {missing:?}\ninbox: {rows:#?}\n{}", logs());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        let seen = count(&convs).await;
        let times = |t: &str| seen.get(&format!("echo: {t}")).copied().unwrap_or(0);
        let doubled: Vec<&String> = self.accepted.iter().map(|(_, t)| t).filter(|t| times(t) != 1).collect();
        assert!(doubled.is_empty(), "accepted but not answered exactly once: {doubled:?}");
        let unknown: Vec<&String> = self.unknown.iter().map(|(_, t)| t).filter(|t| times(t) > 1).collect();
        assert!(unknown.is_empty(), "answered more than once: {unknown:?}");
        let refused: Vec<&String> = self.refused.iter().map(|(_, t)| t).filter(|t| times(t) > 0).collect();
        assert!(refused.is_empty(), "refused yet answered: {refused:?}");
        eprintln!(
            "{tag}: accepted={} answered_once={} unknown={} refused={}",
            self.accepted.len(),
            self.accepted.len() - doubled.len(),
            self.unknown.len(),
            self.refused.len()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_of_two_replicas_under_load_loses_nothing_and_doubles_nothing() {
    let llm = FakeLlm::start().await;
    let mut set = Replicas::new(3, 1000, &llm_section(&llm.openai_url())).await;
    set.start_all().await;
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let seed = rand::random::<u64>();
    let first = (seed % 3) as usize;
    let second = (first + 1 + (seed / 3 % 2) as usize) % 3;
    let kill_at = 100 + (seed / 7 % 100) as usize;
    eprintln!("seed={seed} kill {first} at {kill_at}, then {second} at {}", kill_at + 200);
    let mut ledger = Ledger::default();
    let mut down: Option<usize> = None;
    for n in 0..500 {
        if n == kill_at {
            set.kill(first);
            down = Some(first);
        }
        if n == kill_at + 100 {
            set.start(first).await;
            down = None;
        }
        if n == kill_at + 200 {
            set.kill(second);
            down = Some(second);
        }
        let mut target = n % 3;
        if down == Some(target) {
            target = (target + 1) % 3;
        }
        let base = set.nodes[target].base();
        ledger.send(&client, &base, n, "k").await;
    }
    let base = set.nodes[(second + 1) % 3].base();
    assert!(ledger.accepted.len() >= 480, "the load was accepted: {}", ledger.accepted.len());
    ledger.check((&set.db.url, &|| set.logs()), &base, "k").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restart_under_load_loses_nothing() {
    let llm = FakeLlm::start().await;
    let mut set = Replicas::new(3, 1000, &llm_section(&llm.openai_url())).await;
    set.start_all().await;
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let mut ledger = Ledger::default();
    for n in 0..300 {
        if n == 100 {
            set.redis.stop();
        }
        if n == 150 {
            set.redis.restart().await;
        }
        let base = set.nodes[n % 3].base();
        ledger.send(&client, &base, n, "r").await;
    }
    assert_eq!(ledger.accepted.len(), 300, "the web API accepts while Redis is away: events are stored");
    ledger.check((&set.db.url, &|| set.logs()), &set.nodes[0].base(), "r").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_away_for_seconds_acknowledges_nothing_and_answers_everything_after() {
    let llm = FakeLlm::start().await;
    let mut set = Replicas::new(3, 1000, &llm_section(&llm.openai_url())).await;
    set.start_all().await;
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let mut ledger = Ledger::default();
    let mut during = Ledger::default();
    for n in 0..150 {
        let base = set.nodes[n % 3].base();
        if n == 50 {
            set.proxy.cut();
            // A few seconds away: every POST meanwhile is refused, none acknowledged.
            let until = std::time::Instant::now() + Duration::from_secs(3);
            let mut k = 1000;
            while std::time::Instant::now() < until {
                let base = set.nodes[k % 3].base();
                during.send(&client, &base, k, "p").await;
                k += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            set.proxy.restore();
        }
        ledger.send(&client, &base, n, "p").await;
    }
    assert!(!during.refused.is_empty(), "posts were tried while the database was away");
    assert!(during.accepted.is_empty(), "nothing acknowledged while it could not be stored: {:?}", during.accepted);
    // After the restore, the replicas reconnect: everything accepted is answered once.
    ledger.refused.append(&mut during.refused);
    ledger.unknown.append(&mut during.unknown);
    assert!(ledger.accepted.len() >= 140, "accepted after the restore: {}", ledger.accepted.len());
    ledger.check((&set.db.url, &|| set.logs()), &set.nodes[0].base(), "p").await;
}

/// The inbox rows (status, attempts, claimer, routing, error) of the events carrying `texts`.
async fn inbox_rows(db_url: &str, texts: &[&String]) -> Vec<String> {
    use sqlx::Row;
    let pool = sqlx::PgPool::connect(db_url).await.unwrap();
    let mut out = Vec::new();
    for t in texts {
        let rows = sqlx::query(
            "SELECT id, status, attempts, coalesce(claimed_by, ''), coalesce(routed_to, ''), coalesce(error, '') \
             FROM inbox WHERE event LIKE '%' || $1 || '%'",
        )
        .bind(t.as_str())
        .fetch_all(&pool)
        .await
        .unwrap();
        for r in rows {
            out.push(format!(
                "{t}: id={} status={} attempts={} claimed_by={} routed_to={} error={}",
                r.get::<String, _>(0),
                r.get::<String, _>(1),
                r.get::<i32, _>(2),
                r.get::<String, _>(3),
                r.get::<String, _>(4),
                r.get::<String, _>(5)
            ));
        }
    }
    pool.close().await;
    out
}
