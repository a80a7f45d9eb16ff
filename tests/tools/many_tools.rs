//! Many tools stay cheap, through a real Butler with the fake LLM and a real MCP server over
//! HTTP: above `[mcp] max_schema_tokens` a turn offers the built-ins and `tool_search` (never the
//! 300 MCP schemas); a tool found by search, or called by name, is sent in full for the rest of
//! the turn and its call works; under the budget every tool is offered and no `tool_search`.
//! A helper given many gets its own search; a server's `timeout_secs` holds for its tools.

use crate::mcp::server::serve_http_bulk;
use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{fenced, FakeLlm, RecordedRequest, Reply};
use butler::config::{ArchetypeConfig, Config, McpServerConfig};
use serde_json::json;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const BUDGET: usize = 8_000;

/// A Butler with the MCP server `many` (its `bulk` extra tools, read-only) at the default budget.
async fn start(llm: &FakeLlm, ct: &CancellationToken, bulk: usize) -> TestApp {
    start_tuned(llm, ct, bulk, |_| {}).await
}

async fn start_tuned(llm: &FakeLlm, ct: &CancellationToken, bulk: usize, tune: impl FnOnce(&mut Config)) -> TestApp {
    let addr = serve_http_bulk(ct.clone(), bulk).await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.tools.workspace_dir = dir.path().join("workspaces").display().to_string();
    assert_eq!(cfg.mcp.max_schema_tokens, BUDGET, "the default budget");
    cfg.mcp.servers = vec![McpServerConfig {
        name: "many".into(),
        url: Some(format!("http://{addr}/mcp")),
        read_only: true,
        timeout_secs: 10,
        connect_timeout_secs: 20,
        ..McpServerConfig::default()
    }];
    tune(&mut cfg);
    TestApp::start(cfg, Some(dir)).await
}

fn offered(req: &RecordedRequest) -> Vec<String> {
    req.tools().iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_string)).collect()
}

/// Estimated tokens of a request's tools payload (its JSON, four characters a token).
fn tools_tokens(req: &RecordedRequest) -> usize {
    serde_json::to_string(req.tools()).unwrap().len() / 4
}

