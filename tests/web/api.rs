//! The web API's contract for bad input: every malformed request gets a clear 4xx JSON error,
//! and nothing is stored.

use crate::support::app::{config, TestApp};
use serde_json::Value;

/// Rows in the tables a request could have written to.
async fn stored_rows(app: &TestApp) -> i64 {
    let pool = sqlx::SqlitePool::connect(&app.db_url()).await.expect("open db");
    let mut total = 0;
    for table in ["inbox", "conversations", "web_messages", "outbox"] {
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
            .fetch_one(&pool)
            .await
            .expect("count");
        total += n;
    }
    pool.close().await;
    total
}

struct Case {
    name: &'static str,
    method: &'static str,
    path: &'static str,
    content_type: Option<&'static str>,
    body: String,
    auth: Option<&'static str>,
    status: u16,
    code: &'static str,
}

fn case(name: &'static str, path: &'static str, body: impl Into<String>, status: u16, code: &'static str) -> Case {
    Case {
        name,
        method: "POST",
        path,
        content_type: Some("application/json"),
        body: body.into(),
        auth: None,
        status,
        code,
    }
}

async fn run(app: &TestApp, cases: Vec<Case>) {
    let before = stored_rows(app).await;
    for c in cases {
        let mut req = match c.method {
            "GET" => app.http.get(app.url(c.path)),
            _ => app.http.post(app.url(c.path)).body(c.body.clone()),
        };
        if let Some(ct) = c.content_type {
            req = req.header("content-type", ct);
        }
        if let Some(token) = c.auth {
            req = req.header("authorization", format!("Bearer {token}"));
        }
        let resp = req.send().await.expect("request");
        let status = resp.status().as_u16();
        let ct = resp.headers().get("content-type").map(|v| v.to_str().unwrap_or("").to_string()).unwrap_or_default();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        assert_eq!(status, c.status, "{}: status (body {body})", c.name);
        assert!(ct.starts_with("application/json"), "{}: content type {ct}", c.name);
        assert_eq!(body["error"]["code"], c.code, "{}: body {body}", c.name);
        let msg = body["error"]["message"].as_str().unwrap_or("");
        assert!(!msg.is_empty(), "{}: an error message", c.name);
        assert!(!msg.contains("sqlx") && !msg.contains("/tmp"), "{}: leaks internals: {msg}", c.name);
    }
    assert_eq!(stored_rows(app).await, before, "bad requests stored something");
}

