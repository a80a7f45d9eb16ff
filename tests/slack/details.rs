//! Approvals show what will happen (issue 30, point 5) on Slack: each request carries what the
//! call would do in a code block under its summary (snapshots of the mrkdwn sections Butler
//! posted: the content of a write, the diff of an edit, the whole command and its folder, the
//! request with its Authorization masked, the MCP call's arguments), never a secret.

use crate::support::approval_detail::{assert_no_secret, mcp_tool, script, seed, stable, tools_config, ASK};
use crate::support::fake_slack::payloads as p;
use crate::{start, Setup, OWNER};
use butler::channel::Identity;

/// What Slack shows for the five requests, in call order (`<workspace>` for the workspace).
const SNAPSHOTS: [&str; 5] = [
    "🔐 *Approval needed*: Butler wants to write 32 bytes to notes/groceries.md.\n```\n# Groceries\n\n- oat milk\n- bread\n```\nAsked by Owen; this request expires in 10 minutes.",
    "🔐 *Approval needed*: Butler wants to edit todo.md: replace \"- call mum\" with \"- call mum and dad\".\n```\n--- a/todo.md\n+++ b/todo.md\n@@ -1,3 +1,3 @@\n - buy milk\n-- call mum\n+- call mum and dad\n - water the plants\n```\nAsked by Owen; this request expires in 10 minutes.",
    "🔐 *Approval needed*: Butler wants to run `cd notes &amp;&amp; grep -c milk *.md | sort -r &gt; counts.txt` in your workspace.\n```\n# in <workspace>\ncd notes &amp;&amp; grep -c milk *.md | sort -r &gt; counts.txt\n```\nAsked by Owen; this request expires in 10 minutes.",
    "🔐 *Approval needed*: Butler wants to POST https://api.example.com/v1/issues?api_key=*** with headers Authorization, Content-Type and a 34-byte body.\n```\nPOST https://api.example.com/v1/issues?api_key=***\nAuthorization: ***\nContent-Type: application/json\n\n{\n  \"title\": \"Milk\",\n  \"token\": \"***\"\n}\n```\nAsked by Owen; this request expires in 10 minutes.",
    "🔐 *Approval needed*: Butler wants to use `create_issue` of MCP server `tracker`.\n```\n{\n  \"api_token\": \"***\",\n  \"labels\": [\n    \"bug\"\n  ],\n  \"title\": \"Login &lt;fails&gt;\"\n}\n```\nAsked by Owen; this request expires in 10 minutes.",
];

#[tokio::test]
async fn each_request_shows_what_the_call_would_do() {
    let workspaces = tempfile::tempdir().unwrap();
    let (mcp, server) = mcp_tool();
    let root = workspaces.path().to_path_buf();
    let setup =
        Setup { tweak: Some(Box::new(move |cfg| tools_config(cfg, &root))), tools: vec![mcp], ..Setup::default() };
    let rig = start(setup).await;
    let ws = seed(&rig.app.app.store, &Identity::new("slack", OWNER), workspaces.path()).await;
    script(&rig.llm);
    let ts = p::ts();
    rig.send.event(&p::callback(&p::event_id(), p::message(OWNER, "DOWNER", "im", ASK, &ts, None)), None).await;
    let asking = |m: &crate::support::fake_slack::Posted| m.buttons.iter().any(|b| b.1.starts_with("ap:"));
    rig.slack
        .wait(30, "five approval requests", |f| f.messages("DOWNER").iter().filter(|m| asking(m)).count() == 5)
        .await;
    let posted = rig.slack.messages("DOWNER");
    let requests: Vec<String> = posted.iter().filter(|m| asking(m)).map(|m| stable(&m.shown(), &ws)).collect();
    assert_eq!(requests, SNAPSHOTS);
    for m in &posted {
        assert_no_secret(&m.text);
        assert_no_secret(&m.blocks.to_string());
    }
    assert!(rig.slack.shared_files().is_empty(), "every detail fits: no file");
    rig.app.stop().await;
    server.stop().await;
}
