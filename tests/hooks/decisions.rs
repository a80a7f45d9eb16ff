//! What a verified trigger turns into, end to end through a real Butler: rules deciding notify
//! (a rendered template in a web conversation), agent (a turn for the target user, with the
//! payload cut to its budget, answered in the target conversation) and drop (with the reason
//! recorded); the classifier for events no rule decides (cached; errors fall back to the
//! source's default).

use crate::common::*;
use crate::support::app::TestApp;
use crate::support::fake_llm::{FakeLlm, Reply};
use std::time::Duration;

const CLASSIFIER_NEEDLE: &str = "Reply with exactly one word";

#[tokio::test]
async fn push_to_main_is_announced_with_the_rendered_template() {
    let (cfg, dir) = hook_config(
        None,
        r#"
[[triggers]]
name = "github"
secret = "gh-webhook-secret-4f1d9c"
signature = "github"
target = "web:alerts"

[[triggers.rules]]
when = { "headers.x-github-event" = "push", "body.ref" = "refs/heads/main" }
action = "notify"
template = "{{body.pusher.name}} pushed to {{body.repository.full_name}}: {{body.head_commit.message | first_line}} ({{body.after | short}})"

[[triggers.rules]]
when = { "headers.x-github-event" = "push" }
action = "drop"
"#,
    );
    let t = TestApp::start(cfg, Some(dir)).await;
    assert_eq!(post_github(&t, "github", "push", "push-main-1", &fixture("push")).await.status, 202);
    let mut dev = fixture_json("push");
    dev["ref"] = "refs/heads/dev".into();
    let dev = serde_json::to_vec(&dev).unwrap();
    assert_eq!(post_github(&t, "github", "push", "push-dev-1", &dev).await.status, 202);

    let rows = settled(&t, 2).await;
    assert_eq!(rows.iter().map(|r| r.status.as_str()).collect::<Vec<_>>(), ["done", "dropped"]);
    let texts = web_texts(&t, "alerts", 1).await;
    assert_eq!(texts, ["dana-k pushed to acme-labs/rocket: Add a regression test for clock jumps (9e8d7c6)"]);
    let d = decision(&t, &event_id("github", &fixture("push"))).await;
    assert_eq!(d.decision, "notify");
    assert_eq!(d.reason, "rule 1: body.ref = refs/heads/main, headers.x-github-event = push -> web:alerts");
    let d = decision(&t, &event_id("github", &dev)).await;
    assert_eq!((d.decision.as_str(), d.reason.as_str()), ("drop", "rule 2: headers.x-github-event = push"));
    // Nothing more arrives for the dev push.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(t.messages("alerts").await.len(), 1);
    // The alert is the owner's: it is in the local page's conversation list.
    let list: serde_json::Value =
        t.http.get(t.url("/api/v1/conversations?user=local")).send().await.unwrap().json().await.unwrap();
    let ids: Vec<&str> = list["conversations"].as_array().unwrap().iter().filter_map(|c| c["id"].as_str()).collect();
    assert!(ids.contains(&"alerts"), "{list}");
    t.stop().await;
}

#[tokio::test]
async fn an_opened_issue_starts_an_agent_turn_for_the_target_user() {
    let llm = FakeLlm::start().await;
    llm.on("Triage this new issue", Reply::text("Sounds like a sleep/wake bug in the countdown; label it `bug`."));
    let (mut cfg, dir) = hook_config(
        Some(&llm.openai_url()),
        r#"
[[triggers]]
name = "github"
secret = "gh-webhook-secret-4f1d9c"
signature = "github"
max_payload_chars = 600

[[triggers.rules]]
when = { "headers.x-github-event" = "issues", "body.action" = ["opened", "reopened"] }
action = "agent"
target = "web:alice"
conversation = "web:alice-github"
instructions = "Triage this new issue: say what it is about and which label fits."
"#,
    );
    cfg.access.allow = vec!["web:alice".parse().unwrap()];
    let t = TestApp::start(cfg, Some(dir)).await;
    assert_eq!(post_github(&t, "github", "issues", "issue-58", &fixture("issues_opened")).await.status, 202);

    let replies = web_texts(&t, "alice-github", 1).await;
    assert_eq!(replies, ["Sounds like a sleep/wake bug in the countdown; label it `bug`."]);
    let req = llm.requests().into_iter().find(|r| r.last_user_text().contains("Triage this new issue")).unwrap();
    let text = req.last_user_text();
    assert!(text.starts_with("Triage this new issue: say what it is about and which label fits."), "{text}");
    assert!(text.contains("github issues opened on acme-labs/rocket"), "{text}");
    assert!(text.contains("the countdown keeps showing the old time"), "the payload is missing: {text}");
    let full = serde_json::to_string(&fixture_json("issues_opened")).unwrap().len();
    assert!(text.contains("[payload cut: the first 600 of "), "{text}");
    assert!(!text.contains("\"sender\":") && text.len() < 600 + 400 && full > 5_000, "{text}");

    // The conversation exists for the page, owned by the target user; the decision says why.
    let conv = t.app.store.conversation_get("web:alice-github").await.unwrap().expect("conversation");
    assert_eq!(conv.owner, "web:alice");
    let d = decision(&t, &event_id("github", &fixture("issues_opened"))).await;
    assert_eq!(d.decision, "agent");
    assert_eq!(
        d.reason,
        "rule 1: body.action = opened | reopened, headers.x-github-event = issues -> turn for web:alice in web:alice-github"
    );
    settled(&t, 1).await;
    t.stop().await;
}

