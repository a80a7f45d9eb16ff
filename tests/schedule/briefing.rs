//! Briefings end to end in a running Butler: a due job's prompt runs as an agent turn in its own
//! session, as its owner (their memory and tools, their permissions and no more), and the answer
//! is delivered to the target conversation; heartbeats stay silent unless something is worth
//! saying; every run is recorded (and shown by `/schedules`); delivery failures are retried
//! with backoff; a restart neither loses nor repeats a run.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::{eventually, put, scheduler, set_next, spec, texts, turns, wait_for};
use async_trait::async_trait;
use butler::channel::{Caps, Channel, ChannelError, MessageRef, Outbound, TextFormat};
use butler::config::{Mode, PermissionContext, ScheduleConfig, ScheduleMode};
use butler::store::{
    now_ms, MemoryScope, NewUser, RunKind, RunQuery, RunRow, RunStatus, ScheduleFilter, Store, UserRole,
};
use butler::tools::{Action, Tool, ToolCtx, ToolError, ToolSpec};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

async fn runs(store: &dyn Store, id: i64) -> Vec<RunRow> {
    store.schedule_runs(&RunQuery::Of { schedule_id: id, limit: 100 }).await.unwrap()
}

/// Waits until job `id` has `n` runs that all reached `status`... and returns them (newest first).
async fn wait_runs(store: &dyn Store, id: i64, n: usize, done: &[RunStatus]) -> Vec<RunRow> {
    eventually(&format!("{n} finished runs of job #{id}"), || async {
        let r = runs(store, id).await;
        r.len() >= n && r.iter().all(|x| done.contains(&x.status))
    })
    .await;
    runs(store, id).await
}

async fn user(store: &dyn Store, identity: &str, id: &str, role: UserRole) {
    let new = NewUser { id: id.into(), display_name: None, role, timezone: "UTC".into() };
    store.user_ensure(&identity.parse().unwrap(), &new).await.unwrap();
}

#[tokio::test]
async fn a_briefing_runs_as_its_owner_with_memory_and_tools_and_is_recorded() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.access.owners = vec!["web:alice".parse().unwrap()];
    let app = TestApp::start(cfg, Some(dir)).await;
    let store = app.app.store.clone();
    user(&*store, "web:alice", "alice", UserRole::Owner).await;
    store.memory_add(&MemoryScope::personal("alice"), "Alice drinks her coffee as a flat white", None).await.unwrap();
    store.memory_add(&MemoryScope::personal("someone-else"), "Bob's coffee is an espresso", None).await.unwrap();
    llm.on("coffee-brief", Reply::tool_call("recall", json!({"query": "coffee"})));
    llm.on("coffee-brief", Reply::text("Good morning! Your flat white awaits."));

    let job = put(
        &*store,
        &spec("coffee", "0 7 * * *", "Europe/Berlin", "coffee-brief: what do I drink?", "web:briefing"),
        "web:alice",
        Some("alice"),
    )
    .await;
    let due = now_ms() + 200;
    set_next(&*store, job.id, due).await;
    let msgs =
        wait_for(&app, "briefing", "the briefing", |m| texts(m).iter().any(|t| t.contains("flat white awaits"))).await;
    assert_eq!(texts(&msgs), ["Good morning! Your flat white awaits."], "delivered once, to the target");

    // The turn: the prompt as the user message (after what memory recalls for the owner, and
    // only for the owner), the owner's memory through the owner's tools.
    let first = &turns(&llm)[0];
    let asked = first.last_user_text();
    assert!(
        asked.contains(&format!("[Scheduled job #{} \"coffee\", due ", job.id))
            && asked.ends_with("coffee-brief: what do I drink?")
            && !asked.contains("espresso"),
        "{asked}"
    );
    assert!(first.tools().iter().any(|t| t.to_string().contains("\"recall\"")));
    let recalled = turns(&llm)[1].last_tool_result().unwrap();
    assert!(recalled.contains("flat white") && !recalled.contains("espresso"), "{recalled}");
    // Its own session, as the owner, in the target conversation.
    let session = store.session_active(&format!("schedule:{}", job.id)).await.unwrap().expect("the job's session");
    assert_eq!((session.user_id.as_str(), session.conversation.as_str()), ("alice", "web:briefing"));
    let conv = store.conversation_get("web:briefing").await.unwrap().unwrap();
    assert_eq!(conv.owner, "web:alice", "the target conversation is the owner's");

    // The run: scheduled time, start, end, status, delivered message id.
    let run = wait_runs(&*store, job.id, 1, &[RunStatus::Delivered]).await.remove(0);
    assert_eq!((run.fire_at_ms, run.kind, run.error.as_deref()), (due, RunKind::Scheduled, None));
    assert_eq!(run.delivered_id.as_deref(), Some(msgs[0]["id"].to_string().as_str()));
    assert!(run.started_ms >= due && run.ended_ms.unwrap() >= run.started_ms, "{run:?}");
    assert_eq!(run.event_id, format!("schedule:{}:{due}", job.id));
    let next = store.schedules_list(&ScheduleFilter::Id(job.id)).await.unwrap()[0].next_fire_ms.unwrap();
    assert!(next > now_ms() && (next - now_ms()) <= 86_400_000 + 60_000, "tomorrow 07:00 Berlin");
    let decisions = store.decisions_recent(10).await.unwrap();
    assert!(decisions.iter().any(|d| d.decision == "schedule" && d.event_id == run.event_id), "{decisions:?}");

    // `/schedules` shows the job with its next time and its last run.
    app.post("a1", "alice", "/schedules").await;
    let msgs = wait_for(&app, "a1", "/schedules", |m| !texts(m).is_empty()).await;
    let list = &texts(&msgs)[0];
    assert!(
        list.contains(&format!("#{} `coffee`: every `0 7 * * *` (Europe/Berlin) → web:briefing", job.id)),
        "{list}"
    );
    assert!(list.contains("next ") && list.contains("last run ") && list.contains(": delivered (message "), "{list}");
    app.stop().await;
}

