//! Child agents (`delegate`) through a real Butler with the fake LLM: a fresh context on the
//! worker tier with its share of the tools, several at once (at most `max_parallel`), depth,
//! iteration and time limits with partial answers, approvals asked inside a child, `/stop` and
//! `/status`, background tasks with `/tasks` and `/cancel`, budgets across a turn and its
//! children, and the audit of each child.
//!
//! The fake LLM answers by the last user text: a child's is its task, so each child is
//! scripted by a word of its task, the parent by a word of the user's message.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, RecordedRequest, Reply};
use crate::support::touch::Touch;
use butler::config::{ArchetypeConfig, Config, LlmTier};
use butler::store::{DelegationFilter, DelegationRow, DelegationStatus};
use serde_json::json;
use std::time::{Duration, Instant};

pub(super) async fn start(llm: &FakeLlm, tune: impl FnOnce(&mut Config)) -> (TestApp, std::sync::Arc<Touch>) {
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.tools.workspace_dir = dir.path().join("ws").display().to_string();
    cfg.llm.tiers.insert("worker".into(), LlmTier { model: Some("worker-model".into()), ..Default::default() });
    cfg.agent.archetypes = vec![ArchetypeConfig {
        name: "researcher".into(),
        tier: None,
        tools: Some(vec!["now".into(), "recall".into(), "web_fetch".into()]),
        prompt: "You research and report facts with sources.".into(),
    }];
    tune(&mut cfg);
    let touch = Touch::new();
    (TestApp::start_with(cfg, Some(dir), vec![touch.clone()]).await, touch)
}

/// The tool names a request offered, sorted.
fn offered(req: &RecordedRequest) -> Vec<String> {
    let mut names: Vec<String> =
        req.tools().iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_string)).collect();
    names.sort();
    names
}

/// The tool results a request carries, in order.
pub(super) fn tool_results(req: &RecordedRequest) -> Vec<String> {
    req.messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().map(str::to_string).unwrap_or_else(|| m["content"].to_string()))
        .collect()
}

pub(super) async fn rows(app: &TestApp) -> Vec<DelegationRow> {
    let filter = DelegationFilter { limit: 100, ..Default::default() };
    let mut rows = app.app.store.delegations_list(&filter).await.unwrap();
    rows.sort_by(|a, b| a.task.cmp(&b.task));
    rows
}