#[tokio::test]
async fn workflow_runs_drop_on_success_and_notify_on_failure() {
    let llm = FakeLlm::start().await;
    let (cfg, dir) = hook_config(
        Some(&llm.openai_url()),
        r#"
[[triggers]]
name = "ci"
secret = "gh-webhook-secret-4f1d9c"
signature = "github"
target = "web:ci"

[[triggers.rules]]
when = { "headers.x-github-event" = "workflow_run", "body.workflow_run.conclusion" = "success" }
action = "drop"

[[triggers.rules]]
when = { "headers.x-github-event" = "workflow_run", "body.action" = "completed" }
action = "notify"
template = "{{body.workflow_run.name}} {{body.workflow_run.conclusion | upper}} on {{body.workflow_run.head_branch}}: {{body.workflow_run.html_url}}"

[[triggers.rules]]
when = { "headers.x-github-event" = "issues" }
action = "agent"
target = "web:mallory"
conversation = "web:mallory-gh"
"#,
    );
    let t = TestApp::start(cfg, Some(dir)).await;
    assert_eq!(post_github(&t, "ci", "workflow_run", "run-ok", &fixture("workflow_run_success")).await.status, 202);
    assert_eq!(post_github(&t, "ci", "workflow_run", "run-bad", &fixture("workflow_run_failure")).await.status, 202);
    assert_eq!(post_github(&t, "ci", "issues", "issue-x", &fixture("issues_opened")).await.status, 202);

    let rows = settled(&t, 3).await;
    let ok = &rows[0];
    assert_eq!(
        (ok.id.as_str(), ok.status.as_str()),
        (event_id("ci", &fixture("workflow_run_success")).as_str(), "dropped")
    );
    let d = decision(&t, &event_id("ci", &fixture("workflow_run_success"))).await;
    assert_eq!(d.decision, "drop");
    assert_eq!(d.reason, "rule 1: body.workflow_run.conclusion = success, headers.x-github-event = workflow_run");
    assert_eq!(ok.error.as_deref(), Some(d.reason.as_str()));

    assert_eq!(
        web_texts(&t, "ci", 1).await,
        ["CI FAILURE on main: https://github.com/acme-labs/rocket/actions/runs/14781299120"]
    );
    // An agent target the access rules do not allow is dropped, and no model call is made.
    let d = decision(&t, &event_id("ci", &fixture("issues_opened"))).await;
    assert_eq!(d.decision, "drop");
    assert!(d.reason.ends_with("; web:mallory may not use Butler"), "{}", d.reason);
    assert_eq!(llm.request_count(), 0);
    t.stop().await;
}

const CLASSIFIED: &str = r#"
[[triggers]]
name = "github"
secret = "gh-webhook-secret-4f1d9c"
signature = "github"
classify = true
default = "drop"
target = "web:classified"
template = "{{text}}: {{body.issue.title}}"

[[triggers.rules]]
when = { "headers.x-github-event" = "push" }
action = "drop"
"#;

#[tokio::test]
async fn the_classifier_decides_what_no_rule_does_and_is_cached() {
    let llm = FakeLlm::start().await;
    llm.on_every(CLASSIFIER_NEEDLE, Reply::text("Notify."));
    let (cfg, dir) = hook_config(Some(&llm.openai_url()), CLASSIFIED);
    let t = TestApp::start(cfg, Some(dir)).await;
    let issue = fixture("issues_opened");
    assert_eq!(post_github(&t, "github", "issues", "cls-1", &issue).await.status, 202);
    let texts = web_texts(&t, "classified", 1).await;
    assert_eq!(texts, ["github issues opened on acme-labs/rocket: Countdown freezes after the laptop wakes up"]);
    let req = llm.last_request().unwrap();
    assert!(req.last_user_text().contains("Countdown freezes after the laptop wakes up"));
    assert_eq!(req.body["max_tokens"].as_u64().or(req.body["max_completion_tokens"].as_u64()), Some(8));
    assert_eq!(
        decision(&t, &event_id("github", &issue)).await.reason,
        "no rule matched; classifier: notify -> web:classified"
    );

    // The same event in other bytes (compact JSON, so another event id): decided from the cache.
    let compact = serde_json::to_vec(&fixture_json("issues_opened")).unwrap();
    assert_ne!(compact, issue);
    assert_eq!(post_github(&t, "github", "issues", "cls-2", &compact).await.status, 202);
    assert_eq!(web_texts(&t, "classified", 2).await.len(), 2);
    assert_eq!(
        decision(&t, &event_id("github", &compact)).await.reason,
        "no rule matched; classifier (cached): notify -> web:classified"
    );
    // A rule still comes first: no model call for a push.
    assert_eq!(post_github(&t, "github", "push", "cls-3", &fixture("push")).await.status, 202);
    settled(&t, 3).await;
    assert_eq!(llm.request_count(), 1, "the classifier was asked more than once");
    t.stop().await;
}

