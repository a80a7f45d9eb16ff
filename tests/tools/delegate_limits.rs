//! The totals of one message across its whole tree of helpers (issue 28, points 3 and 4),
//! through a real Butler with the fake LLM, on the default limits unless a case says otherwise:
//! a model that fans out with four `delegate` calls at every step ends within
//! `max_model_calls_per_message` calls (or `max_helpers_per_message` helpers) with a reply
//! naming the limit; eight background calls in one answer start exactly `max_background`; a
//! dollar limit with helpers in parallel ends within one call's cost of it; and a model that
//! starts a new background task on every report is one chain: its helpers count against the
//! message's totals, `/stop` ends it (no model call after), `/tasks` shows it as one entry and
//! `/cancel` ends it.
//!
//! Nothing here asserts on time: waits poll for a state, and "no more calls" is checked once
//! everything has settled (no open helper, nothing pending in the inbox).

use super::delegate::{rows, start, tool_results, wait_text, wait_until};
use crate::support::app::TestApp;
use crate::support::fake_llm::{FakeLlm, Reply};
use butler::config::Config;
use butler::store::{DelegationFilter, InboxStatus};
use serde_json::json;
use std::time::Duration;

/// One answer with a `delegate` call for each of `args`.
fn delegates(args: impl IntoIterator<Item = serde_json::Value>) -> Reply {
    let mut args = args.into_iter();
    let first = Reply::tool_call("delegate", args.next().expect("one call at least"));
    args.fold(first, |r, a| r.and_tool_call("delegate", a))
}

/// Nothing runs any more: no open helper, no event waiting or being answered.
async fn settled(app: &TestApp) -> bool {
    let store = &app.app.store;
    let open = DelegationFilter { open_only: true, limit: 1, ..Default::default() };
    store.delegations_list(&open).await.unwrap().is_empty()
        && store.inbox_count(InboxStatus::Pending).await.unwrap() == 0
        && store.inbox_count(InboxStatus::Processing).await.unwrap() == 0
}

/// Waits until everything settled, then checks that no model call comes after that.
async fn quiet_after(app: &TestApp, llm: &FakeLlm, what: &str) -> usize {
    wait_until(what, || settled(app)).await;
    let calls = llm.request_count();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(settled(app).await, "{what}: something started again");
    assert_eq!(llm.request_count(), calls, "{what}: a model call after everything ended");
    calls
}

#[tokio::test]
async fn four_delegates_at_every_step_end_within_the_message_totals_with_a_reply_naming_the_limit() {
    type Tune = fn(&mut Config);
    // (config, the limit that ends it, at most this many model calls, exactly this many helpers)
    let cases: [(Tune, &str, usize, Option<usize>); 2] = [
        // The defaults: 200 model calls, 32 helpers.
        (|_| {}, "max_model_calls_per_message", 200, None),
        // Few helpers: the rest of the delegate calls are refused, each naming the limit.
        (
            |c| {
                c.agent.delegation.max_helpers_per_message = 5;
                c.agent.delegation.max_iterations = 2;
                c.limits.max_iterations = 3;
            },
            "max_helpers_per_message",
            3 + 5 * 2,
            Some(5),
        ),
    ];
    for (tune, limit, max_calls, helpers) in cases {
        let llm = FakeLlm::start().await;
        let (app, _) = start(&llm, tune).await;
        llm.on_every("", delegates((0..4).map(|i| json!({"task": format!("fan {i}")}))));
        app.post("c20", "local", "fan out").await;
        let calls = quiet_after(&app, &llm, limit).await;
        assert!(calls <= max_calls, "{limit}: {calls} model calls, at most {max_calls}");
        let made = rows(&app).await.len();
        match helpers {
            Some(n) => {
                assert_eq!(made, n, "{limit}: helpers started");
                let refused = llm.requests().iter().flat_map(tool_results).filter(|r| r.contains(limit)).count();
                assert!(refused > 0, "{limit}: a refused delegate call names the limit");
            }
            None => {
                assert!(made <= 32, "{limit}: {made} helpers");
                let reply = wait_text(&app, "c20", limit).await;
                assert!(reply.contains("200 model calls"), "{reply}");
            }
        }
        app.stop().await;
    }
}