/// Waits (30 s at most) until an assistant message of `conversation` contains `needle`.
pub(super) async fn wait_text(app: &TestApp, conversation: &str, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let msgs = app.messages(conversation).await;
        if let Some(m) =
            msgs.iter().find(|m| m["role"] == "assistant" && m["text"].as_str().unwrap_or("").contains(needle))
        {
            return m["text"].as_str().unwrap_or_default().to_string();
        }
        assert!(Instant::now() < deadline, "no reply with {needle:?} in {conversation}: {msgs:#?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

pub(super) async fn wait_until<F: std::future::Future<Output = bool>>(what: &str, mut f: impl FnMut() -> F) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_child_gets_a_fresh_context_its_share_of_tools_and_the_worker_model() {
    let llm = FakeLlm::start().await;
    let (app, _) = start(&llm, |_| {}).await;
    let task = "child-a: find the opening hours of the bakery";
    llm.on(
        "plan-1",
        Reply::tool_call(
            "delegate",
            json!({"task": task, "archetype": "researcher", "tools": ["now", "recall", "touch"]}),
        ),
    );
    llm.on("child-a", Reply::text("Open 9 to 5 (source: the sign).").usage(100, 20));
    llm.on("plan-1", Reply::text("The bakery opens at 9."));
    app.post("c1", "local", "plan-1: when does the bakery open? SECRET-PARENT-WORD").await;
    wait_text(&app, "c1", "The bakery opens at 9.").await;

    let parent = llm.requests_for("plan-1", 2).await;
    assert!(offered(&parent[0]).contains(&"delegate".to_string()), "{:?}", offered(&parent[0]));
    let child = &llm.requests_for("child-a", 1).await[0];
    assert_eq!(child.model(), "worker-model", "the worker tier's model");
    assert_eq!(parent[0].model(), "fake-model");
    let system = child.system_text();
    assert!(system.contains("You research and report facts with sources."), "{system}");
    // A fresh context: the task alone, never the parent's transcript or prompt.
    let body = child.body.to_string();
    assert!(!body.contains("SECRET-PARENT-WORD") && !body.contains("plan-1"), "{body}");
    let roles: Vec<&str> = child.messages().iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["system", "user"]);
    assert!(child.last_user_text().contains(task));
    // parent's ∩ archetype's ∩ the call's: touch is not the archetype's, web_fetch not asked for.
    assert_eq!(offered(child), ["now", "recall"]);

    let result = parent[1].last_tool_result().expect("the child's answer as the tool result");
    let cases = ["Open 9 to 5 (source: the sign).", "model worker-model", "100 input + 20 output tokens"];
    for needle in cases {
        assert!(result.contains(needle), "{needle:?} in {result}");
    }
    let rows = rows(&app).await;
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(
        (r.status, r.tier.as_str(), r.depth, r.tools.clone()),
        (DelegationStatus::Done, "worker", 1, vec!["now".to_string(), "recall".to_string()])
    );
    assert_eq!((r.input_tokens, r.output_tokens), (100, 20));
    // The child's transcript is its own session's.
    let session = app.app.store.session_active(&format!("delegate:{}", r.id)).await.unwrap().expect("child session");
    let stored = app.app.store.messages_recent(&session.id, 10).await.unwrap();
    assert_eq!(stored.len(), 2, "the task and the answer");
    // The audit names archetype, tier, model, tools and outcome.
    let audit = app.app.store.audit_recent(20).await.unwrap();
    let row = audit.iter().find(|a| a.tool == "delegate").expect("a delegate audit row");
    assert_eq!(row.outcome, "done");
    for needle in ["archetype researcher", "tier worker", "model worker-model", "tools [now, recall]"] {
        assert!(row.reason.contains(needle), "{needle:?} in {}", row.reason);
    }
    app.stop().await;
}

#[tokio::test]
async fn children_of_one_answer_run_at_most_max_parallel_at_once_and_a_failing_one_orphans_none() {
    let llm = FakeLlm::start().await;
    let (app, _) = start(&llm, |c| c.agent.delegation.max_parallel = 2).await;
    let call = |t: &str| json!({"task": t});
    llm.on(
        "plan-2",
        Reply::tool_call("delegate", call("child-p1 first"))
            .and_tool_call("delegate", call("child-p2 second"))
            .and_tool_call("delegate", call("child-p3 third")),
    );
    llm.on("child-p1", Reply::text("one").first_byte_delay(Duration::from_secs(3)));
    llm.on("child-p2", Reply::text("two").first_byte_delay(Duration::from_secs(3)));
    llm.on("child-p3", Reply::server_error(500));
    llm.on("plan-2", Reply::text("all three came back"));
    app.post("c2", "local", "plan-2 three things").await;
    let count = |needle: &str| llm.requests().iter().filter(|r| r.last_user_text().contains(needle)).count();
    wait_until("two children running", || async { count("child-p1") == 1 && count("child-p2") == 1 }).await;
    // Both slow children are running: the third waits for a free place.
    assert_eq!(count("child-p3"), 0, "at most max_parallel = 2 children at once");
    wait_text(&app, "c2", "all three came back").await;
    let parent = llm.requests_for("plan-2", 2).await;
    let results = tool_results(&parent[1]);
    assert_eq!(results.len(), 3, "every call got its result: {results:#?}");
    assert!(results[0].starts_with("one") && results[1].starts_with("two"), "{results:#?}");
    assert!(results[2].contains("the helper failed"), "{results:#?}");
    let statuses: Vec<DelegationStatus> = rows(&app).await.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [DelegationStatus::Done, DelegationStatus::Done, DelegationStatus::Failed]);
    app.stop().await;
}

#[tokio::test]
async fn children_delegate_down_to_max_depth_and_no_further() {
    let llm = FakeLlm::start().await;
    let (app, _) = start(&llm, |c| c.agent.delegation.max_depth = 2).await;
    llm.on("plan-3", Reply::tool_call("delegate", json!({"task": "child-d1 middle"})));
    llm.on("child-d1", Reply::tool_call("delegate", json!({"task": "child-d2 deep"})));
    llm.on("child-d2", Reply::text("deep answer"));
    llm.on("child-d1", Reply::text("middle answer"));
    llm.on("plan-3", Reply::text("top answer"));
    app.post("c3", "local", "plan-3 go deep").await;
    wait_text(&app, "c3", "top answer").await;
    let d1 = llm.requests_for("child-d1", 2).await;
    let d2 = llm.requests_for("child-d2", 1).await;
    assert!(offered(&d1[0]).contains(&"delegate".to_string()), "depth 1 < 2 may delegate");
    assert!(!offered(&d2[0]).contains(&"delegate".to_string()), "depth 2 = max_depth is not offered delegate");
    assert!(d1[1].last_tool_result().unwrap_or_default().contains("deep answer"));
    let parent = llm.requests_for("plan-3", 2).await;
    assert!(parent[1].last_tool_result().unwrap_or_default().contains("middle answer"));
    let depths: Vec<i32> = rows(&app).await.iter().map(|r| r.depth).collect();
    assert_eq!(depths, [1, 2]);
    app.stop().await;
}

