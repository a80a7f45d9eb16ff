//! Secrets never pass through the model (issue 36, point 5): a `[secrets]` entry is named by a
//! tool call (`http_get` / `http_request` with `auth`, an MCP server's `env = { TOKEN =
//! "secret:NAME" }`) and its value is added on the host side after the permission check: the
//! request carries it, the approval shows only its name, a host outside its `hosts` never gets
//! it, and a result echoing it (a server reflecting the header, an MCP server printing its
//! environment) reaches the model as `[secret NAME]`. Through a real Butler, no request to the
//! model and nothing in the transcript holds the canary.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::{err_text, pick, serve, Harness};
use axum::http::HeaderMap;
use axum::routing::any;
use axum::Router;
use butler::config::{Config, HttpRequestConfig, Secret, SecretConfig};
use butler::secrets::Vault;
use butler::tools::builtin::{http_tools_with_guard, NetGuard};
use serde_json::json;
use std::net::SocketAddr;

const CANARY: &str = "canary-secret-5e1f0c9a77";

/// Echoes the `X-Api-Key` and `Authorization` headers it got.
async fn echo_server() -> SocketAddr {
    let app = Router::new().route(
        "/echo",
        any(|headers: HeaderMap| async move {
            let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or("-").to_string();
            format!("x-api-key={} authorization={}", h("x-api-key"), h("authorization"))
        }),
    );
    serve(app).await
}

fn with_secrets(cfg: &mut Config) {
    cfg.secrets.insert(
        "canary".into(),
        SecretConfig {
            value: Some(Secret::new(CANARY)),
            hosts: vec!["api.example".into(), "127.0.0.1".into()],
            header: "X-Api-Key".into(),
            scheme: String::new(),
            ..SecretConfig::default()
        },
    );
}

#[tokio::test]
async fn a_named_secret_goes_to_its_hosts_only_and_never_comes_back() {
    let h = Harness::new().await;
    let port = echo_server().await.port();
    let mut cfg = Config::default();
    with_secrets(&mut cfg);
    let vault = Vault::load(&cfg).unwrap();
    let guard = NetGuard::allowing_local()
        .with_static_host("api.example", vec!["127.0.0.1".parse().unwrap()])
        .with_static_host("other.example", vec!["127.0.0.1".parse().unwrap()]);
    let http = HttpRequestConfig {
        allowed_hosts: vec!["api.example".into(), "other.example".into()],
        max_bytes: 10_000,
        timeout_secs: 5,
        allow_private_addresses: true,
    };
    let tools = http_tools_with_guard(&http, guard, vault).unwrap();
    let get = pick(&tools, "http_get");
    let schema = get.spec().parameters.to_string();
    assert!(schema.contains("\"auth\"") && schema.contains("canary") && !schema.contains(CANARY), "{schema}");
    let url = format!("http://api.example:{port}/echo");
    // The approver sees which secret, never its value.
    let action = get.action(&h.ctx, &json!({"url": url, "auth": "canary"}));
    assert!(
        action.summary.contains("with the secret `canary`") && !format!("{action:?}").contains(CANARY),
        "{action:?}"
    );
    // The server gets it; the result the model reads has its name instead.
    let out = h.call(&*get, json!({"url": url, "auth": "canary"})).await.unwrap();
    assert!(out.contains("x-api-key=[secret canary]"), "{out}");
    assert!(!out.contains(CANARY), "{out}");
    // Another allowed host is not one of the secret's: refused before anything is sent.
    let other = format!("http://other.example:{port}/echo");
    let e = err_text(h.call(&*get, json!({"url": other, "auth": "canary"})).await);
    assert!(e.contains("may only be sent to api.example, 127.0.0.1, not to `other.example`"), "{e}");
    let e = err_text(h.call(&*get, json!({"url": url, "auth": "nope"})).await);
    assert!(e.contains("`nope` is not a secret"), "{e}");
    // Without `auth`, nothing is added.
    let out = h.call(&*get, json!({"url": url})).await.unwrap();
    assert!(out.contains("x-api-key=-"), "{out}");
}

#[tokio::test]
async fn through_a_real_butler_the_model_never_sees_a_secret() {
    let llm = FakeLlm::start().await;
    let port = echo_server().await.port();
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    with_secrets(&mut cfg);
    cfg.tools.http_request = HttpRequestConfig {
        allowed_hosts: vec!["127.0.0.1".into()],
        max_bytes: 10_000,
        timeout_secs: 5,
        allow_private_addresses: true,
    };
    let mut server = crate::mcp::stdio("vault");
    server.read_only = true;
    server.env.insert("TOKEN".into(), Secret::new("secret:canary"));
    cfg.mcp.servers = vec![server];
    let app = TestApp::start(cfg, Some(dir)).await;
    crate::many_tools::until_offered(&app, &llm, "vault__probe").await;

    let environ: String = "/proc/self/environ".bytes().map(|b| format!("{b:02x}")).collect();
    let url = format!("http://127.0.0.1:{port}/echo");
    llm.on("use the key", Reply::tool_call("http_get", json!({"url": url, "auth": "canary"})));
    llm.on("use the key", Reply::tool_call("vault__probe", json!({"hex": environ})));
    llm.on("use the key", Reply::text("Done."));
    app.post("s-1", "local", "use the key please").await;
    let reqs = llm.requests_for("use the key", 3).await;
    let echoed = reqs[1].last_tool_result().unwrap_or_default();
    assert!(echoed.contains("x-api-key=[secret canary]"), "the header went out: {echoed}");
    let env = reqs[2].last_tool_result().unwrap_or_default();
    assert!(env.contains("TOKEN=[secret canary]"), "the server got it in its environment: {env}");
    for (i, r) in llm.requests().iter().enumerate() {
        assert!(!r.body.to_string().contains(CANARY), "request {i} to the model holds the secret");
    }
    for m in app.messages("s-1").await {
        assert!(!m.to_string().contains(CANARY), "the transcript holds the secret: {m}");
    }
    app.stop().await;
}