/// Posts warm-up messages until a request offers `name` (the MCP server has joined).
pub(crate) async fn until_offered(app: &TestApp, llm: &FakeLlm, name: &str) {
    for i in 0..100 {
        let needle = format!("warm up {i}");
        app.post("warm", "local", &needle).await;
        if offered(&llm.requests_for(&needle, 1).await[0]).iter().any(|n| n == name) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("`{name}` was never offered");
}

#[tokio::test]
async fn over_the_budget_tools_are_found_by_search_and_then_sent_in_full() {
    let (llm, ct) = (FakeLlm::start().await, CancellationToken::new());
    let app = start(&llm, &ct, 300).await;
    until_offered(&app, &llm, "tool_search").await;

    llm.on("find weather", Reply::tool_call("tool_search", json!({"query": "bulk 7 weather"})));
    llm.on("find weather", Reply::tool_call("many__bulk_7", json!({"city": "Oslo"})));
    llm.on("find weather", Reply::text("Done."));
    app.post("s-1", "local", "find weather for Oslo").await;
    let reqs = llm.requests_for("find weather", 3).await;

    let first = offered(&reqs[0]);
    assert!(first.contains(&"tool_search".to_string()) && first.contains(&"now".to_string()), "{first:?}");
    assert!(!first.iter().any(|n| n.starts_with("many__")), "no MCP schema before a search: {first:?}");
    assert!(tools_tokens(&reqs[0]) < BUDGET, "first request's tools: {} tokens", tools_tokens(&reqs[0]));

    let found = reqs[1].last_tool_result().expect("the search result");
    assert!(found.lines().nth(1).is_some_and(|l| l.starts_with("- many__bulk_7: ")), "best first: {found}");
    assert!(found.lines().count() <= 11, "at most ten hits: {found}");
    let bulk7 = reqs[1].tools().iter().find(|t| t["function"]["name"] == "many__bulk_7").expect("bulk_7 offered");
    assert_eq!(bulk7["function"]["parameters"]["required"], json!(["city"]), "its full schema");
    assert!(tools_tokens(&reqs[1]) < BUDGET, "after the search: {} tokens", tools_tokens(&reqs[1]));
    assert!(offered(&reqs[2]).contains(&"many__bulk_7".to_string()), "for the rest of the turn");
    let ran = reqs[2].last_tool_result().expect("the bulk_7 result");
    assert!(ran.contains("many__bulk_7 ran for Oslo") || ran.contains("bulk_7 ran for Oslo"), "{ran}");

    // A new turn starts from the built-ins again; a tool called by name (no search) runs and
    // is then sent in full.
    llm.on("direct call", Reply::tool_call("many__bulk_42", json!({"city": "Rome"})));
    llm.on("direct call", Reply::text("Done."));
    app.post("s-1", "local", "direct call please").await;
    let next = llm.requests_for("direct call", 2).await;
    assert!(!offered(&next[0]).iter().any(|n| n.starts_with("many__")), "{:?}", offered(&next[0]));
    assert!(
        next[1].last_tool_result().unwrap_or_default().contains("bulk_42 ran for Rome"),
        "{:?}",
        next[1].last_tool_result()
    );
    assert!(offered(&next[1]).contains(&"many__bulk_42".to_string()), "{:?}", offered(&next[1]));
    app.stop().await;
    ct.cancel();
}

/// Tools unlocked by `tool_search` stay unlocked in a turn resumed after an approval: the
/// unlocks are rebuilt from the turn's transcript.
#[tokio::test]
async fn a_turn_resumed_after_an_approval_keeps_its_unlocked_tools() {
    let (llm, ct) = (FakeLlm::start().await, CancellationToken::new());
    let app = start(&llm, &ct, 300).await;
    until_offered(&app, &llm, "tool_search").await;
    llm.on("plan a trip", Reply::tool_call("tool_search", json!({"query": "bulk 9 weather"})));
    llm.on("plan a trip", Reply::tool_call("file_write", json!({"path": "trip.md", "content": "Oslo"})));
    llm.on("plan a trip", Reply::tool_call("many__bulk_9", json!({"city": "Oslo"})));
    llm.on("plan a trip", Reply::text("Planned."));
    app.post("s-r", "local", "plan a trip to Oslo").await;
    let asked = llm.requests_for("plan a trip", 2).await;
    assert!(offered(&asked[1]).contains(&"many__bulk_9".to_string()), "unlocked: {:?}", offered(&asked[1]));
    app.approve("s-r").await;
    let reqs = llm.requests_for("plan a trip", 4).await;
    assert_eq!(reqs[2].last_tool_result().as_deref(), Some("Wrote 4 bytes to trip.md."), "the approved call ran");
    let resumed = offered(&reqs[2]);
    assert!(resumed.contains(&"many__bulk_9".to_string()), "still unlocked after the approval: {resumed:?}");
    assert_eq!(resumed, offered(&asked[1]), "the same tools as before the approval");
    assert!(
        reqs[3].last_tool_result().unwrap_or_default().contains("bulk_9 ran for Oslo"),
        "{:?}",
        reqs[3].last_tool_result()
    );
    app.stop().await;
    ct.cancel();
}

#[tokio::test]
async fn under_the_budget_every_tool_is_sent_in_full_without_search() {
    let (llm, ct) = (FakeLlm::start().await, CancellationToken::new());
    let app = start(&llm, &ct, 0).await;
    until_offered(&app, &llm, "many__echo").await;
    app.post("s-2", "local", "small set").await;
    let req = &llm.requests_for("small set", 1).await[0];
    let names = offered(req);
    assert!(!names.contains(&"tool_search".to_string()), "{names:?}");
    for name in ["many__echo", "many__add", "many__read_file", "now"] {
        assert!(names.contains(&name.to_string()), "{name} in {names:?}");
    }
    app.stop().await;
    ct.cancel();
}

/// A helper given many MCP tools (an archetype's `many__*` glob) gets a `tool_search` of its own
/// (issue 36): its first request carries its built-ins and `tool_search`, never the 300
/// schemas, and a tool it finds runs. Before, it got every schema in full (or, with `*`, the
/// parent's search, which unlocked tools in the parent's turn).
#[tokio::test]
async fn a_helper_with_many_tools_finds_them_with_its_own_search() {
    let (llm, ct) = (FakeLlm::start().await, CancellationToken::new());
    let app = start_tuned(&llm, &ct, 300, |cfg| {
        cfg.agent.archetypes = vec![ArchetypeConfig {
            name: "scout".into(),
            tier: None,
            tools: Some(vec!["many__*".into(), "now".into(), "tool_search".into()]),
            prompt: "You look things up.".into(),
        }];
    })
    .await;
    until_offered(&app, &llm, "tool_search").await;
    let task = "scout-job: the weather in Oslo";
    llm.on("send a scout", Reply::tool_call("delegate", json!({"task": task, "archetype": "scout"})));
    llm.on("scout-job", Reply::tool_call("tool_search", json!({"query": "bulk 7 weather"})));
    llm.on("scout-job", Reply::tool_call("many__bulk_7", json!({"city": "Oslo"})));
    llm.on("scout-job", Reply::text("Oslo: sunny."));
    llm.on("send a scout", Reply::text("Scouted."));
    app.post("s-h", "local", "send a scout please").await;
    let child = llm.requests_for("scout-job", 3).await;
    let first = offered(&child[0]);
    assert!(first.contains(&"tool_search".to_string()) && first.contains(&"now".to_string()), "{first:?}");
    assert!(!first.iter().any(|n| n.starts_with("many__")), "no MCP schema before the helper's search: {first:?}");
    assert!(tools_tokens(&child[0]) < BUDGET, "the helper's first request: {} tokens", tools_tokens(&child[0]));
    let found = child[1].last_tool_result().expect("the helper's search result");
    assert!(found.lines().nth(1).is_some_and(|l| l.starts_with("- many__bulk_7: ")), "{found}");
    assert!(
        offered(&child[1]).contains(&"many__bulk_7".to_string()),
        "unlocked for the helper: {:?}",
        offered(&child[1])
    );
    let ran = child[2].last_tool_result().unwrap_or_default();
    assert!(ran.contains("bulk_7 ran for Oslo"), "{ran}");
    let parent = llm.requests_for("send a scout", 2).await;
    assert!(
        parent[1].last_tool_result().unwrap_or_default().contains("Oslo: sunny."),
        "{:?}",
        parent[1].last_tool_result()
    );
    app.stop().await;
    ct.cancel();
}

/// A server allowed longer than `[limits] tool_timeout_secs` is not cut short by it (issue 36):
/// its `timeout_secs` (10 s here) holds for its tools, so a 2-second call under a 1-second
/// tool limit answers. Before, the call ended "timed out after 1s".
#[tokio::test]
async fn a_server_allowed_longer_than_the_tool_limit_is_not_cut_short() {
    let (llm, ct) = (FakeLlm::start().await, CancellationToken::new());
    let app = start_tuned(&llm, &ct, 0, |cfg| cfg.limits.tool_timeout_secs = 1).await;
    until_offered(&app, &llm, "many__slow").await;
    llm.on("take your time", Reply::tool_call("many__slow", json!({"secs": 2})));
    llm.on("take your time", Reply::text("Done."));
    app.post("s-t", "local", "take your time").await;
    let reqs = llm.requests_for("take your time", 2).await;
    assert_eq!(
        reqs[1].last_tool_result().and_then(|r| fenced(&r)).as_deref(),
        Some("slept 2"),
        "the server's limit holds"
    );
    app.stop().await;
    ct.cancel();
}