#[tokio::test]
async fn a_child_stopped_by_a_limit_returns_its_partial_answer_and_the_reason() {
    let llm = FakeLlm::start().await;
    let (app, _) = start(&llm, |c| {
        c.agent.delegation.max_iterations = 2;
        c.agent.delegation.timeout_secs = 2;
    })
    .await;
    llm.on(
        "plan-4",
        Reply::tool_call("delegate", json!({"task": "child-loop keeps going"}))
            .and_tool_call("delegate", json!({"task": "child-slow takes long"})),
    );
    llm.on_every("child-loop", Reply::tool_call("now", json!({})).with_text("found part of it"));
    llm.on("child-slow", Reply::text("too late").first_byte_delay(Duration::from_secs(20)));
    llm.on("plan-4", Reply::text("partial results noted"));
    app.post("c4", "local", "plan-4 limits").await;
    wait_text(&app, "c4", "partial results noted").await;
    let parent = llm.requests_for("plan-4", 2).await;
    let results = tool_results(&parent[1]);
    let cases = [
        (0, "[partial answer: the helper was stopped by its limit of 2 model calls"),
        (0, "found part of it"),
        (1, "[partial answer: the helper was stopped by its time limit of 2 s"),
    ];
    for (i, needle) in cases {
        assert!(results[i].contains(needle), "{needle:?} in {}", results[i]);
    }
    assert_eq!(llm.requests().iter().filter(|r| r.last_user_text().contains("child-loop")).count(), 2);
    let statuses: Vec<DelegationStatus> = rows(&app).await.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [DelegationStatus::Stopped, DelegationStatus::Stopped]);
    app.stop().await;
}

#[tokio::test]
async fn an_approval_asked_inside_a_child_is_asked_in_the_parents_conversation_and_resumes_the_chain() {
    let llm = FakeLlm::start().await;
    let (app, touch) = start(&llm, |_| {}).await;
    llm.on("plan-5", Reply::tool_call("delegate", json!({"task": "child-touch the lamp"})));
    llm.on("child-touch", Reply::tool_call("touch", json!({"name": "lamp"})));
    llm.on("child-touch", Reply::text("touched the lamp"));
    llm.on("plan-5", Reply::text("Your lamp is touched."));
    app.post("c5", "local", "plan-5 touch my lamp").await;
    // The request shows in the parent's conversation, with buttons, and nothing ran yet.
    app.approve("c5").await;
    wait_text(&app, "c5", "Your lamp is touched.").await;
    assert_eq!(touch.runs(), 1, "the approved call ran once");
    let parent = llm.requests_for("plan-5", 2).await;
    assert!(parent[1].last_tool_result().unwrap_or_default().contains("touched the lamp"));
    assert_eq!(llm.requests().iter().filter(|r| r.last_user_text().contains("child-touch")).count(), 2);
    assert_eq!(rows(&app).await[0].status, DelegationStatus::Done);
    app.stop().await;
}

