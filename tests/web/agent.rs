//! The agent turn through the whole pipeline (web API -> inbox -> triage -> session -> agent ->
//! outbox -> web chat), with the scripted fake LLM and test tools: concurrency and isolation of
//! tool calls, limits, truncation, usage, the byte-stable system prompt, the built-in tools.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use async_trait::async_trait;
use butler::store::MemoryScope;
use butler::tools::{Tool, ToolCtx, ToolError, ToolSpec};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Barrier;

/// A test tool whose behaviour is a closure-free enum, so each is a real `Tool`.
enum Behaviour {
    /// Waits for every other `Meet` tool of the round: proves the calls run concurrently.
    Meet(Arc<Barrier>),
    Panic,
    Fail,
    Hang,
    Big(usize),
}

struct TestTool {
    spec: ToolSpec,
    behaviour: Behaviour,
}

fn tool(name: &str, behaviour: Behaviour) -> Arc<dyn Tool> {
    let spec = ToolSpec {
        name: name.into(),
        description: format!("test tool {name}"),
        parameters: json!({"type": "object", "properties": {}}),
        read_only: true,
    };
    Arc::new(TestTool { spec, behaviour })
}

#[async_trait]
impl Tool for TestTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, _ctx: &ToolCtx, _args: Value) -> Result<String, ToolError> {
        match &self.behaviour {
            Behaviour::Meet(b) => {
                b.wait().await;
                Ok(format!("{} met the others", self.spec.name))
            }
            Behaviour::Panic => panic!("tool exploded on purpose"),
            Behaviour::Fail => Err(ToolError::Failed("the backend said no".into())),
            Behaviour::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok("never".into())
            }
            Behaviour::Big(n) => Ok("x".repeat(*n)),
        }
    }
}

/// The tool results (by call name order) in a recorded OpenAI request.
fn tool_results(req: &crate::support::fake_llm::RecordedRequest) -> Vec<String> {
    req.messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn tool_calls_run_concurrently_and_each_gets_a_result() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.limits.tool_timeout_secs = 2;
    let meet = Arc::new(Barrier::new(2));
    let tools = vec![
        tool("meet_a", Behaviour::Meet(meet.clone())),
        tool("meet_b", Behaviour::Meet(meet)),
        tool("explode", Behaviour::Panic),
        tool("refuse", Behaviour::Fail),
        tool("hang", Behaviour::Hang),
    ];
    let app = TestApp::start_with(cfg, Some(dir), tools).await;
    let round = Reply::tool_call("meet_a", json!({}))
        .and_tool_call("explode", json!({}))
        .and_tool_call("refuse", json!({}))
        .and_tool_call("hang", json!({}))
        .and_tool_call("meet_b", json!({}))
        .and_tool_call("no_such_tool", json!({}))
        .and_raw_tool_call("meet_a", "{not json");
    llm.on("go", round);
    llm.on("go", Reply::text("All done."));
    let (status, _) = app.post("t1", "local", "go").await;
    assert_eq!(status, 202);
    let replies = app.wait_replies("t1", 1, 30).await;
    assert_eq!(replies[0]["text"], "All done.");

    let second = &llm.requests()[1];
    let results = tool_results(second);
    assert_eq!(results.len(), 7, "every call gets exactly one result: {results:?}");
    let want = [
        "meet_a met the others",
        "crashed: tool exploded on purpose",
        "the backend said no",
        "timed out after 2s",
        "meet_b met the others",
        "unknown tool `no_such_tool`",
        "arguments are not valid JSON",
    ];
    for (got, want) in results.iter().zip(want) {
        assert!(got.contains(want), "result {got:?} should contain {want:?}");
    }
    // Results are answered in call order, each to its own call id.
    let calls: Vec<String> = second.messages()[2]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    let answered: Vec<String> = second
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(calls, answered);
    app.stop().await;
}

