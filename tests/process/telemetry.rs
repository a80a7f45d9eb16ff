//! What an operator watches, on the real binary: `/metrics` after real traffic (a tool call, a
//! failed model request, an approval left waiting, replies delivered) has every series the
//! issue names under Prometheus' conventions and no user or chat ids as labels; `[log] format
//! = "json"` gives one JSON object per line with the event id in its spans; and, in a build
//! with the `otel` feature, the spans of a turn reach an OTLP/HTTP collector with the model and
//! tool calls as children of the turn.

use super::{approve_action, llm_section, post, wait_messages};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::proc::Deployment;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Label pairs a series is looked up by.
type Labels = &'static [(&'static str, &'static str)];

/// `name{labels} value` lines of a scrape, as (name, labels, value).
fn series(text: &str) -> Vec<(String, BTreeMap<String, String>, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (head, value) = l.rsplit_once(' ').unwrap();
            let (name, labels) = match head.split_once('{') {
                Some((n, rest)) => (n, rest.trim_end_matches('}')),
                None => (head, ""),
            };
            let labels = labels
                .split("\",")
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (k, v) = p.split_once("=\"").unwrap();
                    (k.to_string(), v.trim_end_matches('"').to_string())
                })
                .collect();
            (name.to_string(), labels, value.parse().unwrap())
        })
        .collect()
}

