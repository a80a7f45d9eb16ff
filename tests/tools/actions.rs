//! What each tool says it would do, before it runs: the plain-words summary a person approves
//! (secrets masked), absolute paths resolved lexically against the workspace, the command, the
//! URL, and the detail shown under the summary (the content of a write, the diff of an edit, the
//! whole command and its folder, the whole request; secrets masked there too).

use crate::{pick, Harness};
use butler::config::{FilesConfig, HttpRequestConfig, SendMessageConfig, ShellConfig, WebFetchConfig};
use butler::tools::builtin::{file_tools, http_tools, SendMessage, Shell, WebFetch};
use butler::tools::{Action, Detail, DetailKind, Tool};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

fn all_tools() -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(WebFetch::new(&WebFetchConfig::default()).unwrap()),
        Arc::new(Shell::new(&ShellConfig { enabled: true, ..ShellConfig::default() })),
        Arc::new(SendMessage::new(&SendMessageConfig { targets: vec!["telegram:-100123".parse().unwrap()] })),
    ];
    let http = HttpRequestConfig { allowed_hosts: vec!["api.example.com".into()], ..HttpRequestConfig::default() };
    tools.extend(http_tools(&http, Default::default()).unwrap());
    tools.extend(file_tools(&FilesConfig::default(), 0));
    tools
}

/// A command longer than a summary shows: the detail has it whole, with its lines.
const LOOP: &str =
    "for f in *.md; do\n  wc -l \"$f\"\ndone && echo 'counted every markdown file in this folder and all of its sub-folders, one by one'";