#[tokio::test]
async fn limits_stop_runaway_turns_and_cut_big_results() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.limits.max_iterations = 3;
    cfg.limits.max_tool_result_chars = 1000;
    let app = TestApp::start_with(cfg, Some(dir), vec![tool("big", Behaviour::Big(50_000))]).await;
    llm.on_every("loop forever", Reply::tool_call("big", json!({})));
    app.post("lim", "local", "loop forever").await;
    let replies = app.wait_replies("lim", 1, 30).await;
    let text = replies[0]["text"].as_str().unwrap();
    assert!(text.contains("stopped after 3 steps"), "{text}");
    assert_eq!(llm.request_count(), 3, "exactly max_iterations model calls");
    let result = tool_results(&llm.requests()[1]).pop().unwrap();
    assert!(result.ends_with("[... truncated: showing 1000 of 50000 characters]"), "{}", &result[result.len() - 80..]);
    assert_eq!(result.chars().filter(|c| *c == 'x').count(), 1000);
    app.stop().await;
}

#[tokio::test]
async fn usage_and_cost_are_recorded_per_turn() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.llm.input_price_per_mtok = Some(3.0);
    cfg.llm.output_price_per_mtok = Some(15.0);
    cfg.llm.cache_read_price_per_mtok = Some(0.3);
    cfg.llm.cache_write_price_per_mtok = Some(3.75);
    let app = TestApp::start(cfg, Some(dir)).await;
    llm.on("count", Reply::tool_call("now", json!({})).usage(1000, 100));
    // OpenAI reports cache reads only (as part of prompt_tokens).
    llm.on("count", Reply::text("It is now.").usage(1500, 200).cache_usage(400, 0));
    app.post("u1", "local", "count my tokens").await;
    app.wait_replies("u1", 1, 30).await;
    let totals = app.app.store.usage_since("local", 0).await.unwrap();
    // Input counts the whole prompt: 1000 + 1500 fresh and 400 read from the cache.
    assert_eq!((totals.turns, totals.input_tokens, totals.output_tokens), (1, 2900, 300));
    let want = (2500.0 * 3.0 + 300.0 * 15.0 + 400.0 * 0.3) / 1e6;
    assert!((totals.cost_usd - want).abs() < 1e-9, "cost {} != {want}", totals.cost_usd);
    // /status shows them without calling the model.
    let before = llm.request_count();
    app.post("u1", "local", "/status").await;
    let replies = app.wait_replies("u1", 2, 30).await;
    let status = replies[1]["text"].as_str().unwrap();
    assert!(status.contains("Today: 1 turn, 2900 tokens in, 300 tokens out"), "{status}");
    assert!(status.contains("fake-model"), "{status}");
    // /usage: today, this week and this month by model, and the limits, without the model.
    app.post("u1", "local", "/usage").await;
    let replies = app.wait_replies("u1", 3, 30).await;
    let usage = replies[2]["text"].as_str().unwrap();
    for part in ["**Today**: $0.0121", "fake-model: $0.0121 · 2.9k in, 300 out", "**This week**", "**This month**"] {
        assert!(usage.contains(part), "missing {part:?}:\n{usage}");
    }
    assert!(usage.contains("No spending limits are set"), "{usage}");
    assert_eq!(llm.request_count(), before);
    // The web page's usage panel: the same report as JSON, the caller's own only.
    let http = reqwest::Client::new();
    let get = |path: &str| http.get(app.url(path)).send();
    let panel: serde_json::Value = get("/api/v1/usage?user=local").await.unwrap().json().await.unwrap();
    let today = &panel["report"]["periods"][0];
    assert_eq!((today["period"].as_str(), today["models"][0]["model"].as_str()), (Some("today"), Some("fake-model")));
    assert!((today["cost_usd"].as_f64().unwrap() - want).abs() < 1e-9, "{panel}");
    assert_eq!(panel["text"].as_str(), Some(usage));
    let stranger: serde_json::Value = get("/api/v1/usage?user=stranger").await.unwrap().json().await.unwrap();
    assert_eq!(stranger["report"]["periods"][0]["models"], json!([]), "another person's usage is not shown");
    // Prometheus: tokens and cost by model and kind of call (never by user).
    let metrics = get("/metrics").await.unwrap().text().await.unwrap();
    let cost = metrics.lines().find(|l| l.starts_with("butler_llm_cost_usd_total{model=\"fake-model\",kind=\"turn\"}"));
    assert!(cost.is_some_and(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap() >= want - 1e-9), "{metrics}");
    assert!(metrics.contains("butler_llm_tokens_total{model=\"fake-model\",kind=\"turn\",direction=\"output\"}"));
    assert!(!metrics.contains("user=\""), "no metric is labelled by user");
    app.stop().await;
}

