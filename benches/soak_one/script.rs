//! What the fake model does in the soak: the rules every run shares (compaction summaries, the
//! helpers' answers, background reports) and, per message, the turn of its kind: a plain echo, a
//! `file_write` that asks for approval, a call of the stdio or the HTTP MCP server's `echo`, a
//! foreground or background `delegate`. Every message carries a needle of its own (`q<n>z`), so
//! its rules are used by its turn and no other, and every answer names `n`, so a double shows.

use crate::support::fake_llm::{FakeLlm, Reply};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The kinds of turn the load mixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Text,
    /// A file uploaded through the web API and attached to the message (web only).
    Upload,
    /// `file_write`, which asks: approved through the channel (or the web API).
    Approval,
    McpStdio,
    McpHttp,
    /// A foreground `delegate`: the helper answers, then the turn does.
    Helper,
    /// A background `delegate` (web only): the turn answers at once, the report starts a turn.
    Background,
}

/// Every kind, in the order of [`sent_of`]'s counts.
pub const KINDS: [Kind; 7] =
    [Kind::Text, Kind::Upload, Kind::Approval, Kind::McpStdio, Kind::McpHttp, Kind::Helper, Kind::Background];

/// Messages scripted per kind (index in [`KINDS`]).
static SENT: [AtomicUsize; 7] = [const { AtomicUsize::new(0) }; 7];

/// How many messages of `kind` were scripted.
pub fn sent_of(kind: Kind) -> usize {
    SENT[KINDS.iter().position(|k| *k == kind).unwrap_or(0)].load(Ordering::Relaxed)
}

/// The web's cycle of kinds, one message per tick.
pub const WEB_KINDS: [Kind; 7] =
    [Kind::Text, Kind::Upload, Kind::Approval, Kind::McpStdio, Kind::Background, Kind::McpHttp, Kind::Helper];
/// A platform person's cycle (each waits for the answer before the next message).
pub const PERSON_KINDS: [Kind; 5] = [Kind::Text, Kind::Approval, Kind::McpStdio, Kind::Helper, Kind::McpHttp];

/// What a report of a background task is answered with.
pub const REPORT: &str = "report noted";

/// The rules every run shares, added before any message's own (the first rule that matches
/// answers, so these win over a needle that an old message brings along).
pub fn shared_rules(llm: &FakeLlm) {
    // Compaction summarizes the transcript, old needles included.
    llm.on_every("Summarize this conversation so far", Reply::text("Goals\nnone\nOpen tasks\nnone"));
    // A report's text holds its task's words too.
    llm.on_every("Background task", Reply::text(REPORT));
    llm.on_every("child-work", Reply::text("child done"));
}

/// One message: what the person says, and the answers it must get, each exactly once.
pub struct Turn {
    pub text: String,
    pub answers: Vec<String>,
}

/// Scripts message `n` of `kind` on `channel` and returns it.
pub fn turn(llm: &FakeLlm, channel: &str, kind: Kind, n: usize) -> Turn {
    SENT[KINDS.iter().position(|k| *k == kind).unwrap_or(0)].fetch_add(1, Ordering::Relaxed);
    let needle = format!("q{n}z");
    let script = |call: Reply, answer: String, what: &str| {
        llm.on(&needle, call);
        llm.on(&needle, Reply::text(&answer));
        Turn { text: format!("{channel} {needle} {what}"), answers: vec![answer] }
    };
    let mcp = |server: &str| Reply::tool_call(&format!("{server}__echo"), json!({"text": format!("ping {n}")}));
    match kind {
        Kind::Text | Kind::Upload => {
            let text = format!("{channel} {needle} hello");
            Turn { answers: vec![format!("echo: {text}")], text }
        }
        Kind::Approval => {
            let write = json!({"path": format!("soak/{channel}.txt"), "content": format!("note {n}")});
            script(Reply::tool_call("file_write", write), format!("written {n}"), "write a note")
        }
        Kind::McpStdio => script(mcp("stdio"), format!("stdio echoed {n}"), "ping stdio"),
        Kind::McpHttp => script(mcp("http"), format!("http echoed {n}"), "ping http"),
        Kind::Helper => {
            let call = Reply::tool_call("delegate", json!({"task": "child-work"}));
            script(call, format!("helped {n}"), "ask a helper")
        }
        Kind::Background => {
            let call = Reply::tool_call("delegate", json!({"task": "child-work", "background": true}));
            let mut turn = script(call, format!("started {n}"), "start a task");
            turn.answers.push(REPORT.into());
            turn
        }
    }
}

/// Whether `said` is `answer` (an echo of a message with a file goes on with the file's text).
pub fn answers(said: &str, answer: &str) -> bool {
    said == answer || said.strip_prefix(answer).is_some_and(|rest| rest.starts_with('\n'))
}