/// (tool, args, summary, paths, command, url, detail)
type Case =
    (&'static str, serde_json::Value, String, Vec<PathBuf>, Option<&'static str>, Option<&'static str>, Option<Detail>);

#[tokio::test]
async fn every_tool_describes_its_call() {
    let h = Harness::new().await;
    let tools = all_tools();
    let ws = h.ctx.workspace.clone();
    assert!(ws.is_absolute());
    let at = |rel: &str| vec![ws.join(rel)];
    let body = r#"{"token":"t-123","n":1}"#;
    let long = "x".repeat(120);
    let (content, diff, command, request) =
        (DetailKind::Content, DetailKind::Diff, DetailKind::Command, DetailKind::Request);
    let d = |kind: DetailKind, text: &str| Some(Detail::new(kind, text));
    let folder = format!("# in {}", ws.display());
    let cases: Vec<Case> = vec![
        (
            "web_fetch",
            json!({"url": "https://example.com/a?api_key=zz&q=1"}),
            "fetch https://example.com/a?api_key=***&q=1 (read only)".into(),
            vec![],
            None,
            Some("https://example.com/a?api_key=zz&q=1"),
            None,
        ),
        (
            "http_get",
            json!({"url": "https://api.example.com/x", "headers": {"Authorization": "Bearer abc", "Accept": "text/plain"}}),
            "GET https://api.example.com/x with headers Accept, Authorization".into(),
            vec![],
            None,
            Some("https://api.example.com/x"),
            d(request, "GET https://api.example.com/x\nAccept: text/plain\nAuthorization: ***\n"),
        ),
        (
            "http_request",
            json!({"method": "POST", "url": "https://api.example.com/x", "headers": {"X-Custom": "Bearer sk-1"}, "body": body}),
            format!("POST https://api.example.com/x with headers X-Custom and a {}-byte body", body.len()),
            vec![],
            None,
            Some("https://api.example.com/x"),
            d(
                request,
                "POST https://api.example.com/x\nX-Custom: Bearer ***\n\n{\n  \"n\": 1,\n  \"token\": \"***\"\n}",
            ),
        ),
        (
            "http_request",
            json!({"method": "delete", "url": "https://bob:pw@api.example.com/items/7", "body": "password=hunter2&x=1"}),
            "DELETE https://bob:***@api.example.com/items/7 and a 20-byte body".into(),
            vec![],
            None,
            Some("https://bob:pw@api.example.com/items/7"),
            d(request, "DELETE https://bob:***@api.example.com/items/7\n\npassword=***&x=1"),
        ),
        (
            "shell",
            json!({"command": "ls -la"}),
            "run `ls -la` in your workspace".into(),
            at(""),
            Some("ls -la"),
            None,
            d(command, &format!("{folder}\nls -la")),
        ),
        (
            "shell",
            json!({"command": LOOP}),
            format!("run `{}…` in your workspace", &LOOP.replace('\n', " ")[..100]),
            at(""),
            Some(LOOP),
            None,
            d(command, &format!("{folder}\n{LOOP}")),
        ),
        (
            "shell",
            json!({"command": "curl -H 'Authorization: Bearer abc' https://x"}),
            "run `curl -H 'Authorization: Bearer ***' https://x` in your workspace".into(),
            at(""),
            Some("curl -H 'Authorization: Bearer abc' https://x"),
            None,
            d(command, &format!("{folder}\ncurl -H 'Authorization: Bearer ***' https://x")),
        ),
        (
            "file_read",
            json!({"path": "notes/todo.md"}),
            "read notes/todo.md from your workspace".into(),
            at("notes/todo.md"),
            None,
            None,
            None,
        ),
        (
            "file_read",
            json!({"path": "../other/x"}),
            "read ../other/x from your workspace".into(),
            vec![ws.parent().unwrap().join("other/x")],
            None,
            None,
            None,
        ),
        (
            "file_read",
            json!({"path": "/etc/passwd"}),
            "read /etc/passwd from your workspace".into(),
            vec![PathBuf::from("/etc/passwd")],
            None,
            None,
            None,
        ),
        ("file_list", json!({}), "list the files in your workspace".into(), at(""), None, None, None),
        (
            "file_list",
            json!({"path": "notes/"}),
            "list the files in notes/ of your workspace".into(),
            at("notes"),
            None,
            None,
            None,
        ),
        (
            "file_write",
            json!({"path": "notes/./todo.md", "content": long}),
            "write 120 bytes to notes/./todo.md".into(),
            at("notes/todo.md"),
            None,
            None,
            d(content, &long),
        ),
        (
            "file_edit",
            json!({"path": "a.txt", "old": "foo", "new": "bar"}),
            "edit a.txt: replace \"foo\" with \"bar\"".into(),
            at("a.txt"),
            None,
            None,
            d(diff, "--- a/a.txt\n+++ b/a.txt\n-foo\n+bar\n"),
        ),
        (
            "file_edit",
            json!({"path": "a.txt", "old": "x", "new": "y", "replace_all": true}),
            "edit a.txt: replace every \"x\" with \"y\"".into(),
            at("a.txt"),
            None,
            None,
            d(diff, "--- a/a.txt\n+++ b/a.txt\n-x\n+y\n"),
        ),
        (
            "send_message",
            json!({"to": "telegram:-100123", "text": "Deploy done\nall green"}),
            "send a message to telegram:-100123: \"Deploy done all green\"".into(),
            vec![],
            None,
            None,
            None,
        ),
    ];
    for (name, args, summary, paths, command, url, detail) in cases {
        let want = Action {
            summary,
            paths: paths.into_iter().map(|p| PathBuf::from(p.to_string_lossy().trim_end_matches('/'))).collect(),
            command: command.map(str::to_string),
            url: url.map(str::to_string),
            detail,
        };
        let got = pick(&tools, name).action(&h.ctx, &args);
        assert_eq!(got, want, "{name} {args}");
        assert!(got.paths.iter().all(|p| p.is_absolute()), "{name}");
    }
}

#[test]
fn specs() {
    // (name, read_only, required args)
    let table = [
        ("web_fetch", true, vec!["url"]),
        ("http_get", true, vec!["url"]),
        ("http_request", false, vec!["method", "url"]),
        ("shell", false, vec!["command"]),
        ("file_read", true, vec!["path"]),
        ("file_list", true, vec![]),
        ("file_write", false, vec!["path", "content"]),
        ("file_edit", false, vec!["path", "old", "new"]),
        ("send_message", false, vec!["to", "text"]),
    ];
    let tools = all_tools();
    assert_eq!(tools.len(), table.len());
    for (name, read_only, required) in table {
        let spec = pick(&tools, name).spec().clone();
        assert_eq!(spec.read_only, read_only, "{name}");
        let got: Vec<&str> = spec.parameters["required"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        assert_eq!(got, required, "{name}");
        assert_eq!(spec.parameters["additionalProperties"], json!(false), "{name}");
    }
}

/// One list of secret words ([`butler::config::SECRET_WORDS`]) serves every masking of the tools:
/// JSON arguments, shell flags and `key=value` pairs, request headers and bodies. A word missing
/// from one of them (two lists again) shows the fake secret.
#[tokio::test]
async fn every_secret_word_is_masked_in_every_summary() {
    let h = Harness::new().await;
    let tools = all_tools();
    let secret = "s3cr3t-value";
    assert!(!butler::config::SECRET_WORDS.is_empty());
    for word in butler::config::SECRET_WORDS {
        let upper = word.to_ascii_uppercase();
        let cases = [
            ("shell", json!({"command": format!("run --{word}={secret} x")})),
            ("shell", json!({"command": format!("run --{word} {secret} x")})),
            ("shell", json!({"command": format!("{upper}={secret} ./run")})),
            ("http_get", json!({"url": "https://api.example.com/x", "headers": {format!("X-{word}"): secret}})),
            ("http_get", json!({"url": format!("https://api.example.com/x?{word}={secret}")})),
            (
                "http_request",
                json!({"method": "POST", "url": "https://api.example.com/x", "body": format!("{word}={secret}&n=1")}),
            ),
            (
                "http_request",
                json!({"method": "POST", "url": "https://api.example.com/x", "body": json!({ *word: secret }).to_string()}),
            ),
        ];
        let written = [format!("{upper}={secret}\n"), format!("{word}: {secret}\n"), format!("x --{word} {secret}\n")];
        let files = written.iter().flat_map(|text| {
            [
                ("file_write", json!({"path": "a.env", "content": text})),
                ("file_edit", json!({"path": "a.env", "old": "x", "new": text})),
            ]
        });
        for (name, args) in cases.into_iter().chain(files) {
            let action = pick(&tools, name).action(&h.ctx, &args);
            let detail = action.detail.map(|d| d.text).unwrap_or_default();
            assert!(!action.summary.contains(secret), "{word}: {name} {args} -> {}", action.summary);
            assert!(!detail.contains(secret), "{word}: {name} {args} -> detail {detail}");
        }
        let pretty =
            butler::tools::masked_pretty(&json!({ format!("my_{word}"): secret, "note": format!("Bearer {secret}") }));
        assert!(!pretty.contains(secret) && pretty.contains("Bearer ***"), "{word}: {pretty}");
        let masked =
            butler::tools::mask_secrets(&json!({ "outer": { format!("my_{word}"): secret }, "plain": "shown" }));
        assert!(!masked.contains(secret) && masked.contains("shown"), "{word}: {masked}");
    }
}