#[tokio::test]
async fn bad_input_is_refused_and_changes_nothing() {
    let (mut cfg, dir) = config(None);
    cfg.server.max_body_bytes = 4096;
    let app = TestApp::start(cfg, Some(dir)).await;
    let big = format!(r#"{{"conversation":"c1","user":"local","text":"{}"}}"#, "x".repeat(8000));
    let mut cases = vec![
        case("malformed json", "/api/v1/messages", "{\"conversation\": ", 400, "malformed_json"),
        case("not an object", "/api/v1/messages", "[1,2]", 422, "invalid_fields"),
        case("missing text", "/api/v1/messages", r#"{"conversation":"c1","user":"local"}"#, 422, "invalid_fields"),
        case("missing conversation", "/api/v1/messages", r#"{"user":"local","text":"hi"}"#, 422, "invalid_fields"),
        case(
            "text wrong type",
            "/api/v1/messages",
            r#"{"conversation":"c1","user":"local","text":5}"#,
            422,
            "invalid_fields",
        ),
        case(
            "unknown field",
            "/api/v1/messages",
            r#"{"conversation":"c1","text":"hi","colour":"red"}"#,
            422,
            "invalid_fields",
        ),
        case(
            "empty text",
            "/api/v1/messages",
            r#"{"conversation":"c1","user":"local","text":"   "}"#,
            422,
            "empty_text",
        ),
        case(
            "bad conversation id",
            "/api/v1/messages",
            r#"{"conversation":"../etc","user":"local","text":"hi"}"#,
            422,
            "invalid_fields",
        ),
        case(
            "bad user",
            "/api/v1/messages",
            r#"{"conversation":"c1","user":"a b","text":"hi"}"#,
            422,
            "invalid_fields",
        ),
        case("body over the limit", "/api/v1/messages", big, 413, "body_too_large"),
        case(
            "action to unknown conversation",
            "/api/v1/actions",
            r#"{"conversation":"nope","user":"local","action":"x"}"#,
            404,
            "unknown_conversation",
        ),
        case(
            "empty action",
            "/api/v1/actions",
            r#"{"conversation":"c1","user":"local","action":""}"#,
            422,
            "invalid_fields",
        ),
    ];
    let mut no_ct = case(
        "no content type",
        "/api/v1/messages",
        r#"{"conversation":"c1","text":"hi"}"#,
        415,
        "unsupported_media_type",
    );
    no_ct.content_type = None;
    cases.push(no_ct);
    for (name, path) in [
        ("list unknown conversation", "/api/v1/conversations/nope/messages"),
        ("stream unknown conversation", "/api/v1/conversations/nope/stream"),
    ] {
        cases.push(Case {
            name,
            method: "GET",
            path,
            content_type: None,
            body: String::new(),
            auth: None,
            status: 404,
            code: "unknown_conversation",
        });
    }
    cases.push(Case {
        name: "bad limit",
        method: "GET",
        path: "/api/v1/conversations/nope/messages?limit=abc",
        content_type: None,
        body: String::new(),
        auth: None,
        status: 400,
        code: "invalid_query",
    });
    cases.push(Case {
        name: "unknown endpoint",
        method: "GET",
        path: "/api/v2/nothing",
        content_type: None,
        body: String::new(),
        auth: None,
        status: 404,
        code: "not_found",
    });
    run(&app, cases).await;
    app.stop().await;
}

#[tokio::test]
async fn tokens_decide_who_is_speaking() {
    let (mut cfg, dir) = config(None);
    cfg.channels.web.tokens.insert("alice".into(), butler::config::Secret::new("alice-secret-token"));
    cfg.channels.web.tokens.insert("bob".into(), butler::config::Secret::new("bob-secret-token"));
    cfg.access.allow = vec!["web:alice".parse().unwrap(), "web:bob".parse().unwrap()];
    let app = TestApp::start(cfg, Some(dir)).await;
    let msg = r#"{"conversation":"a1","text":"hi"}"#;
    let mut cases = vec![];
    let mut no_token = case("no token", "/api/v1/messages", msg, 401, "unauthorized");
    no_token.auth = None;
    cases.push(no_token);
    let mut wrong = case("wrong token", "/api/v1/messages", msg, 401, "unauthorized");
    wrong.auth = Some("not-a-token");
    cases.push(wrong);
    let mut mismatch = case(
        "user disagrees with token",
        "/api/v1/messages",
        r#"{"conversation":"a1","user":"bob","text":"hi"}"#,
        403,
        "forbidden",
    );
    mismatch.auth = Some("alice-secret-token");
    cases.push(mismatch);
    run(&app, cases).await;

    // Alice creates a conversation; Bob can neither post to it nor read it.
    let post = |token: &'static str, body: &'static str| {
        app.http
            .post(app.url("/api/v1/messages"))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(body)
    };
    let r = post("alice-secret-token", msg).send().await.unwrap();
    assert_eq!(r.status(), 202);
    let r = post("bob-secret-token", msg).send().await.unwrap();
    assert_eq!(r.status(), 403);
    let r = app
        .http
        .get(app.url("/api/v1/conversations/a1/messages"))
        .bearer_auth("bob-secret-token")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = app
        .http
        .get(app.url("/api/v1/conversations/a1/messages"))
        .bearer_auth("alice-secret-token")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    app.stop().await;
}

/// Without a model, the page's banner reads "no model configured" (the page's own words) and
/// the hint says only what to do: the two never say the same sentence twice.
#[tokio::test]
async fn info_without_a_model_hints_what_to_do_once() {
    let (cfg, dir) = config(None);
    let app = TestApp::start(cfg, Some(dir)).await;
    let info: Value = app.http.get(app.url("/api/v1/info")).send().await.unwrap().json().await.unwrap();
    assert_eq!(info["llm"]["configured"], false, "{info}");
    let hint = info["llm"]["hint"].as_str().unwrap();
    assert!(hint.starts_with("Set OPENAI_API_KEY") && hint.contains("butler init"), "{hint}");
    assert!(!hint.to_lowercase().contains("no language model") && !hint.contains("not configured"), "{hint}");
    app.stop().await;
}