#[tokio::test]
async fn eight_background_calls_in_one_answer_start_exactly_max_background() {
    let llm = FakeLlm::start().await;
    let (app, _) = start(&llm, |c| {
        c.agent.delegation.max_background = 5;
        // All eight calls are planned at the same time.
        c.agent.delegation.max_parallel = 8;
    })
    .await;
    llm.on("bg-eight", delegates((0..8).map(|i| json!({"task": format!("child-hold {i}"), "background": true}))));
    llm.on("bg-eight", Reply::text("eight asked"));
    llm.on_every("child-hold", Reply::text("held").first_byte_delay(Duration::from_secs(30)));
    app.post("c21", "local", "bg-eight at once").await;
    wait_text(&app, "c21", "eight asked").await;
    let results = tool_results(&llm.requests_for("bg-eight", 2).await[1]);
    let started = results.iter().filter(|r| r.starts_with("Started background task")).count();
    let refused = results.iter().filter(|r| r.contains("max_background")).count();
    assert_eq!((started, refused), (5, 3), "{results:#?}");
    assert_eq!(rows(&app).await.len(), 5, "background rows");
    app.stop().await;
}

#[tokio::test]
async fn a_dollar_limit_with_helpers_in_parallel_ends_within_one_call_of_it() {
    let llm = FakeLlm::start().await;
    let (app, _) = start(&llm, |c| {
        // One dollar a token: the root's call costs $1, each helper call $10.
        c.llm.input_price_per_mtok = Some(1_000_000.0);
        // The helpers run on the worker tier, whose own model takes no price of [llm]\'s.
        c.llm.tiers.get_mut("worker").unwrap().input_price_per_mtok = Some(1_000_000.0);
        c.limits.max_usd_per_turn = Some(50.0);
    })
    .await;
    llm.on("spend-par", delegates((0..4).map(|i| json!({"task": format!("child-spend {i}")}))).usage(1, 0));
    llm.on_every("spend-par", Reply::text("never asked").usage(1, 0));
    // Each helper call takes a while, so that calls of several helpers are in flight together.
    let step = Reply::tool_call("now", json!({})).usage(10, 0).first_byte_delay(Duration::from_millis(300));
    llm.on_every("child-spend", step);
    app.post("c22", "local", "spend-par in parallel").await;
    let reply = wait_text(&app, "c22", "max_usd_per_turn").await;
    quiet_after(&app, &llm, "the helpers to end").await;
    let child_calls = llm.requests().iter().filter(|r| r.last_user_text().contains("child-spend")).count();
    let root_calls = llm.requests().iter().filter(|r| r.last_user_text().contains("spend-par")).count();
    let spent = root_calls as f64 + 10.0 * child_calls as f64;
    assert!((50.0..=60.0).contains(&spent), "spent ${spent}: the limit is $50 and one call costs $10; {reply}");
    app.stop().await;
}

/// Scripts a model that starts a new background task whenever a report arrives: the message
/// `start` and every report's turn call `delegate {background}` once, then answer; each task
/// answers after `child_delay`.
fn script_loop(llm: &FakeLlm, start: &str, child_delay: Duration) {
    let again = || Reply::tool_call("delegate", json!({"task": "child-loop tick", "background": true}));
    // First: a report's text also contains its task's words.
    for _ in 0..300 {
        llm.on("Background task", again());
        llm.on("Background task", Reply::text("started the next one"));
    }
    llm.on(start, again());
    llm.on(start, Reply::text("looping"));
    llm.on_every("child-loop", Reply::text("tick done").first_byte_delay(child_delay));
}

#[tokio::test]
async fn a_task_started_by_every_report_is_one_chain_that_counts_against_the_message_totals() {
    let llm = FakeLlm::start().await;
    let (app, _) = start(&llm, |_| {}).await;
    script_loop(&llm, "loop-totals", Duration::ZERO);
    app.post("c23", "local", "loop-totals go").await;
    let refusals =
        || llm.requests().iter().flat_map(tool_results).filter(|r| r.contains("max_helpers_per_message")).count();
    wait_until("a task refused at the helper limit", || async { refusals() > 0 }).await;
    let calls = quiet_after(&app, &llm, "the chain to end at its helper limit").await;
    // The default max_helpers_per_message = 32: the message's task and those of 31 reports.
    let made = rows(&app).await;
    assert_eq!(made.len(), 32, "helpers of the chain");
    assert!(made.iter().all(|r| r.background && r.origin == made[0].origin && !r.origin.is_empty()));
    assert!(calls <= 200, "{calls} model calls");
    assert_eq!(refusals(), 1, "the 33rd task is refused, naming the limit");
    app.stop().await;
}

