//! Starting a real Butler in-process for tests: a fresh SQLite file (or a given database URL),
//! an LLM endpoint (usually the fake LLM), an ephemeral port, and a small HTTP client.

use butler::app::{App, AppOptions};
use butler::config::{Config, ProviderKind};
use butler::tools::Tool;
use std::sync::Arc;

pub struct TestApp {
    pub app: App,
    /// The config it was started with (for restarting on the same database).
    pub config: Config,
    pub base: String,
    pub http: reqwest::Client,
    /// Keeps the SQLite directory alive.
    pub _dir: Option<tempfile::TempDir>,
}

/// A config on a fresh SQLite file, listening on an ephemeral loopback port, with the OpenAI
/// protocol pointed at `llm_url` (e.g. the fake LLM's `openai_url()`).
pub fn config(llm_url: Option<&str>) -> (Config, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = Config::default();
    cfg.server.listen = "127.0.0.1:0".into();
    cfg.server.shutdown_grace_secs = 5;
    // No background model calls unless a test is about them (the archivist has its own tests).
    cfg.memory.archivist = false;
    cfg.database.url = butler::config::Secret::new(format!("sqlite://{}", dir.path().join("butler.db").display()));
    if let Some(url) = llm_url {
        cfg.llm.provider = ProviderKind::Openai;
        cfg.llm.base_url = Some(url.to_string());
        cfg.llm.model = "fake-model".into();
        cfg.llm.max_retries = 0;
    }
    (cfg, dir)
}

/// [`config`] on `dir`'s database (a fresh folder when `None`), for a restart on the same data.
pub fn config_in(llm_url: Option<&str>, dir: Option<tempfile::TempDir>) -> (Config, tempfile::TempDir) {
    let (mut cfg, fresh) = config(llm_url);
    let dir = dir.unwrap_or(fresh);
    cfg.database.url = butler::config::Secret::new(format!("sqlite://{}", dir.path().join("butler.db").display()));
    (cfg, dir)
}

impl TestApp {
    pub async fn start(cfg: Config, dir: Option<tempfile::TempDir>) -> Self {
        Self::start_with(cfg, dir, vec![]).await
    }

    pub async fn start_with(cfg: Config, dir: Option<tempfile::TempDir>, tools: Vec<Arc<dyn Tool>>) -> Self {
        Self::start_full(cfg, dir, tools, vec![]).await
    }

    /// With extra tools and extra channels (e.g. the fake chat platform).
    pub async fn start_full(
        cfg: Config,
        dir: Option<tempfile::TempDir>,
        tools: Vec<Arc<dyn Tool>>,
        channels: Vec<Arc<dyn butler::channel::Channel>>,
    ) -> Self {
        let config = cfg.clone();
        let mut opts = AppOptions::serve(cfg);
        opts.extra_tools = tools;
        opts.extra_channels = channels;
        let app = App::start(opts).await.expect("app starts");
        let base = format!("http://{}", app.addr.expect("listening"));
        Self { app, config, base, http: reqwest::Client::new(), _dir: dir }
    }

    /// The SQLite URL of this app's database (for direct inspection in tests).
    pub fn db_url(&self) -> String {
        let dir = self._dir.as_ref().expect("a SQLite test app");
        format!("sqlite://{}", dir.path().join("butler.db").display())
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// POST /api/v1/messages as `user`; returns the status and JSON body.
    pub async fn post(&self, conversation: &str, user: &str, text: &str) -> (u16, serde_json::Value) {
        let body = serde_json::json!({"conversation": conversation, "user": user, "text": text});
        let r = self.http.post(self.url("/api/v1/messages")).json(&body).send().await.expect("post");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(serde_json::Value::Null))
    }

    /// The messages of a web conversation (empty if it does not exist).
    pub async fn messages(&self, conversation: &str) -> Vec<serde_json::Value> {
        let r = self
            .http
            .get(self.url(&format!("/api/v1/conversations/{conversation}/messages")))
            .send()
            .await
            .expect("get");
        if r.status() != 200 {
            return vec![];
        }
        let v: serde_json::Value = r.json().await.expect("json");
        v["messages"].as_array().cloned().unwrap_or_default()
    }

    /// Waits (up to `secs`) until the conversation holds `n` assistant messages whose final text
    /// is delivered, and returns them.
    pub async fn wait_replies(&self, conversation: &str, n: usize, secs: u64) -> Vec<serde_json::Value> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            let replies: Vec<_> =
                self.messages(conversation).await.into_iter().filter(|m| m["role"] == "assistant").collect();
            let settled =
                replies.len() >= n && replies.iter().all(|m| m["buttons"].as_array().is_none_or(|b| b.is_empty()));
            if settled || std::time::Instant::now() > deadline {
                return replies;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
    }