#[tokio::test]
async fn stop_ends_the_parent_and_its_children_and_status_shows_them_running() {
    let llm = FakeLlm::start().await;
    let (app, _) = start(&llm, |_| {}).await;
    llm.on("plan-6", Reply::tool_call("delegate", json!({"task": "child-stuck forever", "archetype": "researcher"})));
    llm.on("child-stuck", Reply::text("never").first_byte_delay(Duration::from_secs(30)));
    app.post("c6", "local", "plan-6 something slow").await;
    llm.requests_for("child-stuck", 1).await;
    app.post("c6", "local", "/status").await;
    let status = wait_text(&app, "c6", "Helpers running").await;
    assert!(status.contains("Helpers running: 1") && status.contains("child-stuck forever"), "{status}");
    assert!(status.contains("researcher") && status.contains("worker-model"), "{status}");
    app.post("c6", "local", "/stop").await;
    wait_text(&app, "c6", "Stopped").await;
    wait_until("the child to end", || async { !rows(&app).await[0].status.is_open() }).await;
    let r = &rows(&app).await[0];
    assert_eq!((r.status, r.reason.as_deref()), (DelegationStatus::Cancelled, Some("/stop")));
    assert_eq!(
        llm.requests().iter().filter(|r| r.last_user_text().contains("plan-6")).count(),
        1,
        "no model call after /stop"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_background_task_answers_at_once_and_its_result_arrives_later_once() {
    let llm = FakeLlm::start().await;
    let (app, _) = start(&llm, |_| {}).await;
    llm.on("finished. Its task was: child-bg1", Reply::text("Your research found 42."));
    llm.on("ended (cancelled)", Reply::text("The second task was cancelled."));
    llm.on("plan-7", Reply::tool_call("delegate", json!({"task": "child-bg1 research", "background": true})));
    llm.on("plan-7", Reply::text("Started; I will tell you."));
    llm.on("child-bg1", Reply::text("bg result: 42").first_byte_delay(Duration::from_millis(500)));
    app.post("c7", "local", "plan-7 research in the background").await;
    wait_text(&app, "c7", "Started; I will tell you.").await;
    let started = llm.requests_for("plan-7", 2).await[1].last_tool_result().unwrap_or_default();
    assert!(started.starts_with("Started background task t-"), "{started}");
    let answer = wait_text(&app, "c7", "Your research found 42.").await;
    assert_eq!(answer, "Your research found 42.");
    let follow = llm.requests_for("Background task", 1).await;
    assert!(follow[0].last_user_text().contains("bg result: 42"), "{}", follow[0].last_user_text());
    let r = rows(&app).await.remove(0);
    assert_eq!(r.status, DelegationStatus::Done);
    assert!(r.background && r.delivered_ms.is_some());

    // `/tasks` lists it; `/cancel` stops a running one, whose end is reported once.
    llm.on("plan-8", Reply::tool_call("delegate", json!({"task": "child-bg2 long", "background": true})));
    llm.on("plan-8", Reply::text("Second one started."));
    llm.on("child-bg2", Reply::text("never").first_byte_delay(Duration::from_secs(30)));
    app.post("c7", "local", "plan-8 another").await;
    llm.requests_for("child-bg2", 1).await;
    app.post("c7", "local", "/tasks").await;
    let tasks = wait_text(&app, "c7", "Background tasks").await;
    let id = rows(&app).await.into_iter().find(|r| r.task.starts_with("child-bg2")).unwrap().id;
    assert!(tasks.contains(&r.id) && tasks.contains(&id) && tasks.contains("running"), "{tasks}");
    app.post("c7", "local", &format!("/cancel {id}")).await;
    wait_text(&app, "c7", &format!("Stopping task `{id}`")).await;
    wait_text(&app, "c7", "The second task was cancelled.").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let msgs = app.messages("c7").await;
    let once = |needle: &str| msgs.iter().filter(|m| m["text"].as_str().unwrap_or("").contains(needle)).count();
    assert_eq!((once("Your research found 42."), once("The second task was cancelled.")), (1, 1), "{msgs:#?}");
    let r2 = rows(&app).await.into_iter().find(|r| r.id == id).unwrap();
    assert_eq!((r2.status, r2.reason.as_deref()), (DelegationStatus::Cancelled, Some("/cancel")));
    app.stop().await;
}

#[tokio::test]
async fn budgets_count_children_and_stop_a_turn_or_a_user_with_a_message_naming_the_limit() {
    let llm = FakeLlm::start().await;
    let (app, _) = start(&llm, |c| {
        // One dollar a token keeps the arithmetic readable.
        c.llm.input_price_per_mtok = Some(1_000_000.0);
        // The helpers run on the worker tier, whose own model takes no price of [llm]\'s.
        c.llm.tiers.get_mut("worker").unwrap().input_price_per_mtok = Some(1_000_000.0);
        c.limits.max_usd_per_turn = Some(50.0);
        c.limits.max_usd_per_day = Some(60.0);
    })
    .await;
    llm.on("plan-9", Reply::tool_call("delegate", json!({"task": "child-costly"})).usage(10, 0));
    llm.on("child-costly", Reply::text("expensive answer").usage(45, 0));
    llm.on("plan-9", Reply::text("never asked"));
    app.post("c9", "local", "plan-9 spend").await;
    let stopped = wait_text(&app, "c9", "I stopped").await;
    assert!(stopped.contains("$55.0000") && stopped.contains("max_usd_per_turn"), "{stopped}");
    assert_eq!(llm.requests().iter().filter(|r| r.last_user_text().contains("plan-9")).count(), 1);

    // The day: 55 spent; one more turn costs 10 (65), and then nothing more today.
    llm.on("plan-10", Reply::text("cheap").usage(10, 0));
    app.post("c9", "local", "plan-10").await;
    wait_text(&app, "c9", "cheap").await;
    app.post("c9", "local", "plan-11").await;
    let day = wait_text(&app, "c9", "per day").await;
    assert!(day.contains("$65.0000") && day.contains("max_usd_per_day"), "{day}");
    assert_eq!(llm.requests().iter().filter(|r| r.last_user_text().contains("plan-11")).count(), 0);
    app.stop().await;
}

#[tokio::test]
async fn stop_while_a_child_waits_for_an_approval_stops_the_whole_tree() {
    let llm = FakeLlm::start().await;
    let (app, touch) = start(&llm, |_| {}).await;
    llm.on("plan-12", Reply::tool_call("delegate", json!({"task": "child-waits to touch"})));
    llm.on("child-waits", Reply::tool_call("touch", json!({"name": "door"})));
    app.post("c12", "local", "plan-12 touch the door").await;
    wait_until("the approval request", || async {
        app.messages("c12").await.iter().any(|m| m["buttons"].as_array().is_some_and(|b| !b.is_empty()))
    })
    .await;
    app.post("c12", "local", "/stop").await;
    wait_text(&app, "c12", "Stopped").await;
    wait_until("the child to end", || async { !rows(&app).await[0].status.is_open() }).await;
    assert_eq!(rows(&app).await[0].status, DelegationStatus::Cancelled);
    assert_eq!(touch.runs(), 0, "nothing ran");
    let count = |needle: &str| llm.requests().iter().filter(|r| r.last_user_text().contains(needle)).count();
    assert_eq!((count("plan-12"), count("child-waits")), (1, 1), "no model call after /stop");
    app.stop().await;
}

#[tokio::test]
async fn a_question_asked_inside_a_child_is_asked_in_the_parents_conversation_and_its_answer_resumes_the_chain() {
    let llm = FakeLlm::start().await;
    let (app, _) = start(&llm, |_| {}).await;
    llm.on("plan-13", Reply::tool_call("delegate", json!({"task": "child-asks about the colour"})));
    llm.on(
        "child-asks",
        Reply::tool_call("ask_user", json!({"question": "Which colour?", "options": ["red", "blue"]})),
    );
    llm.on("child-asks", Reply::text("painted it blue"));
    llm.on("plan-13", Reply::text("Done: the door is blue."));
    app.post("c13", "local", "plan-13 paint the door").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let action = loop {
        let msgs = app.messages("c13").await;
        let found = msgs
            .iter()
            .filter(|m| m["text"].as_str().unwrap_or("").contains("Which colour?"))
            .flat_map(|m| m["buttons"].as_array().cloned().unwrap_or_default())
            .find(|b| b["label"].as_str().unwrap_or("").contains("blue"))
            .and_then(|b| b["action"].as_str().map(str::to_string));
        if let Some(action) = found {
            break action;
        }
        assert!(Instant::now() < deadline, "no question with options in c13: {msgs:#?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    let body = json!({"conversation": "c13", "user": "local", "action": action});
    let r = app.http.post(app.url("/api/v1/actions")).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 202);
    wait_text(&app, "c13", "Done: the door is blue.").await;
    let child = llm.requests_for("child-asks", 2).await;
    assert!(child[1].last_tool_result().unwrap_or_default().contains("blue"), "{:?}", child[1].last_tool_result());
    let parent = llm.requests_for("plan-13", 2).await;
    assert!(parent[1].last_tool_result().unwrap_or_default().contains("painted it blue"));
    assert_eq!(rows(&app).await[0].status, DelegationStatus::Done);
    app.stop().await;
}

#[tokio::test]
async fn a_new_message_while_a_child_waits_cancels_its_approval_and_ends_it() {
    let llm = FakeLlm::start().await;
    let (app, touch) = start(&llm, |_| {}).await;
    llm.on("plan-14", Reply::tool_call("delegate", json!({"task": "child-parked to touch"})));
    llm.on("child-parked", Reply::tool_call("touch", json!({"name": "window"})));
    llm.on("something else", Reply::text("Sure, something else."));
    app.post("c14", "local", "plan-14 touch the window").await;
    wait_until("the approval request", || async {
        app.messages("c14").await.iter().any(|m| m["buttons"].as_array().is_some_and(|b| !b.is_empty()))
    })
    .await;
    app.post("c14", "local", "something else please").await;
    wait_text(&app, "c14", "Sure, something else.").await;
    let r = &rows(&app).await[0];
    assert_eq!((r.status, r.reason.as_deref()), (DelegationStatus::Cancelled, Some("a new message came first")));
    wait_until("the request to lose its buttons", || async {
        app.messages("c14").await.iter().all(|m| m["buttons"].as_array().is_none_or(|b| b.is_empty()))
    })
    .await;
    assert_eq!(touch.runs(), 0);
    app.stop().await;
}
