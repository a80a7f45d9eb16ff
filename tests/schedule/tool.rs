//! The `schedule` and `schedules_list` tools in real turns: a user asks, the model calls the
//! tool, and the job is theirs (their zone by default, this conversation by default); list,
//! pause, resume and cancel work on their own jobs only, another user's attempt changes nothing;
//! creating is a mutating call that asks for approval in the default mode.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::{put, spec, texts, wait_for};
use butler::config::Mode;
use butler::store::{ScheduleFilter, ScheduleRow, ScheduleSource, Store};
use serde_json::{json, Value};

async fn start(mode: Mode) -> (TestApp, FakeLlm) {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.access.allow = vec!["web:alice".parse().unwrap(), "web:bob".parse().unwrap()];
    cfg.agent.timezone = "Europe/Berlin".into();
    cfg.permissions.mode = mode;
    (TestApp::start(cfg, Some(dir)).await, llm)
}

/// `user` says `text` in web conversation `conv`; the model calls `tool` with `args`, then
/// answers "ok"; returns what the tool said.
async fn ask(app: &TestApp, llm: &FakeLlm, conv: &str, user: &str, text: &str, tool: &str, args: Value) -> String {
    llm.on(text, Reply::tool_call(tool, args));
    llm.on(text, Reply::text("ok"));
    let before = crate::turns(llm).len();
    let replies = texts(&app.messages(conv).await).len();
    assert_eq!(app.post(conv, user, text).await.0, 202);
    wait_for(app, conv, text, |m| texts(m).len() > replies).await;
    crate::eventually("the second model call", || async { crate::turns(llm).len() >= before + 2 }).await;
    crate::turns(llm)[before + 1].last_tool_result().expect("the tool's result")
}

async fn user_id(app: &TestApp, identity: &str) -> String {
    app.app.store.identity_user(&identity.parse().unwrap()).await.unwrap().expect("known user").id
}

async fn jobs_of(store: &dyn Store, user: &str) -> Vec<ScheduleRow> {
    store.schedules_list(&ScheduleFilter::Owner(user.to_string())).await.unwrap()
}

#[tokio::test]
async fn a_user_creates_lists_pauses_and_cancels_their_jobs() {
    let (app, llm) = start(Mode::FullAuto).await;
    let store = app.app.store.clone();
    let remind = json!({"action": "create", "at": "in 20 minutes", "prompt": "Remind me to stretch."});
    let said = ask(&app, &llm, "a1", "alice", "remind me in 20 minutes to stretch", "schedule", remind).await;
    assert!(said.starts_with("Scheduled job #"), "{said}");
    let alice = user_id(&app, "web:alice").await;
    let jobs = jobs_of(&*store, &alice).await;
    assert_eq!(jobs.len(), 1);
    let r = &jobs[0];
    assert_eq!(
        (r.owner.as_str(), r.target.as_str(), r.source, r.name.as_str()),
        ("web:alice", "web:a1", ScheduleSource::Tool, "remind-me-to-stretch")
    );
    let at = r.at_ms.expect("a one-shot");
    assert!((at - butler::store::now_ms() - 20 * 60_000).abs() < 30_000, "in 20 minutes");
    assert_eq!((r.cron.as_deref(), r.next_fire_ms), (None, Some(at)));

    let brief = json!({"action": "create", "cron": "0 8 * * 1-5", "prompt": "Brief me on my calendar and the news.", "name": "morning", "mode": "heartbeat"});
    let said = ask(&app, &llm, "a1", "alice", "every weekday at 8 brief me", "schedule", brief).await;
    assert!(said.contains("every `0 8 * * 1-5` (Europe/Berlin)"), "the user's zone by default: {said}");
    let morning = jobs_of(&*store, &alice).await.into_iter().find(|j| j.name == "morning").unwrap();
    assert_eq!((morning.tz.as_str(), morning.mode), ("Europe/Berlin", butler::config::ScheduleMode::Heartbeat));

    let listed = ask(&app, &llm, "a1", "alice", "what is scheduled", "schedules_list", json!({})).await;
    assert!(
        listed.contains("`remind-me-to-stretch`") && listed.contains("`morning`") && listed.contains("no runs yet"),
        "{listed}"
    );

    let id = morning.id;
    let said =
        ask(&app, &llm, "a1", "alice", "pause the briefing", "schedule", json!({"action": "pause", "id": id})).await;
    assert!(said.ends_with(&format!("Job #{id} `morning` paused.")), "{said}");
    assert!(store.schedules_list(&ScheduleFilter::Id(id)).await.unwrap()[0].paused);
    ask(&app, &llm, "a1", "alice", "resume the briefing", "schedule", json!({"action": "resume", "id": id})).await;
    assert!(!store.schedules_list(&ScheduleFilter::Id(id)).await.unwrap()[0].paused);
    let said =
        ask(&app, &llm, "a1", "alice", "cancel the briefing", "schedule", json!({"action": "cancel", "id": id})).await;
    assert!(said.ends_with(&format!("Job #{id} `morning` cancelled.")), "{said}");
    assert_eq!(jobs_of(&*store, &alice).await.len(), 1);

    // Bad definitions come back to the model as errors it can fix.
    let bad = json!({"action": "create", "cron": "0 8 * *", "prompt": "x"});
    let said = ask(&app, &llm, "a1", "alice", "a broken job", "schedule", bad).await;
    assert!(said.contains("5-field"), "{said}");
    app.stop().await;
}