fn value(all: &[(String, BTreeMap<String, String>, f64)], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    all.iter()
        .find(|(n, l, _)| n == name && labels.iter().all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v)))
        .map(|s| s.2)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_after_traffic_cover_the_pipeline_under_the_naming_conventions() {
    let llm = FakeLlm::start().await;
    let dep =
        Deployment::new(&format!("{}\n[tools]\nworkspace_dir = \"workspaces\"\n", llm_section(&llm.openai_url())));
    let base = dep.base();
    llm.on("what time is it", Reply::tool_call("now", json!({})));
    llm.on("what time is it", Reply::text("It is now."));
    llm.on("this fails", Reply::server_error(500));
    llm.on("write it down", Reply::tool_call("file_write", json!({"path": "a.md", "content": "x"})));
    let server = dep.serve().await;
    post(&base, "m1", "what time is it").await;
    wait_messages(&base, "m1", "the answer", |m| m.iter().any(|x| x["text"] == "It is now.")).await;
    post(&base, "m2", "this fails").await;
    wait_messages(&base, "m2", "the model-away notice", |m| {
        m.iter().any(|x| x["role"] == "assistant" && x["text"].as_str().is_some_and(|t| t.starts_with("⏳")))
    })
    .await;
    post(&base, "m3", "write it down").await;
    wait_messages(&base, "m3", "the approval request", |m| approve_action(m).is_some()).await;

    let text = reqwest::get(format!("{base}/metrics")).await.unwrap().text().await.unwrap();
    let all = series(&text);
    // Conventions: prefix, counters end in _total, durations in seconds, no identities.
    let types: BTreeMap<&str, &str> =
        text.lines().filter_map(|l| l.strip_prefix("# TYPE ")).filter_map(|l| l.split_once(' ')).collect();
    for (name, kind) in &types {
        assert!(name.starts_with("butler_"), "{name}");
        assert_eq!(*kind == "counter", name.ends_with("_total"), "{name} is a {kind}");
        if *kind == "histogram" {
            assert!(name.ends_with("_seconds"), "{name}: base unit seconds");
        }
    }
    for (name, labels, _) in &all {
        for (k, v) in labels {
            assert!(
                !["user", "user_id", "chat", "chat_id", "conversation", "session"].contains(&k.as_str()),
                "{name}: {k}"
            );
            assert!(!v.starts_with("m1") && !v.contains("local") && !v.contains("web:"), "{name}: {k}={v}");
        }
    }
    // (series, labels, at least)
    let cases: &[(&str, Labels, f64)] = &[
        ("butler_inbox_pending", &[], 0.0),
        // "this fails" found the model away: its try is deferred (the person told), not a turn.
        ("butler_turn_seconds_count", &[], 2.0),
        ("butler_llm_request_seconds_count", &[("provider", "openai")], 4.0),
        ("butler_llm_errors_total", &[("provider", "openai"), ("kind", "server")], 1.0),
        ("butler_tool_calls_total", &[("tool", "now"), ("outcome", "ok")], 1.0),
        ("butler_deliveries_total", &[("channel", "web"), ("outcome", "sent")], 3.0),
        ("butler_approvals_waiting", &[], 1.0),
    ];
    for (name, labels, least) in cases {
        let got = value(&all, name, labels).unwrap_or_else(|| panic!("{name}{labels:?} missing from:\n{text}"));
        assert!(got >= *least, "{name}{labels:?} = {got}, want at least {least}");
    }
    assert_eq!(value(&all, "butler_approvals_waiting", &[]), Some(1.0), "exactly the one request");
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_object_per_line_with_the_event_in_their_spans() {
    let llm = FakeLlm::start().await;
    llm.set_default(Reply::text("Hi."));
    let dep = Deployment::new(&format!("{}\n[log]\nformat = \"json\"\n", llm_section(&llm.openai_url())));
    let base = dep.base();
    let server = dep.serve_with_env(&[("RUST_LOG", "info")]).await;
    let accepted = post(&base, "j1", "hello").await;
    let event = accepted["event_id"].as_str().unwrap().to_string();
    wait_messages(&base, "j1", "the answer", |m| m.iter().any(|x| x["text"] == "Hi.")).await;
    let log = server.log_text();
    let lines: Vec<Value> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(lines.len() >= 3, "{log}");
    for l in &lines {
        assert!(l["timestamp"].is_string() && l["level"].is_string() && l["fields"].is_object(), "{l}");
    }
    let in_turn =
        lines.iter().any(|l| l["spans"].as_array().is_some_and(|s| s.iter().any(|s| s["event"] == event.as_str())));
    assert!(in_turn, "a line logged inside the event's spans names it: {log}");
    assert!(lines.iter().any(|l| l["fields"]["message"].as_str().is_some_and(|m| m.contains("ready"))), "{log}");
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_endpoint_needs_the_otel_build() {
    let dep = Deployment::new("[log]\notlp_endpoint = \"http://127.0.0.1:4318\"\n");
    let out = dep.command(&["config", "check"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if cfg!(feature = "otel") {
        assert!(out.status.success(), "{err}");
    } else {
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("log.otlp_endpoint") && err.contains("--features otel"), "{err}");
    }
}

#[cfg(feature = "otel")]
mod otel {
    use super::*;
    use axum::routing::post as route_post;
    use std::sync::{Arc, Mutex};

    /// A collector: every body posted to /v1/traces, as JSON.
    async fn collector() -> (String, Arc<Mutex<Vec<Value>>>) {
        let got = Arc::new(Mutex::new(Vec::new()));
        let keep = got.clone();
        let app = axum::Router::new().route(
            "/v1/traces",
            route_post(move |body: axum::body::Bytes| {
                let keep = keep.clone();
                async move {
                    keep.lock().unwrap().push(serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null));
                    "{}"
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (url, got)
    }

    /// Every span received: (name, span id, parent id, attributes as key -> string).
    fn spans(bodies: &[Value]) -> Vec<(String, String, String, BTreeMap<String, String>)> {
        let mut out = Vec::new();
        for b in bodies {
            for rs in b["resourceSpans"].as_array().into_iter().flatten() {
                for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                    for s in ss["spans"].as_array().into_iter().flatten() {
                        let attrs = s["attributes"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|a| {
                                let v = &a["value"];
                                let v = v["stringValue"].as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
                                (a["key"].as_str().unwrap_or_default().to_string(), v)
                            })
                            .collect();
                        let id = |k: &str| s[k].as_str().unwrap_or_default().to_string();
                        out.push((id("name"), id("spanId"), id("parentSpanId"), attrs));
                    }
                }
            }
        }
        out
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_turn_is_traced_with_its_model_and_tool_calls_as_children() {
        let (url, bodies) = collector().await;
        let llm = FakeLlm::start().await;
        llm.on("what time is it", Reply::tool_call("now", json!({})));
        llm.on("what time is it", Reply::text("It is now."));
        let dep = Deployment::new(&format!(
            "{}\n[log]\notlp_endpoint = \"{url}\"\nservice_name = \"butler-test\"\n",
            llm_section(&llm.openai_url())
        ));
        let base = dep.base();
        let server = dep.serve_with_env(&[("RUST_LOG", "info"), ("OTEL_BSP_SCHEDULE_DELAY", "100")]).await;
        let event = post(&base, "t1", "what time is it").await["event_id"].as_str().unwrap().to_string();
        wait_messages(&base, "t1", "the answer", |m| m.iter().any(|x| x["text"] == "It is now.")).await;
        // A graceful stop sends what is left.
        server.terminate(std::time::Duration::from_secs(20)).await;
        let got = bodies.lock().unwrap().clone();
        let service = got.iter().any(|b| b.to_string().contains("butler-test"));
        assert!(service, "service.name is set");
        let all = spans(&got);
        // The turn is the agent's `run`, under the session's `job`; both carry the event id.
        let turn = all
            .iter()
            .find(|s| s.0 == "run" && s.3.get("event") == Some(&event))
            .unwrap_or_else(|| panic!("a turn span with the event id: {all:#?}"));
        let children: Vec<&String> = all.iter().filter(|s| s.2 == turn.1).map(|s| &s.0).collect();
        assert_eq!(children.iter().filter(|n| n.as_str() == "llm").count(), 2, "{children:?}");
        assert!(children.iter().any(|n| n.as_str() == "tool"), "{children:?}");
        let tool = all.iter().find(|s| s.0 == "tool").unwrap();
        assert_eq!(tool.3.get("tool").map(String::as_str), Some("now"), "{tool:?}");
        let job = all.iter().find(|s| s.0 == "job").expect("the event's job span");
        assert_eq!(job.3.get("event"), Some(&event));
        assert_eq!(turn.2, job.1, "the turn is a child of the job");
    }
}