#[tokio::test]
async fn a_classifier_failure_falls_back_to_the_source_default() {
    let llm = FakeLlm::start().await;
    llm.on(CLASSIFIER_NEEDLE, Reply::server_error(500));
    llm.on(CLASSIFIER_NEEDLE, Reply::text("Probably worth a look"));
    let (cfg, dir) =
        hook_config(Some(&llm.openai_url()), &CLASSIFIED.replace(r#"default = "drop""#, r#"default = "notify""#));
    let t = TestApp::start(cfg, Some(dir)).await;
    assert_eq!(post_github(&t, "github", "issues", "err-1", &fixture("issues_opened")).await.status, 202);
    let mut other = fixture_json("issues_opened");
    other["issue"]["number"] = 59.into();
    other["issue"]["title"] = "Dark mode for the launch board".into();
    let other = serde_json::to_vec(&other).unwrap();
    assert_eq!(post_github(&t, "github", "issues", "err-2", &other).await.status, 202);
    let rows = settled(&t, 2).await;
    assert!(rows.iter().all(|r| r.status == "done"), "{rows:?}");
    let texts = web_texts(&t, "classified", 2).await;
    assert_eq!(
        texts,
        [
            "github issues opened on acme-labs/rocket: Countdown freezes after the laptop wakes up",
            "github issues opened on acme-labs/rocket: Dark mode for the launch board",
        ]
    );
    let server = decision(&t, &event_id("github", &fixture("issues_opened"))).await.reason;
    assert!(server.starts_with("no rule matched; classifier failed (") && server.contains("HTTP 500"), "{server}");
    assert!(server.ends_with("; source default notify -> web:classified"), "{server}");
    let vague = decision(&t, &event_id("github", &other)).await.reason;
    assert!(vague.contains("\"Probably worth a look\" is not drop, notify or agent"), "{vague}");
    // Failures are not cached: the same event (in other bytes, so not a duplicate) asks again.
    llm.on(CLASSIFIER_NEEDLE, Reply::text("drop"));
    let pretty = serde_json::to_vec_pretty(&serde_json::from_slice::<serde_json::Value>(&other).unwrap()).unwrap();
    assert_eq!(post_github(&t, "github", "issues", "err-3", &pretty).await.status, 202);
    settled(&t, 3).await;
    assert_eq!(decision(&t, &event_id("github", &pretty)).await.reason, "no rule matched; classifier: drop");
    assert_eq!(llm.request_count(), 3);
    t.stop().await;
}

#[tokio::test]
async fn the_classifier_runs_on_the_worker_tier_and_its_cost_is_recorded() {
    // (worker tier configured, the source's target, the model asked, the usage row's user)
    let cases = [
        (true, "web:classified", "small-model", "system"),
        (false, "web:classified", "fake-model", "system"),
        (true, "web:local", "small-model", "local"),
    ];
    for (tier, target, model, user) in cases {
        let llm = FakeLlm::start().await;
        llm.on_every(CLASSIFIER_NEEDLE, Reply::text("Notify.").usage(400, 2));
        let (mut cfg, dir) = hook_config(Some(&llm.openai_url()), &CLASSIFIED.replace("web:classified", target));
        cfg.llm.input_price_per_mtok = Some(10.0);
        cfg.llm.output_price_per_mtok = Some(20.0);
        if tier {
            let worker = butler::config::LlmTier {
                model: Some("small-model".into()),
                input_price_per_mtok: Some(1.0),
                output_price_per_mtok: Some(2.0),
                ..Default::default()
            };
            cfg.llm.tiers.insert("worker".into(), worker);
        }
        let prices = if tier { (1.0, 2.0) } else { (10.0, 20.0) };
        let t = TestApp::start(cfg, Some(dir)).await;
        assert_eq!(post_github(&t, "github", "issues", "tier-1", &fixture("issues_opened")).await.status, 202);
        settled(&t, 1).await;
        assert_eq!(llm.last_request().unwrap().model(), model, "{target}");
        let rows: Vec<_> = t.usage_rows().await.into_iter().filter(|r| r.kind == "classifier").collect();
        assert_eq!(rows.len(), 1, "{target}: {rows:?}");
        assert_eq!((rows[0].model.as_str(), rows[0].user_id.as_str()), (model, user), "{target}");
        let want = (400.0 * prices.0 + 2.0 * prices.1) / 1e6;
        assert!((rows[0].cost_usd - want).abs() < 1e-12, "{target}: {rows:?}");
        t.stop().await;
    }
}
