//! Approvals show what will happen (issue 30, point 5) on the web chat: the message the page
//! gets (`GET /api/v1/conversations/{id}/messages`) carries the summary and, in a code block, the
//! whole detail (snapshots: the content of a write, the diff of an edit, the whole command and
//! its folder, the request with its Authorization masked, the MCP call's arguments), never a
//! secret. A long detail is there whole too: the page folds it behind "Show all", so no file
//! is sent; once answered, the message keeps only the summary.

use crate::support::app::{config, TestApp};
use crate::support::approval_detail::{
    assert_no_secret, long_text, mcp_tool, script, seed, stable, tools_config, ASK, ASK_LONG,
};
use crate::support::fake_llm::FakeLlm;
use crate::{approval_id, click, request_in, wait_for};
use butler::channel::Identity;
use serde_json::Value;

/// The text of the five requests, in call order (`<workspace>` for the workspace).
const SNAPSHOTS: [&str; 5] = [
    "🔐 **Approval needed**: Butler wants to write 32 bytes to notes/groceries.md.\n```\n# Groceries\n\n- oat milk\n- bread\n```\nAsked by local; this request expires in 10 minutes.",
    "🔐 **Approval needed**: Butler wants to edit todo.md: replace \"- call mum\" with \"- call mum and dad\".\n```diff\n--- a/todo.md\n+++ b/todo.md\n@@ -1,3 +1,3 @@\n - buy milk\n-- call mum\n+- call mum and dad\n - water the plants\n```\nAsked by local; this request expires in 10 minutes.",
    "🔐 **Approval needed**: Butler wants to run `cd notes && grep -c milk *.md | sort -r > counts.txt` in your workspace.\n```sh\n# in <workspace>\ncd notes && grep -c milk *.md | sort -r > counts.txt\n```\nAsked by local; this request expires in 10 minutes.",
    "🔐 **Approval needed**: Butler wants to POST https://api.example.com/v1/issues?api_key=*** with headers Authorization, Content-Type and a 34-byte body.\n```http\nPOST https://api.example.com/v1/issues?api_key=***\nAuthorization: ***\nContent-Type: application/json\n\n{\n  \"title\": \"Milk\",\n  \"token\": \"***\"\n}\n```\nAsked by local; this request expires in 10 minutes.",
    "🔐 **Approval needed**: Butler wants to use `create_issue` of MCP server `tracker`.\n```json\n{\n  \"api_token\": \"***\",\n  \"labels\": [\n    \"bug\"\n  ],\n  \"title\": \"Login <fails>\"\n}\n```\nAsked by local; this request expires in 10 minutes.",
];

fn requests(msgs: &[Value]) -> Vec<&Value> {
    msgs.iter()
        .filter(|m| {
            m["buttons"]
                .as_array()
                .is_some_and(|b| b.iter().any(|b| b["action"].as_str().unwrap_or("").starts_with("ap:")))
        })
        .collect()
}

#[tokio::test]
async fn each_request_shows_what_the_call_would_do() {
    let llm = FakeLlm::start().await;
    let workspaces = tempfile::tempdir().unwrap();
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    tools_config(&mut cfg, workspaces.path());
    let (mcp, server) = mcp_tool();
    let app = TestApp::start_with(cfg, Some(dir), vec![mcp]).await;
    let ws = seed(&app.app.store, &Identity::new("web", "local"), workspaces.path()).await;
    script(&llm);
    app.post("d1", "local", ASK).await;
    let msgs = wait_for(&app, "d1", "five approval requests", |m| requests(m).len() == 5).await;
    let shown: Vec<String> = requests(&msgs).iter().map(|m| stable(m["text"].as_str().unwrap(), &ws)).collect();
    assert_eq!(shown, SNAPSHOTS);
    for m in &msgs {
        assert_no_secret(&m.to_string());
    }
    app.stop().await;
    server.stop().await;
}

#[tokio::test]
async fn a_long_write_is_all_in_the_message_and_the_answer_keeps_the_summary() {
    let llm = FakeLlm::start().await;
    let workspaces = tempfile::tempdir().unwrap();
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    tools_config(&mut cfg, workspaces.path());
    let app = TestApp::start_with(cfg, Some(dir), vec![]).await;
    seed(&app.app.store, &Identity::new("web", "local"), workspaces.path()).await;
    script(&llm);
    app.post("d2", "local", ASK_LONG).await;
    let msgs = wait_for(&app, "d2", "the request", |m| request_in(m).is_some()).await;
    let request = request_in(&msgs).unwrap().clone();
    let text = request["text"].as_str().unwrap();
    assert!(text.contains(&format!("```\n{}```\n", long_text())), "the whole content: {text}");
    assert!(!text.contains("more lines") && !msgs.iter().any(|m| m["text"].as_str().unwrap_or("").contains("📎")));
    let id = approval_id(&request);
    assert_eq!(click(&app, "d2", "local", &format!("ap:{id}:deny")).await, 202);
    let msgs = wait_for(&app, "d2", "the outcome", |m| {
        m.iter().any(|m| m["id"] == request["id"] && m["text"].as_str().unwrap().starts_with("🚫"))
    })
    .await;
    let outcome = msgs.iter().find(|m| m["id"] == request["id"]).unwrap();
    assert_eq!(outcome["text"], "🚫 Denied by local: write 5692 bytes to long.md.");
    app.stop().await;
}
