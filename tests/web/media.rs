//! Files in the web chat, end to end through the real app and the fake LLM, with real payloads
//! made here: uploads (`POST /api/v1/files`, the raw body streamed under `[media] max_bytes`)
//! named in a message become attachments (an image reaches the model as image content, a CSV
//! as text); a file over the cap is refused before its body is read (declared) or as soon as it
//! passes the cap (streamed); a message naming someone else's or an unknown upload changes
//! nothing; `send_file` in the web chat shows a link to the exact bytes, once across a
//! redelivery; with tokens a file is seen only by its owner.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::payloads::{blob, png, sha256};
use base64::Engine;
use butler::config::Config;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A config whose workspaces (and so the web file store) are inside the test's temp dir.
fn media_config(llm: &FakeLlm) -> (Config, tempfile::TempDir) {
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.tools.workspace_dir = dir.path().join("ws").display().to_string();
    (cfg, dir)
}

fn store_dir(cfg: &Config) -> PathBuf {
    Path::new(&cfg.tools.workspace_dir).join(".web-files")
}

/// Uploads `bytes` as `name`; the status and the JSON answer.
async fn upload(
    app: &TestApp,
    name: &str,
    mime: &str,
    bytes: Vec<u8>,
    user: &str,
    token: Option<&str>,
) -> (u16, Value) {
    let url = app.url(&format!("/api/v1/files?user={user}&name={}", urlencode(name)));
    let mut req = app.http.post(url).header("content-type", mime).body(bytes);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let r = req.send().await.expect("upload");
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

async fn post(app: &TestApp, body: Value, token: Option<&str>) -> (u16, Value) {
    let mut req = app.http.post(app.url("/api/v1/messages")).json(&body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let r = req.send().await.expect("post");
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// Every file under `dir`, recursively (paths relative to it).
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uploads_named_in_a_message_reach_the_model_as_an_image_and_as_text() {
    let llm = FakeLlm::start().await;
    llm.set_default(Reply::text("A gradient and two months."));
    let (cfg, dir) = media_config(&llm);
    let app = TestApp::start(cfg.clone(), Some(dir)).await;

    let picture = png(3000, 2000);
    let (status, photo) = upload(&app, "../../holiday.png", "image/png", picture.clone(), "local", None).await;
    assert_eq!(status, 201, "{photo}");
    assert_eq!((photo["name"].as_str(), photo["size"].as_u64()), (Some("holiday.png"), Some(picture.len() as u64)));
    // A CSV the browser calls a PNG: sniffed, not trusted.
    let csv = "month,revenue\njan,1200\nfeb,1350\n";
    let (status, table) = upload(&app, "revenue.csv", "image/png", csv.as_bytes().to_vec(), "local", None).await;
    assert_eq!(status, 201, "{table}");

    let body =
        json!({"conversation": "c1", "user": "local", "text": "what are these?", "files": [photo["id"], table["id"]]});
    let (status, answer) = post(&app, body, None).await;
    assert_eq!(status, 202, "{answer}");
    let replies = app.wait_replies("c1", 1, 30).await;
    assert_eq!(replies[0]["text"], "A gradient and two months.");

    let req = llm.last_request().expect("the model was asked");
    let images = req.images();
    assert_eq!(images.len(), 1, "the PNG is an image, the CSV is not");
    assert!(images[0].starts_with("data:image/"), "an image_url data part");
    let b64 = images[0].rsplit(',').next().unwrap();
    let img = image::load_from_memory(&base64::engine::general_purpose::STANDARD.decode(b64).unwrap()).unwrap();
    assert!(img.width().max(img.height()) <= 1568, "shrunk: {}x{}", img.width(), img.height());
    let text = req.last_user_text();
    assert!(text.contains("what are these?") && text.contains("feb,1350"), "{text}");

    // The page shows the files under the text.
    let mine = app.messages("c1").await;
    let shown = mine.iter().find(|m| m["role"] == "user").unwrap()["text"].as_str().unwrap().to_string();
    assert!(shown.starts_with("what are these?\n📎 holiday.png (") && shown.contains("📎 revenue.csv ("), "{shown}");
    // Copied into the user's workspace, under media/: the sender's path went nowhere.
    let saved = files_under(Path::new(&app.config.tools.workspace_dir));
    assert!(saved.iter().any(|f| f.contains("/media/") && f.ends_with("holiday.png")), "{saved:?}");
    assert!(saved.iter().all(|f| !f.ends_with("holiday.png") || f.contains("/media/")), "{saved:?}");
    app.stop().await;
}

/// Sends a raw request head (and `body` pieces, ignoring a connection the server closed) and
/// returns the status and JSON body of the answer.
async fn raw(app: &TestApp, head: &str, pieces: &[Vec<u8>]) -> (u16, Value) {
    let mut s = tokio::net::TcpStream::connect(app.base.trim_start_matches("http://")).await.unwrap();
    s.write_all(head.as_bytes()).await.unwrap();
    for p in pieces {
        if s.write_all(p).await.is_err() {
            break;
        }
    }
    let mut got = Vec::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), s.read_to_end(&mut got)).await;
    let text = String::from_utf8_lossy(&got).to_string();
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
    let body = body.trim_start_matches(|c: char| c.is_ascii_hexdigit()).trim();
    let json = body.find('{').and_then(|i| serde_json::Deserializer::from_str(&body[i..]).into_iter().next());
    (status, json.and_then(Result::ok).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn files_over_the_cap_and_bad_requests_are_refused_and_change_nothing() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = media_config(&llm);
    cfg.media.max_bytes = 1024 * 1024;
    let app = TestApp::start(cfg.clone(), Some(dir)).await;
    let path = "/api/v1/files?user=local&name=big.bin";
    let port = app.app.addr.unwrap().port();

    // Declared over the cap: refused at once; no byte of the body was ever sent.
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost:{port}\r\nContent-Type: application/octet-stream\r\nContent-Length: 5242880\r\n\r\n"
    );
    let (status, body) = raw(&app, &head, &[]).await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["error"]["code"], "file_too_large", "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("1.0 MB limit ([media] max_bytes)"), "{body}");
    // Streamed without a length: stopped once it passes the cap (64 KB pieces, 2 MB in all).
    let head = format!("POST {path} HTTP/1.1\r\nHost: localhost:{port}\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
    let piece = blob(b"", 64 * 1024);
    let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
    chunk.extend_from_slice(&piece);
    chunk.extend_from_slice(b"\r\n");
    let (status, body) = raw(&app, &head, &vec![chunk; 32]).await;
    assert_eq!((status, body["error"]["code"].as_str()), (413, Some("file_too_large")), "{body}");
    assert!(files_under(&store_dir(&cfg)).is_empty(), "nothing kept: {:?}", files_under(&store_dir(&cfg)));

    // Messages naming files they may not: (files, status, code).
    let (_, bobs) = upload(&app, "bob.txt", "text/plain", b"bob's notes".to_vec(), "bob", None).await;
    let eleven: Vec<Value> = (0..11).map(|_| bobs["id"].clone()).collect();
    let cases = [
        (json!(["0123456789abcdef0123456789abcdef"]), 422, "unknown_file"),
        (json!(["../../etc/passwd"]), 422, "unknown_file"),
        (json!([bobs["id"]]), 422, "unknown_file"),
        (json!(eleven), 422, "too_many_files"),
    ];
    for (files, want, code) in cases {
        let body = json!({"conversation": "c2", "user": "local", "text": "", "files": files});
        let (status, answer) = post(&app, body, None).await;
        assert_eq!((status, answer["error"]["code"].as_str()), (want, Some(code)), "{files}: {answer}");
    }
    assert!(app.messages("c2").await.is_empty(), "no message was stored");
    // Reading: a made-up id, a path, a wrong shape.
    for id in ["0123456789abcdef0123456789abcdef", "..%2F..%2Fbutler.db", "x"] {
        let r = app.http.get(app.url(&format!("/api/v1/files/{id}"))).send().await.unwrap();
        assert_eq!(r.status(), 404, "{id}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], "unknown_file", "{id}: {v}");
    }
    app.stop().await;
}

/// The user id behind web user `local` (their workspace is `<workspace_dir>/<id>`).
async fn local_user_id(cfg: &Config) -> String {
    use sqlx::Connection;
    let mut db = sqlx::SqliteConnection::connect(cfg.database.url.expose()).await.unwrap();
    let row: (String,) =
        sqlx::query_as("SELECT user_id FROM identities WHERE channel = 'web' AND platform_user_id = 'local'")
            .fetch_one(&mut db)
            .await
            .unwrap();
    row.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn send_file_in_the_web_chat_links_the_exact_bytes_once_across_a_redelivery() {
    let llm = FakeLlm::start().await;
    llm.set_default(Reply::text("Hello."));
    // The data dir outlives the restart.
    let (cfg, _dir) = media_config(&llm);
    let mut app = TestApp::start(cfg.clone(), None).await;
    assert_eq!(app.post("c3", "local", "hi").await.0, 202);
    app.wait_replies("c3", 1, 30).await;
    let workspace = Path::new(&cfg.tools.workspace_dir).join(local_user_id(&cfg).await);
    let report = [b"%PDF-1.4\n".as_slice(), &blob(b"", 200_000)].concat();
    std::fs::create_dir_all(workspace.join("out")).unwrap();
    std::fs::write(workspace.join("out/q3.pdf"), &report).unwrap();

    llm.on("send me the report", Reply::tool_call("send_file", json!({"path": "out/q3.pdf", "caption": "Q3 report"})));
    llm.on("send me the report", Reply::text("Here it is."));
    assert_eq!(app.post("c3", "local", "send me the report").await.0, 202);
    let replies = app.wait_replies("c3", 3, 30).await;
    let texts: Vec<String> = replies.iter().map(|m| m["text"].as_str().unwrap().to_string()).collect();
    let with_file: Vec<&String> = texts.iter().filter(|t| t.contains("📎")).collect();
    assert_eq!(with_file.len(), 1, "{texts:?}");
    assert!(with_file[0].starts_with("Q3 report\n\n📎 [q3.pdf](/api/v1/files/"), "{}", with_file[0]);

    // A crash after the page got the file but before the outbox recorded it: delivered again.
    let db = cfg.database.url.expose().to_string();
    app.stop().await;
    {
        use sqlx::Connection;
        let mut conn = sqlx::SqliteConnection::connect(&db).await.unwrap();
        let n = sqlx::query(
            "UPDATE outbox SET status = 'pending', platform_ids = '[]', next_attempt_ms = 0 WHERE file IS NOT NULL",
        )
        .execute(&mut conn)
        .await
        .unwrap()
        .rows_affected();
        assert_eq!(n, 1, "the file's outbox row");
    }
    app = TestApp::start(cfg.clone(), None).await;
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let again: Vec<String> =
        app.wait_replies("c3", 3, 10).await.iter().map(|m| m["text"].as_str().unwrap().to_string()).collect();
    assert_eq!(again, texts, "the same messages, the file once");

    let id = with_file[0].split("/api/v1/files/").nth(1).unwrap().split(')').next().unwrap();
    let r = app.http.get(app.url(&format!("/api/v1/files/{id}"))).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let h = |n: &str| r.headers().get(n).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    assert_eq!(h("content-type"), "application/octet-stream", "never a type the browser would run");
    assert_eq!(h("content-disposition"), "attachment; filename=\"q3.pdf\"");
    assert_eq!(h("x-content-type-options"), "nosniff");
    assert_eq!(sha256(&r.bytes().await.unwrap()), sha256(&report), "the exact bytes");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_tokens_a_file_is_seen_and_sent_only_by_its_owner() {
    let llm = FakeLlm::start().await;
    llm.set_default(Reply::text("Seen."));
    let (mut cfg, dir) = media_config(&llm);
    for (user, token) in [("alice", "token-alice-0123456789"), ("bob", "token-bob-0123456789")] {
        cfg.channels.web.tokens.insert(user.into(), butler::config::Secret::new(token.to_string()));
    }
    cfg.access.owners = vec!["web:alice".parse().unwrap()];
    let app = TestApp::start(cfg, Some(dir)).await;
    let (alice, bob) = (Some("token-alice-0123456789"), Some("token-bob-0123456789"));
    let (status, file) = upload(&app, "notes.txt", "text/plain", b"alice's secret plan".to_vec(), "alice", alice).await;
    assert_eq!(status, 201, "{file}");
    let (status, _) = upload(&app, "x.txt", "text/plain", b"x".to_vec(), "alice", None).await;
    assert_eq!(status, 401, "no token, no upload");

    // (who reads, status)
    for (token, want) in [(alice, 200), (bob, 404), (None, 401)] {
        let mut req = app.http.get(app.url(&format!("/api/v1/files/{}", file["id"].as_str().unwrap())));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        assert_eq!(req.send().await.unwrap().status(), want, "{token:?}");
    }
    let (status, answer) = post(&app, json!({"conversation": "b1", "text": "read", "files": [file["id"]]}), bob).await;
    assert_eq!((status, answer["error"]["code"].as_str()), (422, Some("unknown_file")), "{answer}");
    let (status, _) =
        post(&app, json!({"conversation": "a1", "text": "read this", "files": [file["id"]]}), alice).await;
    assert_eq!(status, 202);
    let r = app.http.get(app.url("/api/v1/conversations/a1/messages")).bearer_auth("token-alice-0123456789");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while llm.last_request().is_none() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(llm.last_request().unwrap().last_user_text().contains("alice's secret plan"));
    assert_eq!(r.send().await.unwrap().status(), 200);
    app.stop().await;
}