#[tokio::test]
async fn heartbeats_speak_only_when_something_is_worth_saying() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    // A heartbeat from the config file, owned by the local operator (the first owner).
    cfg.schedules = vec![ScheduleConfig {
        name: "builds".into(),
        cron: "0 0 1 1 *".into(),
        tz: "UTC".into(),
        prompt: "hb-check: is the build broken?".into(),
        target: "web:heartbeat".parse().unwrap(),
        owner: None,
        mode: ScheduleMode::Heartbeat,
        missed: butler::config::Missed::Skip,
        grace_secs: 60,
    }];
    let app = TestApp::start(cfg, Some(dir)).await;
    let store = app.app.store.clone();
    llm.on("hb-check", Reply::text("NOTHING_TO_REPORT"));
    llm.on("hb-check", Reply::text("The build is red: 3 tests fail."));
    let config_jobs = || async { store.schedules_list(&ScheduleFilter::Scope("config".into())).await.unwrap() };
    eventually("the config job stored at start", || async { !config_jobs().await.is_empty() }).await;
    let mut rows = config_jobs().await;
    let job = rows.remove(0);
    assert_eq!((job.owner.as_str(), job.mode), ("cli:local", ScheduleMode::Heartbeat));

    set_next(&*store, job.id, now_ms()).await;
    let silent = wait_runs(&*store, job.id, 1, &[RunStatus::Silent]).await;
    assert!(silent[0].ended_ms.is_some() && silent[0].delivered_id.is_none());
    let asked = turns(&llm)[0].last_user_text();
    assert!(asked.contains("answer exactly NOTHING_TO_REPORT and nothing else"), "{asked}");
    assert!(texts(&app.messages("heartbeat").await).is_empty(), "nothing said");

    // Run it now (the CLI's path): this time there is something to say.
    let run = scheduler(store.clone()).run_now(&*app.app.ingress, job.id).await.unwrap().unwrap();
    assert_eq!(run.kind, RunKind::Manual);
    let msgs = wait_for(&app, "heartbeat", "the heartbeat speaking", |m| !texts(m).is_empty()).await;
    assert_eq!(texts(&msgs), ["The build is red: 3 tests fail."]);
    let all = wait_runs(&*store, job.id, 2, &[RunStatus::Silent, RunStatus::Delivered]).await;
    let statuses: Vec<RunStatus> = all.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [RunStatus::Delivered, RunStatus::Silent], "newest first");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(texts(&app.messages("heartbeat").await).len(), 1);
    assert_eq!(turns(&llm).len(), 2);
    app.stop().await;
}

/// A mutating test tool that counts its runs.
struct Touch {
    spec: ToolSpec,
    runs: AtomicUsize,
}

