//! The OpenAI-compatible API (issue 16, point 3) against a running Butler with the fake LLM: a
//! real OpenAI client (async-openai) lists the models and chats, streamed and not; the answer
//! is Butler's own (through the web chat's ingress, session and transcript), the conversation
//! header keeps a transcript across requests, approvals come back as `/approve ID` text that
//! the next request answers, tokens decide the user, and a table of bad requests gets
//! OpenAI-shaped 4xx errors with nothing stored.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, RecordedRequest, Reply};
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::types::chat::{
    ChatCompletionRequestAssistantMessageArgs, ChatCompletionRequestMessage, ChatCompletionRequestSystemMessageArgs,
    ChatCompletionRequestUserMessageArgs, CreateChatCompletionRequest, CreateChatCompletionRequestArgs, FinishReason,
    Role,
};
use async_openai::Client;
use futures::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;

fn client(app: &TestApp, token: &str, conversation: Option<&str>) -> Client<OpenAIConfig> {
    // The client's reqwest 0.13 is built with rustls but no crypto provider (as Butler's own
    // binary installs ring at start): install it once, for plain-HTTP use all the same.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut cfg = OpenAIConfig::new().with_api_base(app.url("/v1")).with_api_key(token);
    if let Some(c) = conversation {
        cfg = cfg.with_header("X-Butler-Conversation", c).expect("a header");
    }
    Client::with_config(cfg)
}

fn user(text: &str) -> ChatCompletionRequestMessage {
    ChatCompletionRequestUserMessageArgs::default().content(text).build().unwrap().into()
}

fn request(messages: Vec<ChatCompletionRequestMessage>) -> CreateChatCompletionRequest {
    // Clients send their own default model name: Butler takes any.
    CreateChatCompletionRequestArgs::default().model("gpt-4o-mini").messages(messages).build().unwrap()
}

/// A non-streamed completion's text.
async fn ask(client: &Client<OpenAIConfig>, text: &str) -> String {
    let resp = client.chat().create(request(vec![user(text)])).await.expect("a completion");
    resp.choices[0].message.content.clone().unwrap_or_default()
}

