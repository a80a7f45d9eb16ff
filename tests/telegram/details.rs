//! Approvals show what will happen (issue 30, point 5) on Telegram: each request carries what
//! the call would do in a code block under its summary (snapshots of the HTML Butler sent: the
//! content of a write, the diff of an edit, the whole command and its folder, the request with
//! its Authorization masked, the MCP call's arguments), never a secret; a detail longer than a
//! chat message shows is cut ("… N more lines") and sent whole as a document right after the
//! request, which stays editable: answered, it shows the outcome and loses its buttons.

use crate::support::approval_detail::{
    assert_no_secret, long_text, mcp_tool, script, seed, stable, tools_config, ASK, ASK_LONG,
};
use crate::support::fake_telegram::updates::{callback, dm, user};
use crate::{Tg, OWNER};
use butler::channel::Identity;

/// What Telegram received for the five requests, in call order (HTML, `<workspace>` for the
/// person's workspace).
const SNAPSHOTS: [&str; 5] = [
    "🔐 <b>Approval needed</b>: Butler wants to write 32 bytes to notes/groceries.md.\n<pre># Groceries\n\n- oat milk\n- bread</pre>\nAsked by U111; this request expires in 10 minutes.",
    "🔐 <b>Approval needed</b>: Butler wants to edit todo.md: replace &quot;- call mum&quot; with &quot;- call mum and dad&quot;.\n<pre><code class=\"language-diff\">--- a/todo.md\n+++ b/todo.md\n@@ -1,3 +1,3 @@\n - buy milk\n-- call mum\n+- call mum and dad\n - water the plants</code></pre>\nAsked by U111; this request expires in 10 minutes.",
    "🔐 <b>Approval needed</b>: Butler wants to run <code>cd notes &amp;&amp; grep -c milk *.md | sort -r &gt; counts.txt</code> in your workspace.\n<pre><code class=\"language-sh\"># in <workspace>\ncd notes &amp;&amp; grep -c milk *.md | sort -r &gt; counts.txt</code></pre>\nAsked by U111; this request expires in 10 minutes.",
    "🔐 <b>Approval needed</b>: Butler wants to POST https://api.example.com/v1/issues?api_key=*** with headers Authorization, Content-Type and a 34-byte body.\n<pre><code class=\"language-http\">POST https://api.example.com/v1/issues?api_key=***\nAuthorization: ***\nContent-Type: application/json\n\n{\n  &quot;title&quot;: &quot;Milk&quot;,\n  &quot;token&quot;: &quot;***&quot;\n}</code></pre>\nAsked by U111; this request expires in 10 minutes.",
    "🔐 <b>Approval needed</b>: Butler wants to use <code>create_issue</code> of MCP server <code>tracker</code>.\n<pre><code class=\"language-json\">{\n  &quot;api_token&quot;: &quot;***&quot;,\n  &quot;labels&quot;: [\n    &quot;bug&quot;\n  ],\n  &quot;title&quot;: &quot;Login &lt;fails&gt;&quot;\n}</code></pre>\nAsked by U111; this request expires in 10 minutes.",
];

/// The 200-line write: its first 30 lines, the note, and the file it points to.
const LONG: &str = "🔐 <b>Approval needed</b>: Butler wants to write 5692 bytes to long.md.\n<pre>{lines}</pre>\n<i>… 170 more lines: the whole content is in the attached file content-<id>.txt.</i>\nAsked by U111; this request expires in 10 minutes.";

#[tokio::test]
async fn each_request_shows_what_the_call_would_do() {
    let workspaces = tempfile::tempdir().unwrap();
    let (mcp, server) = mcp_tool();
    let root = workspaces.path().to_path_buf();
    let tg = Tg::start_with(move |cfg| tools_config(cfg, &root), vec![mcp]).await;
    tg.polling().await;
    let ws = seed(&tg.app.app.store, &Identity::new("telegram", OWNER.to_string()), workspaces.path()).await;
    script(&tg.llm);
    tg.fake.push(dm(OWNER, 1, ASK));
    let asked = |m: &[crate::support::fake_telegram::Shown]| m.iter().filter(|m| m.buttons.len() == 3).count();
    let shown = tg.fake.wait_chat(OWNER, 30, "five approval requests", |m| asked(m) == 5).await;
    let requests: Vec<String> = shown.iter().filter(|m| m.buttons.len() == 3).map(|m| stable(&m.html, &ws)).collect();
    assert_eq!(requests, SNAPSHOTS);
    for m in &shown {
        assert_no_secret(&m.html);
        assert!(m.file.is_none(), "every detail fits: no file");
    }
    tg.stop().await;
    server.stop().await;
}

#[tokio::test]
async fn a_long_write_is_cut_and_sent_whole_as_a_document() {
    let workspaces = tempfile::tempdir().unwrap();
    let root = workspaces.path().to_path_buf();
    let tg = Tg::start_with(move |cfg| tools_config(cfg, &root), vec![]).await;
    tg.polling().await;
    let ws = seed(&tg.app.app.store, &Identity::new("telegram", OWNER.to_string()), workspaces.path()).await;
    script(&tg.llm);
    tg.fake.push(dm(OWNER, 1, ASK_LONG));
    let shown = tg
        .fake
        .wait_chat(OWNER, 30, "the request and its document", |m| {
            m.iter().any(|m| m.buttons.len() == 3) && m.iter().any(|m| m.file.is_some())
        })
        .await;
    let request = shown.iter().find(|m| m.buttons.len() == 3).unwrap();
    let first: Vec<String> = long_text().lines().take(30).map(str::to_string).collect();
    assert_eq!(stable(&request.html, &ws), LONG.replace("{lines}", &first.join("\n")));
    assert!(request.text.chars().count() < 4_096);

    // The document: right after the request, the whole content, named as the request says.
    let doc = shown.iter().find(|m| m.file.is_some()).unwrap();
    assert!(doc.id > request.id, "sent after the request");
    let file = doc.file.as_ref().unwrap();
    assert_eq!(file.method, "sendDocument");
    assert!(request.text.contains(&file.name), "{} names {}", request.text, file.name);
    assert_eq!(file.bytes.as_deref(), Some(long_text().as_bytes()), "the whole content");
    assert_eq!(doc.text, "📎 The whole content of the approval request above (200 lines).");
    assert!(doc.buttons.is_empty());

    // Denied: the request shows the outcome (the summary only) and loses its buttons; the
    // document stays as it was.
    let deny = request.buttons.iter().find(|b| b.1.ends_with(":deny")).unwrap().1.clone();
    let on = tg.fake.message_json(OWNER, request.id);
    tg.fake.push(callback("q-deny", user(OWNER, "U111"), &on, &deny));
    let done = tg
        .fake
        .wait_chat(OWNER, 20, "the outcome", |m| m.iter().any(|m| m.id == request.id && m.buttons.is_empty()))
        .await;
    let outcome = done.iter().find(|m| m.id == request.id).unwrap();
    assert_eq!(outcome.text, "🚫 Denied by U111: write 5692 bytes to long.md.");
    assert_eq!(done.iter().find(|m| m.id == doc.id).unwrap().edits, 0);
    tg.stop().await;
}