#[tokio::test]
async fn stop_ends_a_chain_of_background_tasks_and_the_turns_their_reports_would_start() {
    let llm = FakeLlm::start().await;
    let (app, _) = start(&llm, |_| {}).await;
    script_loop(&llm, "loop-stop", Duration::from_millis(200));
    app.post("c24", "local", "loop-stop go").await;
    wait_until("the loop to run", || async { rows(&app).await.len() >= 3 }).await;
    app.post("c24", "local", "/stop").await;
    wait_text(&app, "c24", "Stopped").await;
    quiet_after(&app, &llm, "everything to end after /stop").await;
    let made = rows(&app).await;
    assert!(made.len() < 32, "stopped before its helper limit: {}", made.len());
    app.stop().await;
}

#[tokio::test]
async fn tasks_shows_a_chain_as_one_entry_and_cancel_ends_it() {
    let llm = FakeLlm::start().await;
    let (app, _) = start(&llm, |_| {}).await;
    script_loop(&llm, "loop-cancel", Duration::from_millis(200));
    app.post("c25", "local", "loop-cancel go").await;
    wait_until("the loop to run", || async { rows(&app).await.len() >= 3 }).await;
    app.post("c25", "local", "/tasks").await;
    let tasks = wait_text(&app, "c25", "Background tasks").await;
    let entries: Vec<&str> = tasks.lines().filter(|l| l.starts_with("- `")).collect();
    assert_eq!(entries.len(), 1, "one entry for the chain: {tasks}");
    assert!(entries[0].contains("running: a chain of"), "{tasks}");
    let id = entries[0].split('`').nth(1).expect("the entry's id").to_string();
    app.post("c25", "local", &format!("/cancel {id}")).await;
    wait_text(&app, "c25", &format!("Stopping task `{id}` and its chain")).await;
    quiet_after(&app, &llm, "the chain to end after /cancel").await;
    assert!(rows(&app).await.len() < 32, "ended before its helper limit");
    app.post("c25", "local", "/tasks").await;
    wait_until("the chain listed as ended", || async {
        app.messages("c25").await.iter().any(|m| {
            let text = m["text"].as_str().unwrap_or("");
            text.starts_with("Background tasks") && !text.contains("running")
        })
    })
    .await;
    app.stop().await;
}

#[tokio::test]
async fn twenty_background_tasks_at_once_end_the_day_within_one_call_of_its_limit() {
    let llm = FakeLlm::start().await;
    let (app, _) = start(&llm, |c| {
        // One dollar an output token and at most 4 per call: each call reserves its worst case
        // ($4) and costs $1, so several calls of several tasks are in flight together.
        for tier in
            [&mut c.llm.output_price_per_mtok, &mut c.llm.tiers.get_mut("worker").unwrap().output_price_per_mtok]
        {
            *tier = Some(1_000_000.0);
        }
        c.llm.input_price_per_mtok = Some(0.0);
        c.llm.tiers.get_mut("worker").unwrap().input_price_per_mtok = Some(0.0);
        c.llm.max_tokens = 4;
        c.limits.max_usd_per_day = Some(30.0);
        c.agent.delegation.max_background = 20;
        c.agent.delegation.max_parallel = 5;
    })
    .await;
    // Four messages in four conversations, each starting five tasks: four chains, one person.
    let five =
        |m: usize| delegates((0..5).map(move |i| json!({"task": format!("child-day {m}.{i}"), "background": true})));
    for m in 0..4 {
        llm.on(&format!("day-bg{m} "), five(m).usage(0, 1));
        llm.on(&format!("day-bg{m} "), Reply::text("five started").usage(0, 1));
    }
    // Every task (and every report's turn) keeps calling a tool, $1 a call.
    let step = Reply::tool_call("now", json!({})).usage(0, 1).first_byte_delay(Duration::from_millis(50));
    llm.on_every("child-day", step);
    for m in 0..4 {
        app.post(&format!("c25-{m}"), "local", &format!("day-bg{m} go")).await;
    }
    wait_until("twenty tasks", || async { rows(&app).await.len() == 20 }).await;
    quiet_after(&app, &llm, "the tasks to stop at the day's limit").await;
    let spent: f64 = app.app.store.usage_by_model(None, 0).await.unwrap().iter().map(|m| m.cost_usd).sum();
    assert!((30.0..31.0 + 1e-9).contains(&spent), "the day's spend is ${spent}: the limit is $30, a call costs $1");
    // Every call made was recorded at its price: $1 each.
    assert_eq!(llm.request_count() as f64, spent.round(), "model requests against the recorded spend");
    app.stop().await;
}