/// The user texts of a model request (what Butler's transcript sent).
fn users_in(req: &RecordedRequest) -> Vec<String> {
    req.messages().iter().filter(|m| m["role"] == "user").map(|m| m["content"].as_str().unwrap_or("").into()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_openai_client_lists_the_model_and_chats_streamed_and_not() {
    let llm = FakeLlm::start().await;
    let (cfg, dir) = config(Some(&llm.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    let c = client(&app, "any-key", None);

    let models = c.models().list().await.expect("models");
    assert_eq!(models.object, "list");
    let ids: Vec<_> = models.data.iter().map(|m| (m.id.as_str(), m.object.as_str(), m.owned_by.as_str())).collect();
    assert_eq!(ids, [("butler", "model", "butler")]);
    assert_eq!(c.models().retrieve("butler").await.expect("the model").id, "butler");

    // Not streamed: older messages and the client's system prompt are not Butler's transcript.
    let messages = vec![
        ChatCompletionRequestSystemMessageArgs::default().content("You are a pirate.").build().unwrap().into(),
        user("an old question"),
        ChatCompletionRequestAssistantMessageArgs::default().content("an old answer").build().unwrap().into(),
        user("hello there"),
    ];
    let resp = c.chat().create(request(messages)).await.expect("a completion");
    assert_eq!(resp.object, "chat.completion");
    assert_eq!(resp.model, "butler");
    assert_eq!(resp.choices.len(), 1);
    assert_eq!(resp.choices[0].message.role, Role::Assistant);
    assert_eq!(resp.choices[0].message.content.as_deref(), Some("echo: hello there"));
    assert_eq!(resp.choices[0].finish_reason, Some(FinishReason::Stop));
    let usage = resp.usage.expect("usage");
    assert!(usage.prompt_tokens > 0 && usage.total_tokens == usage.prompt_tokens + usage.completion_tokens);
    let req = llm.last_request().unwrap();
    assert_eq!(users_in(&req), ["hello there"], "only the newest user message is taken");
    assert!(!req.system_text().contains("pirate"), "the client's system prompt is not used");
    // It went through the web chat: the page shows the exchange in the user's API conversation.
    let shown: Vec<_> =
        app.messages("openai-local").await.iter().map(|m| m["text"].as_str().unwrap().to_string()).collect();
    assert_eq!(shown, ["hello there", "echo: hello there"]);

    // Streamed: the role first, the text in pieces, one finish, then the end of the stream.
    let words = ["Streams ", "arrive ", "in ", "pieces ", "over ", "time."];
    llm.on("stream please", Reply::chunks(words).chunk_delay(Duration::from_millis(150)));
    let mut stream = c.chat().create_stream(request(vec![user("stream please")])).await.expect("a stream");
    let (mut text, mut pieces, mut finishes, mut first_role) = (String::new(), 0, 0, None);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.expect("a chunk");
        assert_eq!((chunk.object.as_str(), chunk.model.as_str()), ("chat.completion.chunk", "butler"));
        for choice in chunk.choices {
            first_role = first_role.or(Some(choice.delta.role));
            if let Some(t) = choice.delta.content.filter(|t| !t.is_empty()) {
                assert_eq!(finishes, 0, "no text after the finish");
                text.push_str(&t);
                pieces += 1;
            }
            finishes += usize::from(choice.finish_reason == Some(FinishReason::Stop));
        }
    }
    assert_eq!(first_role, Some(Some(Role::Assistant)), "the first chunk names the role");
    assert_eq!(text, words.concat(), "the streamed text is the model's reply");
    assert!(pieces > 1, "the text arrived in pieces, not at the end: {pieces}");
    assert_eq!(finishes, 1);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conversation_header_keeps_one_transcript() {
    let llm = FakeLlm::start().await;
    let (cfg, dir) = config(Some(&llm.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    let trip = client(&app, "k", Some("trip"));
    assert_eq!(ask(&trip, "my name is Ada").await, "echo: my name is Ada");
    assert_eq!(ask(&trip, "what is my name?").await, "echo: what is my name?");
    let second = llm.last_request().unwrap();
    let history: Vec<(String, String)> = second
        .messages()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| (m["role"].as_str().unwrap().into(), m["content"].as_str().unwrap_or("").into()))
        .collect();
    let want = [("user", "my name is Ada"), ("assistant", "echo: my name is Ada"), ("user", "what is my name?")];
    assert_eq!(
        history,
        want.map(|(r, t)| (r.to_string(), t.to_string())),
        "the first exchange is in the second request"
    );

    // Without the header: the user's own API conversation, a transcript of its own.
    assert_eq!(ask(&client(&app, "k", None), "a fresh start").await, "echo: a fresh start");
    assert_eq!(users_in(&llm.last_request().unwrap()), ["a fresh start"]);
    assert_eq!(app.messages("trip").await.len(), 4);
    assert_eq!(app.messages("openai-local").await.len(), 2);
    app.stop().await;
}

/// The id in "Reply `/approve ID` or ...".
fn approval_id(text: &str) -> String {
    let at = text.find("`/approve ").unwrap_or_else(|| panic!("no /approve line in {text:?}")) + "`/approve ".len();
    text[at..].split('`').next().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_comes_back_as_text_and_the_next_message_answers_it() {
    let llm = FakeLlm::start().await;
    llm.on("write it down", Reply::tool_call("file_write", json!({"path": "notes/todo.md", "content": "buy milk"})));
    llm.on(
        "write it down",
        Reply::chunks(["Written ", "to ", "notes/todo.md."]).chunk_delay(Duration::from_millis(50)),
    );
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    let workspaces = dir.path().join("workspaces");
    cfg.tools.workspace_dir = workspaces.display().to_string();
    let app = TestApp::start(cfg, Some(dir)).await;
    let c = client(&app, "k", Some("notes"));

    let asked = ask(&c, "write it down please").await;
    assert!(asked.contains("Approval needed") && asked.contains("notes/todo.md"), "{asked}");
    let id = approval_id(&asked);
    assert!(asked.contains(&format!("`/deny {id}`")), "{asked}");
    let file = workspaces.join("local/notes/todo.md");
    assert!(!file.exists(), "nothing written before the approval");

    // The answer, streamed: the tool runs and the turn goes on.
    let mut stream = c.chat().create_stream(request(vec![user(&format!("/approve {id}"))])).await.expect("a stream");
    let mut text = String::new();
    while let Some(chunk) = stream.next().await {
        for choice in chunk.expect("a chunk").choices {
            text.push_str(choice.delta.content.as_deref().unwrap_or(""));
        }
    }
    assert_eq!(text, "Written to notes/todo.md.");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "buy milk");
    let result = llm.requests()[1].last_tool_result().unwrap();
    assert!(!result.contains("denied"), "the tool ran: {result}");

    // Answering it again is refused, as text.
    let again = ask(&c, &format!("/approve {id}")).await;
    assert!(again.contains("already answered"), "{again}");
    assert_eq!(llm.request_count(), 2);
    app.stop().await;
}

/// The request's `user` field (deprecated by OpenAI in favour of `safety_identifier`, still
/// sent by clients; it names the web user on loopback without tokens).
#[allow(deprecated)]
fn with_user(mut req: CreateChatCompletionRequest, claimed: Option<&str>) -> CreateChatCompletionRequest {
    req.user = claimed.map(str::to_string);
    req
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_token_is_the_user() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.channels.web.token = Some(butler::config::Secret::new("owner-secret-token"));
    cfg.channels.web.tokens.insert("alice".into(), butler::config::Secret::new("alice-secret-token"));
    let app = TestApp::start(cfg, Some(dir)).await;

    assert_eq!(ask(&client(&app, "owner-secret-token", None), "hi from the owner").await, "echo: hi from the owner");
    let r = app.http.get(app.url("/api/v1/conversations/openai-owner/messages")).bearer_auth("owner-secret-token");
    let v: Value = r.send().await.unwrap().json().await.unwrap();
    assert_eq!(v["messages"][0]["author"], "owner", "the token's user spoke: {v}");

    let status_of = |e: OpenAIError| match e {
        OpenAIError::ApiError(e) => (e.status_code.as_u16(), e.api_error.r#type, e.api_error.code),
        other => panic!("not an API error: {other}"),
    };
    // (what, token, conversation, user field, status, type, code)
    let cases = [
        ("wrong token", "not-a-token", None, None, 401, "authentication_error", "invalid_api_key"),
        (
            "user disagrees with the token",
            "owner-secret-token",
            None,
            Some("alice"),
            403,
            "permission_error",
            "forbidden",
        ),
        (
            "someone else's conversation",
            "alice-secret-token",
            Some("openai-owner"),
            None,
            403,
            "permission_error",
            "forbidden",
        ),
        (
            "someone else's reserved name",
            "alice-secret-token",
            Some("openai-bob"),
            None,
            403,
            "permission_error",
            "reserved_conversation",
        ),
    ];
    for (what, token, conv, claimed, status, kind, code) in cases {
        let req = with_user(request(vec![user("let me in")]), claimed);
        let err = client(&app, token, conv).chat().create(req).await.expect_err(what);
        assert_eq!(status_of(err), (status, Some(kind.to_string()), Some(code.to_string())), "{what}");
    }
    let err = client(&app, "not-a-token", None).models().list().await.expect_err("models need a token too");
    assert_eq!(status_of(err).0, 401);
    assert_eq!(llm.request_count(), 1, "no refused request reached the model");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_leaves_the_turn_to_finish() {
    let llm = FakeLlm::start().await;
    let words: Vec<String> = (0..12).map(|i| format!("w{i} ")).collect();
    llm.on("a long one", Reply::chunks(words.clone()).chunk_delay(Duration::from_millis(100)));
    let (cfg, dir) = config(Some(&llm.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    let body = json!({"model": "butler", "stream": true, "messages": [{"role": "user", "content": "a long one"}]});
    let resp = app.http.post(app.url("/v1/chat/completions")).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-butler-conversation"], "openai-local");
    let mut body_stream = resp.bytes_stream();
    let first = body_stream.next().await.expect("a first event").expect("bytes");
    assert!(String::from_utf8_lossy(&first).starts_with("data: "), "{first:?}");
    drop(body_stream);

    let replies = app.wait_replies("openai-local", 1, 30).await;
    assert_eq!(replies.len(), 1);
    assert_eq!(replies[0]["text"].as_str().unwrap(), words.concat().trim_end(), "the turn finished and was stored");
    // And the conversation goes on, with that answer in its transcript.
    assert_eq!(ask(&client(&app, "k", None), "and then?").await, "echo: and then?");
    let users = users_in(&llm.last_request().unwrap());
    assert_eq!(users, ["a long one", "and then?"]);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_model_the_answer_says_so() {
    let (cfg, dir) = config(None);
    let app = TestApp::start(cfg, Some(dir)).await;
    let text = ask(&client(&app, "k", None), "hello?").await;
    assert!(text.contains("no language model configured"), "{text}");
    app.stop().await;
}

/// A raw streamed response: its `data:` payloads, in order.
async fn sse_payloads(app: &TestApp, body: Value) -> Vec<String> {
    let resp = app.http.post(app.url("/v1/chat/completions")).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let text = resp.text().await.unwrap();
    text.lines().filter_map(|l| l.strip_prefix("data: ")).map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_is_openai_s_wire_format() {
    let llm = FakeLlm::start().await;
    let (cfg, dir) = config(Some(&llm.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    let parts = json!([{"type": "text", "text": "count"}, {"type": "text", "text": "to three"}]);
    let body = json!({"model": "butler", "stream": true, "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": parts}]});
    let payloads = sse_payloads(&app, body).await;
    assert_eq!(payloads.last().map(String::as_str), Some("[DONE]"), "{payloads:?}");
    let chunks: Vec<Value> = payloads[..payloads.len() - 1].iter().map(|p| serde_json::from_str(p).unwrap()).collect();
    let id = chunks[0]["id"].as_str().unwrap();
    assert!(id.starts_with("chatcmpl-"));
    assert!(chunks.iter().all(|c| c["id"] == id && c["object"] == "chat.completion.chunk"), "{chunks:?}");
    assert_eq!(chunks[0]["choices"][0]["delta"], json!({"role": "assistant", "content": ""}));
    let (usage, with_choices) = chunks.split_last().unwrap();
    assert_eq!(usage["choices"], json!([]), "the usage chunk comes last");
    assert!(usage["usage"]["total_tokens"].as_i64().unwrap() > 0, "{usage}");
    let finish = with_choices.last().unwrap();
    assert_eq!(
        (finish["choices"][0]["finish_reason"].as_str(), &finish["choices"][0]["delta"]),
        (Some("stop"), &json!({}))
    );
    let text: String = with_choices.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect();
    assert_eq!(text, "echo: count\n\nto three", "text parts are joined");
    app.stop().await;
}

/// Rows in the tables a request could have written to.
async fn stored_rows(app: &TestApp) -> i64 {
    let pool = sqlx::SqlitePool::connect(&app.db_url()).await.expect("open db");
    let mut total = 0;
    for table in ["inbox", "conversations", "web_messages", "outbox"] {
        let sql = format!("SELECT COUNT(*) FROM {table}");
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(&pool).await.expect("count");
        total += n;
    }
    pool.close().await;
    total
}

/// One bad request and the error it must get.
struct Bad {
    what: &'static str,
    get: bool,
    path: &'static str,
    header: Option<(&'static str, &'static str)>,
    body: String,
    status: u16,
    /// OpenAI's `type`; `None` where the server-wide layers answer in Butler's own shape.
    kind: Option<&'static str>,
    code: &'static str,
}

const CHAT: &str = "/v1/chat/completions";

fn bad(what: &'static str, body: impl Into<String>, status: u16, code: &'static str) -> Bad {
    let kind = Some(if status == 403 { "permission_error" } else { "invalid_request_error" });
    Bad { what, get: false, path: CHAT, header: None, body: body.into(), status, kind, code }
}

#[tokio::test]
async fn bad_requests_get_openai_shaped_errors_and_store_nothing() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.server.max_body_bytes = 200_000;
    let app = TestApp::start(cfg, Some(dir)).await;
    let msg =
        |content: Value| json!({"model": "butler", "messages": [{"role": "user", "content": content}]}).to_string();
    let image =
        json!([{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]);
    let hi = r#"{"role":"user","content":"hi"}"#;
    let mut cases = vec![
        bad("invalid JSON", "{\"messages\": ", 400, "invalid_json"),
        bad("not an object", "[1]", 400, "invalid_request"),
        bad("no messages", r#"{"model":"butler"}"#, 400, "missing_messages"),
        bad("empty messages", r#"{"messages":[]}"#, 400, "missing_messages"),
        bad("no user message", r#"{"messages":[{"role":"system","content":"hi"}]}"#, 400, "no_user_message"),
        bad("a message without a role", r#"{"messages":[{"content":"hi"}]}"#, 400, "invalid_messages"),
        bad("empty content", msg(json!("  ")), 400, "empty_content"),
        bad("content a number", msg(json!(7)), 400, "invalid_content"),
        bad("an image part", msg(image), 400, "unsupported_content"),
        bad("text too long", msg(json!("x".repeat(40_000))), 400, "text_too_long"),
        bad("n = 2", format!(r#"{{"n":2,"messages":[{hi}]}}"#), 400, "unsupported_n"),
        bad("stream not a boolean", format!(r#"{{"stream":"yes","messages":[{hi}]}}"#), 400, "invalid_type"),
        bad("a bad user name", format!(r#"{{"user":"no spaces","messages":[{hi}]}}"#), 400, "invalid_user"),
        Bad {
            header: Some(("x-butler-conversation", "a b")),
            ..bad("a bad conversation header", msg(json!("hi")), 400, "invalid_conversation")
        },
        Bad {
            header: Some(("x-butler-conversation", "openai-bob")),
            ..bad("another user's reserved name", msg(json!("hi")), 403, "reserved_conversation")
        },
        // Nor can the web API take another user's API conversation name (Butler's error shape).
        Bad {
            path: "/api/v1/messages",
            kind: None,
            ..bad(
                "a reserved name, web API",
                r#"{"conversation":"openai-bob","text":"hi"}"#,
                403,
                "reserved_conversation",
            )
        },
        // The server-wide body limit answers before the route, in Butler's error shape.
        Bad { kind: None, ..bad("body too large", msg(json!("x".repeat(300_000))), 413, "body_too_large") },
        Bad {
            get: true,
            path: "/v1/models/gpt-4",
            kind: Some("not_found_error"),
            ..bad("unknown model", "", 404, "model_not_found")
        },
        Bad {
            path: "/v1/embeddings",
            kind: Some("not_found_error"),
            ..bad("unknown endpoint", "{}", 404, "unknown_url")
        },
        Bad { get: true, ..bad("wrong method", "", 405, "method_not_allowed") },
    ];
    let before = stored_rows(&app).await;
    for c in cases.drain(..) {
        let mut req = match c.get {
            true => app.http.get(app.url(c.path)),
            false => app.http.post(app.url(c.path)).header("content-type", "application/json").body(c.body),
        };
        if let Some((name, value)) = c.header {
            req = req.header(name, value);
        }
        let resp = req.send().await.expect("request");
        let what = c.what;
        assert_eq!(resp.status().as_u16(), c.status, "{what}");
        let v: Value = resp.json().await.unwrap_or_else(|e| panic!("{what}: not JSON: {e}"));
        assert_eq!(v["error"]["code"], c.code, "{what}: {v}");
        assert!(v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}: {v}");
        if let Some(kind) = c.kind {
            assert_eq!(v["error"]["type"], kind, "{what}: {v}");
        }
    }
    assert_eq!(stored_rows(&app).await, before, "a refused request stores nothing");
    assert_eq!(llm.request_count(), 0);
    app.stop().await;
}