#[tokio::test]
async fn only_the_owner_changes_a_job() {
    let (app, llm) = start(Mode::FullAuto).await;
    let store = app.app.store.clone();
    // Both users exist and alice has a web conversation of her own.
    ask(&app, &llm, "a1", "alice", "hello from alice", "schedules_list", json!({})).await;
    ask(&app, &llm, "b1", "bob", "hello from bob", "schedules_list", json!({})).await;
    let alice = user_id(&app, "web:alice").await;
    let job =
        put(&*store, &spec("alice-brief", "0 8 * * *", "UTC", "Brief alice.", "web:a1"), "web:alice", Some(&alice))
            .await;
    let before = store.schedules_list(&ScheduleFilter::Id(job.id)).await.unwrap();
    for action in ["pause", "cancel", "resume"] {
        let said = ask(
            &app,
            &llm,
            "b1",
            "bob",
            &format!("bob tries {action}"),
            "schedule",
            json!({"action": action, "id": job.id}),
        )
        .await;
        assert!(
            said.ends_with(&format!("there is no job #{} of yours (schedules_list shows them)", job.id)),
            "{action}: {said}"
        );
    }
    assert_eq!(store.schedules_list(&ScheduleFilter::Id(job.id)).await.unwrap(), before, "unchanged");
    let listed = ask(&app, &llm, "b1", "bob", "bob lists", "schedules_list", json!({})).await;
    assert!(listed.ends_with("The user has no scheduled jobs."), "{listed}");
    // Nor may bob's jobs deliver into alice's conversation.
    let spam = json!({"action": "create", "cron": "* * * * *", "prompt": "spam", "target": "web:a1"});
    let said = ask(&app, &llm, "b1", "bob", "bob targets alice", "schedule", spam).await;
    assert!(said.contains("refused") && said.contains("belongs to someone else"), "{said}");
    let elsewhere = json!({"action": "create", "cron": "* * * * *", "prompt": "spam", "target": "telegram:123"});
    let said = ask(&app, &llm, "b1", "bob", "bob targets telegram", "schedule", elsewhere).await;
    assert!(said.contains("refused"), "{said}");
    let bob = user_id(&app, "web:bob").await;
    assert!(jobs_of(&*store, &bob).await.is_empty());
    // `/schedules` shows each user their own jobs only.
    app.post("a1", "alice", "/schedules").await;
    let msgs =
        wait_for(&app, "a1", "alice's list", |m| texts(m).iter().any(|t| t.starts_with("Your scheduled jobs:"))).await;
    assert!(texts(&msgs).iter().any(|t| t.contains("`alice-brief`")));
    app.post("b1", "bob", "/schedules").await;
    wait_for(&app, "b1", "bob's list", |m| texts(m).iter().any(|t| t.starts_with("You have no scheduled jobs"))).await;
    app.stop().await;
}

