//! Approvals show what will happen (issue 30, point 5) on Discord: each request carries what the
//! call would do in a code block under its summary (snapshots of the content Butler posted: the
//! content of a write, the diff of an edit, the whole command and its folder, the request with
//! its Authorization masked, the MCP call's arguments), never a secret; on Discord's 2,000
//! characters a long diff is cut and attached whole.

use crate::support::approval_detail::{
    assert_no_secret, long_text, mcp_tool, script, seed, stable, tools_config, ASK, ASK_LONG,
};
use crate::support::fake_discord::FakeDiscord;
use crate::{alice, Rig, ALICE, DM};
use butler::channel::Identity;

/// What Discord received for the five requests, in call order (`<workspace>` for the workspace).
const SNAPSHOTS: [&str; 5] = [
    "🔐 **Approval needed**: Butler wants to write 32 bytes to notes/groceries.md.\n```\n# Groceries\n\n- oat milk\n- bread\n```\nAsked by alice; this request expires in 10 minutes.",
    "🔐 **Approval needed**: Butler wants to edit todo.md: replace \"- call mum\" with \"- call mum and dad\".\n```diff\n--- a/todo.md\n+++ b/todo.md\n@@ -1,3 +1,3 @@\n - buy milk\n-- call mum\n+- call mum and dad\n - water the plants\n```\nAsked by alice; this request expires in 10 minutes.",
    "🔐 **Approval needed**: Butler wants to run `cd notes && grep -c milk *.md | sort -r > counts.txt` in your workspace.\n```sh\n# in <workspace>\ncd notes && grep -c milk *.md | sort -r > counts.txt\n```\nAsked by alice; this request expires in 10 minutes.",
    "🔐 **Approval needed**: Butler wants to POST https://api.example.com/v1/issues?api_key=*** with headers Authorization, Content-Type and a 34-byte body.\n```http\nPOST https://api.example.com/v1/issues?api_key=***\nAuthorization: ***\nContent-Type: application/json\n\n{\n  \"title\": \"Milk\",\n  \"token\": \"***\"\n}\n```\nAsked by alice; this request expires in 10 minutes.",
    "🔐 **Approval needed**: Butler wants to use `create_issue` of MCP server `tracker`.\n```json\n{\n  \"api_token\": \"***\",\n  \"labels\": [\n    \"bug\"\n  ],\n  \"title\": \"Login <fails>\"\n}\n```\nAsked by alice; this request expires in 10 minutes.",
];

#[tokio::test]
async fn each_request_shows_what_the_call_would_do() {
    let workspaces = tempfile::tempdir().unwrap();
    let (mcp, server) = mcp_tool();
    let root = workspaces.path().to_path_buf();
    let rig = Rig::start_on(FakeDiscord::start().await, vec![mcp], move |cfg| tools_config(cfg, &root)).await;
    let ws = seed(&rig.app.app.store, &Identity::new("discord", ALICE), workspaces.path()).await;
    script(&rig.llm);
    rig.dm(&alice(), ASK);
    let requests = rig
        .discord
        .wait_for(30, "five approval requests", |f| {
            let asking: Vec<_> =
                f.bot_messages(DM).into_iter().filter(|m| m.buttons().iter().any(|b| b.starts_with("ap:"))).collect();
            (asking.len() == 5).then_some(asking)
        })
        .await;
    let shown: Vec<String> = requests.iter().map(|m| stable(&m.content, &ws)).collect();
    assert_eq!(shown, SNAPSHOTS);
    for m in rig.discord.bot_messages(DM) {
        assert_no_secret(&m.content);
        assert!(m.files.is_empty(), "every detail fits: no file");
    }
    rig.stop().await;
    server.stop().await;
}

#[tokio::test]
async fn a_long_write_is_cut_within_two_thousand_characters_and_attached_whole() {
    let workspaces = tempfile::tempdir().unwrap();
    let root = workspaces.path().to_path_buf();
    let rig = Rig::start_on(FakeDiscord::start().await, vec![], move |cfg| tools_config(cfg, &root)).await;
    seed(&rig.app.app.store, &Identity::new("discord", ALICE), workspaces.path()).await;
    script(&rig.llm);
    rig.dm(&alice(), ASK_LONG);
    let (request, attached) = rig
        .discord
        .wait_for(30, "the request and its file", |f| {
            let mine = f.bot_messages(DM);
            let request = mine.iter().find(|m| m.buttons().iter().any(|b| b.starts_with("ap:")))?.clone();
            let attached = mine.iter().find(|m| !m.files.is_empty())?.clone();
            Some((request, attached))
        })
        .await;
    assert!(request.content.encode_utf16().count() <= 2_000, "{}", request.content.len());
    let first: String = long_text().lines().take(30).collect::<Vec<_>>().join("\n");
    assert!(request.content.contains(&format!("```\n{first}\n```\n_… 170 more lines: the whole content is in")));
    assert!(!request.content.contains("31. a line"), "{}", request.content);
    let file = &attached.files[0];
    assert!(request.content.contains(&file.filename), "the request names {}", file.filename);
    assert_eq!(file.bytes.as_ref(), long_text().as_bytes(), "the whole content");
    assert_eq!(attached.content, "📎 The whole content of the approval request above (200 lines).");
    rig.stop().await;
}