#[async_trait]
impl Tool for Touch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self, _ctx: &ToolCtx, _args: &Value) -> Action {
        Action { summary: "touch the lamp".into(), ..Action::default() }
    }

    async fn call(&self, _ctx: &ToolCtx, _args: Value) -> Result<String, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok("touched".into())
    }
}

#[tokio::test]
async fn a_job_never_has_more_rights_than_its_owner() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.access.owners = vec!["web:alice".parse().unwrap()];
    cfg.access.allow = vec!["web:bob".parse().unwrap()];
    // Owners act freely; members may only read.
    cfg.permissions.mode = Mode::FullAuto;
    let members_read_only: PermissionContext =
        serde_json::from_value(json!({"role": "member", "mode": "plan"})).unwrap();
    cfg.permissions.contexts = vec![members_read_only];
    let touch = Arc::new(Touch {
        spec: ToolSpec {
            name: "touch".into(),
            description: "touch the lamp".into(),
            parameters: json!({"type": "object", "properties": {}}),
            read_only: false,
        },
        runs: AtomicUsize::new(0),
    });
    let app = TestApp::start_with(cfg, Some(dir), vec![touch.clone()]).await;
    let store = app.app.store.clone();
    user(&*store, "web:alice", "alice", UserRole::Owner).await;
    user(&*store, "web:bob", "bob", UserRole::Member).await;
    for who in ["alice", "bob", "carol"] {
        llm.on(&format!("lamp-{who}"), Reply::tool_call("touch", json!({})));
        llm.on(&format!("lamp-{who}"), Reply::text("done"));
    }
    let mut ids = Vec::new();
    for who in ["alice", "bob", "carol"] {
        let def = spec(
            &format!("lamp-{who}"),
            "0 7 * * *",
            "UTC",
            &format!("lamp-{who}: touch the lamp"),
            &format!("web:lamp-{who}"),
        );
        let job = put(&*store, &def, &format!("web:{who}"), Some(who)).await;
        set_next(&*store, job.id, now_ms()).await;
        ids.push(job.id);
    }
    wait_runs(&*store, ids[0], 1, &[RunStatus::Delivered]).await;
    wait_runs(&*store, ids[1], 1, &[RunStatus::Delivered]).await;
    assert_eq!(touch.runs.load(Ordering::SeqCst), 1, "the owner's job acted; the member's was refused");
    let audit = store.audit_recent(20).await.unwrap();
    let outcome = |user: &str| audit.iter().find(|a| a.user_id == user && a.tool == "touch").map(|a| a.outcome.clone());
    assert_eq!(outcome("alice").as_deref(), Some("allowed"));
    assert_eq!(outcome("bob").as_deref(), Some("denied"), "{audit:?}");
    // carol may not use Butler: her job does not run at all, and says why.
    let carol = wait_runs(&*store, ids[2], 1, &[RunStatus::Dropped]).await.remove(0);
    assert!(carol.error.as_deref().unwrap().contains("its owner web:carol may no longer use Butler"), "{carol:?}");
    assert!(!turns(&llm).iter().any(|r| r.last_user_text().contains("lamp-carol")));
    let decisions = store.decisions_recent(20).await.unwrap();
    assert!(decisions
        .iter()
        .any(|d| d.decision == "drop" && d.event_id == carol.event_id && d.reason.contains("web:carol")));
    app.stop().await;
}

/// A channel whose first `failures` sends fail with a temporary error.
struct Flaky {
    failures: AtomicUsize,
    attempts: AtomicUsize,
    shown: Mutex<Vec<String>>,
}

#[async_trait]
impl Channel for Flaky {
    fn name(&self) -> &str {
        "flaky"
    }

    fn caps(&self) -> Caps {
        Caps {
            buttons: false,
            edit: false,
            max_len: 4000,
            typing: false,
            min_edit_interval: Duration::from_millis(50),
            format: TextFormat::Markdown,
            exclusive: false,
            reply_window: false,
        }
    }

    async fn send(&self, msg: &Outbound) -> Result<MessageRef, ChannelError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        if self.failures.load(Ordering::SeqCst) > 0 {
            self.failures.fetch_sub(1, Ordering::SeqCst);
            return Err(ChannelError::Transient("502 Bad Gateway".into()));
        }
        let mut shown = self.shown.lock().unwrap();
        shown.push(msg.text.clone());
        Ok(MessageRef { conversation: msg.conversation.clone(), id: format!("flaky-{}", shown.len()) })
    }

    async fn edit(&self, _target: &MessageRef, _msg: &Outbound) -> Result<(), ChannelError> {
        Err(ChannelError::Rejected("no edits".into()))
    }
}