#[tokio::test]
async fn system_prompt_is_byte_stable_across_turns_and_rehydration() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.limits.session_idle_secs = 1;
    let app = TestApp::start(cfg, Some(dir)).await;
    app.post("sp", "local", "first").await;
    app.wait_replies("sp", 1, 30).await;
    app.post("sp", "local", "second").await;
    app.wait_replies("sp", 2, 30).await;
    // Let the actor retire, then talk again: the session is rehydrated from the store.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while app.app.sessions.live() > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(app.app.sessions.live(), 0, "idle actor retired");
    app.post("sp", "local", "third").await;
    app.wait_replies("sp", 3, 30).await;
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 3);
    let system = reqs[0].system_text();
    assert!(!system.is_empty());
    for r in &reqs {
        assert_eq!(r.system_text(), system, "system prompt changed");
    }
    // The rehydrated session still has the whole history, in order.
    let users: Vec<String> = reqs[2]
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(users, ["first", "second", "third"]);
    let assistants = reqs[2].messages().iter().filter(|m| m["role"] == "assistant").count();
    assert_eq!(assistants, 2);
    app.stop().await;
}

#[tokio::test]
async fn memory_tools_are_per_user_and_now_knows_the_zone() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.access.policy = butler::config::AccessPolicy::Open;
    cfg.agent.timezone = "America/Sao_Paulo".into();
    let app = TestApp::start(cfg, Some(dir)).await;
    llm.on("keep", Reply::tool_call("remember", json!({"text": "Alice's cat is called Tom"})));
    llm.on("keep", Reply::text("Noted."));
    app.post("m-alice", "alice", "keep this: my cat is Tom").await;
    app.wait_replies("m-alice", 1, 30).await;

    // Another conversation of the same user finds it; another user does not.
    for (conv, user) in [("m-alice-2", "alice"), ("m-bob", "bob")] {
        llm.on(&format!("cat {user}"), Reply::tool_call("recall", json!({"query": "cat Tom"})));
        llm.on(&format!("cat {user}"), Reply::text("done"));
        app.post(conv, user, &format!("which cat {user}")).await;
        app.wait_replies(conv, 1, 30).await;
    }
    let results: Vec<String> = llm.requests().iter().filter_map(|r| r.last_tool_result()).collect();
    assert!(results.iter().any(|r| r.contains("[memory") && r.contains("Alice's cat is called Tom")), "{results:?}");
    let bob = llm.requests().iter().rev().find(|r| r.last_user_text().contains("cat bob")).unwrap().last_tool_result();
    assert_eq!(bob.as_deref(), Some("No memories match."));

    // Bob cannot forget Alice's memory; Alice can.
    let alice = app.app.store.identity_user(&"web:alice".parse().unwrap()).await.unwrap().unwrap();
    let id = app.app.store.memory_list(&MemoryScope::personal(&alice.id), 10).await.unwrap()[0].id;
    for (conv, user, want) in [
        ("m-bob", "bob", format!("error: there is no memory {id} to forget")),
        ("m-alice", "alice", format!("Forgot memory {id}.")),
    ] {
        llm.on(&format!("forget {user}"), Reply::tool_call("forget", json!({"id": id})));
        llm.on(&format!("forget {user}"), Reply::text("done"));
        let before = app.messages(conv).await.iter().filter(|m| m["role"] == "assistant").count();
        app.post(conv, user, &format!("forget {user}")).await;
        app.wait_replies(conv, before + 1, 30).await;
        assert_eq!(llm.last_request().unwrap().last_tool_result().unwrap(), want);
    }
    assert!(app.app.store.memory_list(&MemoryScope::personal(&alice.id), 10).await.unwrap().is_empty());

    llm.on("time", Reply::tool_call("now", json!({})));
    llm.on("time", Reply::text("ok"));
    app.post("m-alice", "alice", "what time is it").await;
    app.wait_replies("m-alice", 3, 30).await;
    let now = llm.last_request().unwrap().last_tool_result().unwrap();
    assert!(now.contains("America/Sao_Paulo") && now.contains("-03:00"), "{now}");
    app.stop().await;
}
