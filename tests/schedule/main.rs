//! Scheduled jobs and briefings: fire times with time zones and DST (`cron`), jobs from the
//! config, the `schedule` tool and the CLI (`config`, `tool`, `cli`), the missed-run policy
//! after downtime (`missed`), briefings run as their owner and delivered anywhere, heartbeats,
//! run records and `/schedules` (`briefing`), and exactly-once firing with three real
//! `butler serve` processes on one Postgres database (`replicas`).
//!
//! Tests here simulate downtime by setting times in the store (or by passing `now` to a tick),
//! never by sleeping long, and never assert wall-clock speed.

#[path = "../support/mod.rs"]
mod support;

mod briefing;
mod cli;
mod config;
mod cron;
mod missed;
mod registered;
mod replicas;
mod tool;

use async_trait::async_trait;
use butler::channel::{Accepted, InboundEvent, Ingress, IngressError};
use butler::config::{AccessConfig, Missed, ScheduleMode};
use butler::schedule::{JobOwner, JobSpec, Schedules};
use butler::store::{ScheduleRow, ScheduleSource, Store};
use butler::triage::Access;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::app::TestApp;

/// An ingress that records what it is handed (and says `Duplicate` for a repeated id, as the
/// inbox does).
#[derive(Default)]
pub struct Recorder {
    pub events: Mutex<Vec<InboundEvent>>,
}

impl Recorder {
    pub fn ids(&self) -> Vec<String> {
        self.events.lock().unwrap().iter().map(|e| e.id.0.clone()).collect()
    }
}

#[async_trait]
impl Ingress for Recorder {
    async fn accept(&self, event: InboundEvent) -> Result<Accepted, IngressError> {
        let mut events = self.events.lock().unwrap();
        if events.iter().any(|e| e.id == event.id) {
            return Ok(Accepted::Duplicate);
        }
        events.push(event);
        Ok(Accepted::New)
    }
}

/// A scheduler over `store` whose only owner is the local operator (`cli:local`).
pub fn scheduler(store: Arc<dyn Store>) -> Schedules {
    let access =
        Arc::new(Access::new(&AccessConfig::default(), [butler::channel::Identity::new("cli", "local")], "UTC"));
    Schedules::new(&[], store.clone(), store, access)
}

/// A job definition: cron `when` (or, starting with `in `/a digit, a one-shot `at`) in `tz`.
pub fn spec(name: &str, when: &str, tz: &str, prompt: &str, target: &str) -> JobSpec {
    let one_shot = when.starts_with("in ") || when.starts_with("20");
    JobSpec {
        name: Some(name.into()),
        cron: (!one_shot).then(|| when.to_string()),
        at: one_shot.then(|| when.to_string()),
        tz: tz.into(),
        prompt: prompt.into(),
        target: target.into(),
        mode: ScheduleMode::Always,
        missed: Missed::RunOnce,
        grace_secs: 3600,
    }
}

/// Stores `spec` for `owner` (identity) and its user id, as the CLI would.
pub async fn put(store: &dyn Store, spec: &JobSpec, owner: &str, user: Option<&str>) -> ScheduleRow {
    let owner = JobOwner { identity: owner.parse().unwrap(), user_id: user.map(str::to_string) };
    let new = butler::schedule::jobs::build(spec, &owner, ScheduleSource::Cli, butler::store::now_ms()).unwrap();
    store.schedule_put(&new).await.unwrap()
}

/// Moves job `id`'s next fire time to `to` (simulating downtime or a job due now).
pub async fn set_next(store: &dyn Store, id: i64, to: i64) {
    let row = store.schedules_list(&butler::store::ScheduleFilter::Id(id)).await.unwrap().pop().unwrap();
    let change = butler::store::ScheduleChange::Advance { from: row.next_fire_ms.unwrap(), to: Some(to) };
    assert!(store.schedule_set(id, &change).await.unwrap(), "moved job #{id}");
}

/// The requests of agent turns (not of background model calls such as memory distilling).
pub fn turns(llm: &support::fake_llm::FakeLlm) -> Vec<support::fake_llm::RecordedRequest> {
    llm.requests().into_iter().filter(|r| r.system_text().starts_with("You are ")).collect()
}

/// The assistant texts of a web conversation.
pub fn texts(msgs: &[Value]) -> Vec<String> {
    msgs.iter().filter(|m| m["role"] == "assistant").map(|m| m["text"].as_str().unwrap_or("").to_string()).collect()
}

/// Polls the web conversation until `pred` holds for its messages; returns them.
pub async fn wait_for(app: &TestApp, conv: &str, what: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    for _ in 0..1600 {
        let msgs = app.messages(conv).await;
        if pred(&msgs) {
            return msgs;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{what} never happened in {conv}: {:#?}", app.messages(conv).await);
}

/// Waits until `cond` holds (checked every 25 ms, up to 40 s).
pub async fn eventually<F, Fut>(what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..1600 {
        if cond().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{what} never happened");
}