#[tokio::test]
async fn delivery_to_another_channel_is_retried_with_backoff() {
    let llm = FakeLlm::start().await;
    let (cfg, dir) = config(Some(&llm.openai_url()));
    let flaky =
        Arc::new(Flaky { failures: AtomicUsize::new(1), attempts: AtomicUsize::new(0), shown: Mutex::new(vec![]) });
    let app = TestApp::start_full(cfg, Some(dir), vec![], vec![flaky.clone()]).await;
    let store = app.app.store.clone();
    llm.on("report-flaky", Reply::text("Weekly report: all good."));
    let job =
        put(&*store, &spec("report", "0 9 * * MON", "UTC", "report-flaky", "flaky:ops-room"), "cli:local", None).await;
    set_next(&*store, job.id, now_ms()).await;
    let run = wait_runs(&*store, job.id, 1, &[RunStatus::Delivered]).await.remove(0);
    assert_eq!(*flaky.shown.lock().unwrap(), ["Weekly report: all good."], "delivered once");
    assert_eq!(flaky.attempts.load(Ordering::SeqCst), 2, "the failed send was retried");
    assert_eq!((run.delivery_attempts, run.delivered_id.as_deref()), (2, Some("flaky-1")));
    app.stop().await;
}

#[tokio::test]
async fn a_restart_neither_loses_nor_repeats_a_run() {
    let llm = FakeLlm::start().await;
    let (cfg, dir) = config(Some(&llm.openai_url()));
    llm.on("restart-brief", Reply::text("Caught up after the restart."));
    let mut app = TestApp::start(cfg.clone(), Some(dir)).await;
    let job =
        put(&*app.app.store, &spec("daily", "30 6 * * *", "UTC", "restart-brief", "web:restart"), "web:local", None)
            .await;
    let dir = app._dir.take();
    app.stop().await;
    // Down across the fire time: it was due five minutes ago (within the hour of grace).
    {
        let store = butler::store::connect(cfg.database.url.expose(), 1).await.unwrap();
        set_next(&*store, job.id, now_ms() - 5 * 60_000).await;
        store.close().await;
    }
    let mut app = TestApp::start(cfg.clone(), dir).await;
    wait_for(&app, "restart", "the catch-up run", |m| texts(m).len() == 1).await;
    let run = wait_runs(&*app.app.store, job.id, 1, &[RunStatus::Delivered]).await.remove(0);
    assert_eq!(run.kind, RunKind::CatchUp);
    let dir = app._dir.take();
    app.stop().await;
    let app = TestApp::start(cfg, dir).await;
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(texts(&app.messages("restart").await).len(), 1, "not repeated by another restart");
    assert_eq!(runs(&*app.app.store, job.id).await.len(), 1);
    assert_eq!(turns(&llm).len(), 1);
    app.stop().await;
}

#[tokio::test]
async fn a_briefing_prompt_is_not_distilled_into_the_owners_memory() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.access.owners = vec!["web:alice".parse().unwrap()];
    cfg.memory.archivist = true;
    let app = TestApp::start(cfg, Some(dir)).await;
    let store = app.app.store.clone();
    user(&*store, "web:alice", "alice", UserRole::Owner).await;
    llm.on("weather-brief", Reply::text("Sunny, 21 degrees."));
    let job = put(
        &*store,
        &spec("weather", "0 7 * * *", "UTC", "weather-brief: I live in Porto, what is the weather?", "web:wx"),
        "web:alice",
        Some("alice"),
    )
    .await;
    set_next(&*store, job.id, now_ms() + 100).await;
    wait_for(&app, "wx", "the briefing", |m| texts(m).iter().any(|t| t.contains("Sunny"))).await;
    wait_runs(&*store, job.id, 1, &[RunStatus::Delivered]).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Only the turn called the model: a job's prompt is an instruction, not something the owner said.
    assert_eq!(llm.request_count(), 1, "no archivist call for a scheduled prompt");
    assert!(store.memory_list(&MemoryScope::personal("alice"), 10).await.unwrap().is_empty());
    app.stop().await;
}
