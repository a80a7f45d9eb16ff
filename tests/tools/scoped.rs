//! A tool's store serves one user: every probe a tool could make on another user's rows (their
//! memories, their jobs and the runs of those, their conversations) finds nothing and changes
//! nothing, while the same probe by the rows' owner reaches them.

use crate::Harness;
use butler::channel::{ConversationKind, ConversationRef, Identity};
use butler::schedule::jobs::{self, JobOwner, JobSpec};
use butler::store::{
    now_ms, MemoryScope, NewMessage, NewSession, NewUser, RunClaim, RunKind, ScheduleChange, ScheduleFilter,
    ScheduleSource, TranscriptScope, UserRole, UserRow,
};
use butler::tools::{ToolStore, ToolStores};

/// What a tool could try on someone's rows.
#[derive(Clone, Copy, Debug)]
enum Probe {
    SearchMemory,
    ForgetMemory,
    ListJobs,
    FindJob,
    PauseJob,
    LastRun,
    PutJob,
    SearchConversations,
}

const PROBES: [Probe; 8] = [
    Probe::SearchMemory,
    Probe::ForgetMemory,
    Probe::ListJobs,
    Probe::FindJob,
    Probe::PauseJob,
    Probe::LastRun,
    Probe::PutJob,
    Probe::SearchConversations,
];

/// Bob's rows, made fresh for each probe.
struct Rows {
    memory: i64,
    job: i64,
    /// Bob's direct conversation.
    session: String,
}

fn user(id: &str) -> UserRow {
    UserRow { id: id.into(), display_name: None, role: UserRole::Member, timezone: "UTC".into(), created_ms: 0 }
}

fn bob_job_spec(name: &str) -> JobSpec {
    JobSpec {
        name: Some(name.into()),
        cron: Some("0 8 * * *".into()),
        tz: "UTC".into(),
        prompt: "brief me".into(),
        target: "web:bob".into(),
        grace_secs: 60,
        ..JobSpec::default()
    }
}

fn bob_owner() -> JobOwner {
    JobOwner { identity: Identity::new("web", "bob"), user_id: Some("bob".into()) }
}

async fn bob_rows(h: &Harness, n: usize) -> Rows {
    let memory = h.store.memory_add(&MemoryScope::personal("bob"), "bob's secret fact", None).await.unwrap().id;
    let new = jobs::build(&bob_job_spec(&format!("brief-{n}")), &bob_owner(), ScheduleSource::Tool, now_ms()).unwrap();
    let job = h.store.schedule_put(&new).await.unwrap();
    let fire = job.next_fire_ms.unwrap();
    let claim = RunClaim {
        schedule_id: job.id,
        fire_at_ms: fire,
        kind: RunKind::Scheduled,
        event_id: format!("schedule:{}:{fire}", job.id),
        outbox_key: format!("schedule:{}:{fire}:reply", job.id),
        started_ms: now_ms(),
        advance: None,
    };
    h.store.schedule_claim(&claim).await.unwrap().expect("a run of bob's job");
    let session = NewSession {
        id: format!("bob-s{n}"),
        key: format!("dm:web:b{n}:bob"),
        user_id: "bob".into(),
        conversation: format!("web:b{n}"),
        system_prompt: "You are Butler.".into(),
    };
    h.store.session_open(&session).await.unwrap();
    h.store.messages_append(&session.id, &[NewMessage::user("bob's secret plan", None, None)]).await.unwrap();
    Rows { memory, job: job.id, session: session.id }
}

/// Runs `probe` through `store` on `rows`: whether it reached them (read or changed them).
async fn reaches(store: &ToolStore, probe: Probe, rows: &Rows, n: usize) -> bool {
    match probe {
        Probe::SearchMemory => store.memory_search("secret", 10).await.unwrap().iter().any(|m| m.id == rows.memory),
        Probe::ForgetMemory => store.memory_forget(rows.memory).await.unwrap(),
        Probe::ListJobs => store.schedules().await.unwrap().iter().any(|j| j.id == rows.job),
        Probe::FindJob => store.schedule(rows.job).await.unwrap().is_some(),
        Probe::PauseJob => store.schedule_set(rows.job, &ScheduleChange::Pause).await.unwrap(),
        Probe::LastRun => store.schedule_last_run(rows.job).await.unwrap().is_some(),
        Probe::PutJob => {
            let new = jobs::build(&bob_job_spec(&format!("brief-{n}")), &bob_owner(), ScheduleSource::Tool, now_ms())
                .unwrap();
            let edited = butler::store::NewSchedule { prompt: "changed".into(), ..new };
            store.schedule_put(&edited).await.is_ok()
        }
        Probe::SearchConversations => {
            let hits = store.conversation_search(&TranscriptScope::Private, "secret", None, 10).await.unwrap();
            hits.iter().any(|hit| hit.session_id == rows.session)
        }
    }
}

/// Whether bob's rows are as [`bob_rows`] made them.
async fn untouched(h: &Harness, rows: &Rows) -> bool {
    let memories = h.store.memory_list(&MemoryScope::personal("bob"), 100).await.unwrap();
    let jobs = h.store.schedules_list(&ScheduleFilter::Id(rows.job)).await.unwrap();
    memories.iter().any(|m| m.id == rows.memory) && jobs.first().is_some_and(|j| !j.paused && j.prompt == "brief me")
}

#[tokio::test]
async fn a_tool_store_never_reaches_another_users_rows() {
    let h = Harness::new().await;
    for (id, who) in [("u1", "alice"), ("bob", "bob")] {
        let new = NewUser { id: id.into(), display_name: None, role: UserRole::Member, timezone: "UTC".into() };
        h.store.user_ensure(&Identity::new("web", who), &new).await.unwrap();
    }
    let transcripts = std::sync::Arc::new(butler::memory::Transcripts::new(h.store.clone()));
    let stores = ToolStores::new(h.store.clone(), h.store.clone(), h.store.clone(), h.store.clone(), transcripts);
    let serve = |id: &str, who: &str| {
        stores.serve(&user(id), &Identity::new("web", who), &ConversationRef::new("web", who), ConversationKind::Direct)
    };
    let (alice, bob) = (serve("u1", "alice"), serve("bob", "bob"));
    // Each probe: by alice (another user) it reaches nothing and changes nothing; by bob it does.
    for (n, probe) in PROBES.into_iter().enumerate() {
        let rows = bob_rows(&h, n).await;
        assert!(!reaches(&alice, probe, &rows, n).await, "{probe:?}: alice's tool store reached bob's rows");
        assert!(untouched(&h, &rows).await, "{probe:?}: alice's tool store changed bob's rows");
        assert!(reaches(&bob, probe, &rows, n).await, "{probe:?}: bob's own tool store must reach his rows");
    }
}