#[tokio::test]
async fn creating_a_job_asks_for_approval_in_the_default_mode() {
    let (app, llm) = start(Mode::Default).await;
    let create = json!({"action": "create", "at": "in 1 hour", "prompt": "Call mum."});
    llm.on("remind me to call mum", Reply::tool_call("schedule", create));
    llm.on("remind me to call mum", Reply::text("Scheduled."));
    app.post("a1", "alice", "remind me to call mum").await;
    let is_request = |x: &Value| x["buttons"][0]["action"].as_str().is_some_and(|a| a.starts_with("ap:"));
    let msgs = wait_for(&app, "a1", "the approval request", |m| m.iter().any(is_request)).await;
    let request = msgs.iter().find(|x| is_request(x)).unwrap();
    assert!(request["text"].as_str().unwrap().contains("schedule a job for you, once at in 1 hour"), "{request}");
    let alice = user_id(&app, "web:alice").await;
    assert!(jobs_of(&*app.app.store, &alice).await.is_empty(), "nothing scheduled before the approval");
    let action = request["buttons"][0]["action"].as_str().unwrap().to_string();
    let body = json!({"conversation": "a1", "user": "alice", "action": action});
    let status = app.http.post(app.url("/api/v1/actions")).json(&body).send().await.unwrap().status();
    assert_eq!(status, 202);
    wait_for(&app, "a1", "the answer", |m| texts(m).iter().any(|t| t == "Scheduled.")).await;
    assert_eq!(jobs_of(&*app.app.store, &alice).await.len(), 1);
    // Listing is read-only: it runs without asking.
    let listed = ask(&app, &llm, "a1", "alice", "list them", "schedules_list", json!({})).await;
    assert!(listed.contains("`call-mum`"), "{listed}");
    app.stop().await;
}

/// Each person's own clock (issue 30, point 2): alice moves to Asia/Tokyo and bob to
/// America/New_York with `/timezone`; the same "every day at 08:00" then fires at each one's
/// own 08:00, across New York's change to daylight saving time too; a bad zone is refused.
#[tokio::test]
async fn each_person_s_every_day_at_eight_fires_at_their_own_eight() {
    use chrono::{TimeZone, Timelike};
    let (app, llm) = start(Mode::FullAuto).await;
    let store = app.app.store.clone();
    let said = |conv: &'static str| {
        let app = &app;
        async move { texts(&app.messages(conv).await) }
    };
    assert_eq!(app.post("tz-bad", "alice", "/timezone Mars/Olympus").await.0, 202);
    wait_for(&app, "tz-bad", "/timezone Mars/Olympus", |m| !texts(m).is_empty()).await;
    assert!(said("tz-bad").await[0].contains("not a time zone I know"), "{:?}", said("tz-bad").await);
    // (user, conversation, zone)
    let people = [("alice", "tz-a", "Asia/Tokyo"), ("bob", "tz-b", "America/New_York")];
    for (user, conv, zone) in people {
        let set = format!("/timezone {zone}");
        assert_eq!(app.post(conv, user, &set).await.0, 202);
        wait_for(&app, conv, &set, |m| !texts(m).is_empty()).await;
        assert!(said(conv).await[0].contains(&format!("Your time zone is now {zone}")), "{:?}", said(conv).await);
        let daily = json!({"action": "create", "cron": "0 8 * * *", "prompt": "Good morning!", "name": "daily"});
        let out =
            ask(&app, &llm, conv, user, &format!("{user}: every day at 8 say good morning"), "schedule", daily).await;
        assert!(out.contains(&format!("({zone})")), "the job takes the person's zone: {out}");
    }
    for (user, _, zone) in people {
        let id = user_id(&app, &format!("web:{user}")).await;
        let job = jobs_of(&*store, &id).await.into_iter().find(|j| j.name == "daily").expect("the daily job");
        assert_eq!(job.tz, zone);
        let tz: chrono_tz::Tz = zone.parse().unwrap();
        // The next fire is 08:00 where they are.
        let next = tz.timestamp_millis_opt(job.next_fire_ms.expect("a next fire")).unwrap();
        assert_eq!((next.hour(), next.minute()), (8, 0), "{user}: {next}");
        // Across New York's switch to summer time (2027-03-14) each fire stays at 08:00 there.
        let cron = butler::schedule::cron::parse_cron(job.cron.as_deref().unwrap()).unwrap();
        let mut at = chrono::Utc.with_ymd_and_hms(2027, 3, 12, 0, 0, 0).unwrap().timestamp_millis();
        let mut utc_hours = Vec::new();
        for _ in 0..4 {
            at = butler::schedule::cron::next_after(&cron, tz, at).expect("fires");
            let local = tz.timestamp_millis_opt(at).unwrap();
            assert_eq!((local.hour(), local.minute()), (8, 0), "{user}: {local}");
            utc_hours.push(chrono::Utc.timestamp_millis_opt(at).unwrap().hour());
        }
        let want: &[u32] = if zone == "America/New_York" { &[13, 13, 12, 12] } else { &[23, 23, 23, 23] };
        assert_eq!(utc_hours, want, "{user}");
    }
    app.stop().await;
}