    /// Waits (up to 30 s) for an approval request in the conversation and clicks its
    /// "approve once" button, as the web page does.
    pub async fn approve(&self, conversation: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let action = loop {
            let found = self
                .messages(conversation)
                .await
                .iter()
                .flat_map(|m| m["buttons"].as_array().cloned().unwrap_or_default())
                .filter_map(|b| b["action"].as_str().map(str::to_string))
                .find(|a| a.starts_with("ap:") && a.ends_with(":once"));
            if let Some(action) = found {
                break action;
            }
            assert!(std::time::Instant::now() < deadline, "no approval request in `{conversation}`");
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        };
        let body = serde_json::json!({"conversation": conversation, "user": "local", "action": action});
        let r = self.http.post(self.url("/api/v1/actions")).json(&body).send().await.expect("click");
        assert_eq!(r.status(), 202, "the click is taken");
    }

    /// Hands an event to the app's ingress, as a channel adapter would.
    pub async fn emit(&self, event: butler::channel::InboundEvent) {
        self.app.ingress.accept(event).await.expect("ingress accepts");
    }

    pub async fn stop(self) {
        self.app.shutdown().await;
    }

    /// Rows in the inbox (what Butler has accepted), straight from the SQLite file.
    pub async fn inbox_count(&self) -> i64 {
        use sqlx::Connection;
        let mut db = sqlx::SqliteConnection::connect(&self.db_url()).await.unwrap();
        let n: (i64,) = sqlx::query_as("SELECT COUNT(*) FROM inbox").fetch_one(&mut db).await.unwrap();
        n.0
    }

    /// The usage ledger, oldest row first, read from the SQLite file.
    pub async fn usage_rows(&self) -> Vec<UsageRow> {
        let pool = sqlx::SqlitePool::connect(&self.db_url()).await.expect("open the test database");
        let rows: Vec<(String, String, String, i64, i64, f64, i32)> = sqlx::query_as(
            "SELECT kind, user_id, model, input_tokens, output_tokens, cost_usd, iterations FROM usage ORDER BY id",
        )
        .fetch_all(&pool)
        .await
        .expect("read the usage ledger");
        pool.close().await;
        rows.into_iter()
            .map(|(kind, user_id, model, input_tokens, output_tokens, cost_usd, iterations)| UsageRow {
                kind,
                user_id,
                model,
                input_tokens,
                output_tokens,
                cost_usd,
                iterations,
            })
            .collect()
    }
}

/// One row of the usage ledger.
#[derive(Clone, Debug, PartialEq)]
pub struct UsageRow {
    pub kind: String,
    pub user_id: String,
    pub model: String,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cost_usd: f64,
    pub iterations: i32,
}

/// A `[[schedules]]` job at 08:00 every day in `tz`, delivered to `web:briefings`.
pub fn daily_job(name: &str, tz: &str) -> butler::config::ScheduleConfig {
    butler::config::ScheduleConfig {
        name: name.into(),
        cron: "0 8 * * *".into(),
        tz: tz.into(),
        prompt: "brief me".into(),
        target: "web:briefings".parse().unwrap(),
        owner: None,
        mode: Default::default(),
        missed: Default::default(),
        grace_secs: 300,
    }
}

/// Sleeps a little so that anything that would wrongly happen has the time to.
pub async fn settle() {
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
}

/// `butler doctor`'s line for one platform channel's `[channels.<name>]` section: what is fine,
/// or (problem, fix).
pub async fn doctor_channel(name: &str, section: toml::Table) -> Result<String, (String, String)> {
    let mut config = Config::default();
    config.channels.set(name, section);
    let mut checks = butler::channels::builtin().doctor(&config.channels).await;
    assert_eq!(checks.len(), 1);
    let (what, result) = checks.remove(0);
    assert_eq!(what, name);
    result
}

/// Puts a daily job `name` (run as `owner`, delivered to `target`) into `store` and makes it due
/// in 200 ms, as if its time had come: the briefing path of any channel.
pub async fn briefing_due(store: &Arc<dyn butler::store::Store>, name: &str, prompt: &str, target: &str, owner: &str) {
    use butler::config::{Missed, ScheduleMode};
    use butler::schedule::{JobOwner, JobSpec};
    use butler::store::{ScheduleChange, ScheduleFilter, ScheduleSource};
    let spec = JobSpec {
        name: Some(name.into()),
        cron: Some("0 7 * * *".into()),
        at: None,
        tz: "UTC".into(),
        prompt: prompt.into(),
        target: target.into(),
        mode: ScheduleMode::Always,
        missed: Missed::RunOnce,
        grace_secs: 3600,
    };
    let owner = JobOwner { identity: owner.parse().unwrap(), user_id: None };
    let new = butler::schedule::jobs::build(&spec, &owner, ScheduleSource::Cli, butler::store::now_ms()).unwrap();
    let job = store.schedule_put(&new).await.unwrap();
    let row = store.schedules_list(&ScheduleFilter::Id(job.id)).await.unwrap().pop().unwrap();
    let due = butler::store::now_ms() + 200;
    let change = ScheduleChange::Advance { from: row.next_fire_ms.unwrap(), to: Some(due) };
    assert!(store.schedule_set(job.id, &change).await.unwrap());
}
