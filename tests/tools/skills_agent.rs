//! Skills wired into the agent, through a real Butler with the fake LLM: a new session's system
//! prompt holds each skill's name and description (never its body) and sees skills added
//! without a restart while a running session keeps its prompt byte for byte; the model loads a
//! body with `skill`; a skill's `allowed-tools` narrows the rest of the turn's tools.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, RecordedRequest, Reply};
use serde_json::json;
use std::path::Path;

fn write_skill(root: &Path, name: &str, front: &str, body: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), format!("---\nname: {name}\n{front}---\n{body}\n")).unwrap();
}

/// A Butler whose data dir is `<tmp>/data` and whose `[skills] dirs` is `<tmp>/extra`.
async fn start(llm: &FakeLlm) -> (TestApp, std::path::PathBuf) {
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    let root = dir.path().to_path_buf();
    cfg.tools.workspace_dir = root.join("data/workspaces").display().to_string();
    cfg.skills.dirs = vec![root.join("extra").display().to_string()];
    (TestApp::start(cfg, Some(dir)).await, root)
}

/// The names of the tools a request offered.
fn offered(req: &RecordedRequest) -> Vec<String> {
    let mut names: Vec<String> =
        req.tools().iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_string)).collect();
    names.sort();
    names
}

#[tokio::test]
async fn new_sessions_see_added_skills_while_a_running_session_keeps_its_prompt() {
    let llm = FakeLlm::start().await;
    let (app, root) = start(&llm).await;
    write_skill(&root.join("data/skills"), "alpha", "description: Alpha does the first thing.\n", "ALPHA-BODY-SECRET");

    app.post("s-a", "local", "hello one").await;
    let first = llm.requests_for("hello one", 1).await[0].system_text();
    let cases = [
        ("`alpha`: Alpha does the first thing.", true),
        ("`morning-briefing`", true),
        ("`summarize-thread`", true),
        ("ALPHA-BODY-SECRET", false),
        ("`beta`", false),
    ];
    for (needle, want) in cases {
        assert_eq!(first.contains(needle), want, "{needle:?} in\n{first}");
    }

    // A skill added while Butler runs: the next new session sees it, the running one does not.
    write_skill(&root.join("extra"), "beta", "description: Beta, added later.\n", "BETA-BODY");
    app.post("s-a", "local", "hello two").await;
    app.post("s-b", "local", "hello three").await;
    let again = llm.requests_for("hello two", 1).await[0].system_text();
    let fresh = llm.requests_for("hello three", 1).await[0].system_text();
    assert_eq!(again, first, "the running session's stored prompt is unchanged byte for byte");
    assert!(fresh.contains("`beta`: Beta, added later."), "{fresh}");
    assert!(fresh.contains("`alpha`: Alpha does the first thing.") && !fresh.contains("BETA-BODY"), "{fresh}");
    app.stop().await;
}

#[tokio::test]
async fn the_model_loads_a_skill_body_with_the_skill_tool() {
    let llm = FakeLlm::start().await;
    let (app, root) = start(&llm).await;
    write_skill(&root.join("extra"), "gamma", "description: Gamma.\n", "Step 1: GAMMA-INSTRUCTIONS.");
    llm.on("use gamma", Reply::tool_call("skill", json!({"name": "gamma"})));
    llm.on("use gamma", Reply::text("Done with gamma."));
    app.post("s-g", "local", "use gamma").await;
    let reqs = llm.requests_for("use gamma", 2).await;
    assert!(offered(&reqs[0]).contains(&"skill".to_string()), "{:?}", offered(&reqs[0]));
    let result = reqs[1].last_tool_result().expect("a tool result");
    assert!(result.contains("# Skill `gamma`") && result.contains("GAMMA-INSTRUCTIONS"), "{result}");
    app.stop().await;
}

#[tokio::test]
async fn allowed_tools_narrow_the_rest_of_the_turn_and_refuse_other_calls() {
    let llm = FakeLlm::start().await;
    let (app, root) = start(&llm).await;
    write_skill(&root.join("extra"), "clock", "description: Tells the time.\nallowed-tools: [\"now\"]\n", "Use now.");
    write_skill(&root.join("extra"), "open", "description: No narrowing.\n", "Anything goes.");
    // Turn 1: loads `clock`, then tries `recall` (allowed by the policy, refused by the skill).
    llm.on("what time", Reply::tool_call("skill", json!({"name": "clock"})));
    llm.on("what time", Reply::tool_call("recall", json!({"query": "time"})));
    llm.on("what time", Reply::text("It is now."));
    // Turn 2 of the same session, and a skill without allowed-tools: nothing is narrowed.
    llm.on("next turn", Reply::tool_call("skill", json!({"name": "open"})));
    llm.on("next turn", Reply::text("ok"));
    app.post("s-c", "local", "what time is it").await;
    let reqs = llm.requests_for("what time", 3).await;
    let all = offered(&reqs[0]);
    assert!(all.contains(&"recall".to_string()) && all.contains(&"now".to_string()), "{all:?}");
    assert_eq!(offered(&reqs[1]), ["now", "skill"], "after `clock` loaded");
    assert_eq!(offered(&reqs[2]), ["now", "skill"], "for the rest of the turn");
    let refused = reqs[2].last_tool_result().expect("the recall result");
    assert!(refused.contains("refused") && refused.contains("`clock`") && refused.contains("now"), "{refused}");

    app.post("s-c", "local", "next turn").await;
    let next = llm.requests_for("next turn", 2).await;
    assert_eq!(offered(&next[0]), all, "a new turn starts with every tool");
    assert_eq!(offered(&next[1]), all, "a skill without allowed-tools narrows nothing");
    app.stop().await;
}

/// A turn that waits for an approval and is resumed after the click is narrowed exactly as
/// before: the narrowing is rebuilt from the turn's transcript, not kept in memory.
#[tokio::test]
async fn a_turn_resumed_after_an_approval_stays_narrowed() {
    let llm = FakeLlm::start().await;
    let (app, root) = start(&llm).await;
    let front = "description: Writes notes.\nallowed-tools: [\"file_write\"]\n";
    write_skill(&root.join("extra"), "notes", front, "Write the note.");
    llm.on("take a note", Reply::tool_call("skill", json!({"name": "notes"})));
    llm.on("take a note", Reply::tool_call("file_write", json!({"path": "note.md", "content": "milk"})));
    llm.on("take a note", Reply::tool_call("recall", json!({"query": "milk"})));
    llm.on("take a note", Reply::text("Noted."));
    app.post("s-n", "local", "take a note: milk").await;
    let asked = llm.requests_for("take a note", 2).await;
    assert_eq!(offered(&asked[1]), ["file_write", "skill"], "narrowed before the approval");
    app.approve("s-n").await;
    let reqs = llm.requests_for("take a note", 4).await;
    assert_eq!(offered(&reqs[2]), ["file_write", "skill"], "the resumed turn is narrowed as before");
    let wrote = reqs[2].last_tool_result().unwrap_or_default();
    assert_eq!(wrote, "Wrote 4 bytes to note.md.", "the approved call ran");
    assert_eq!(offered(&reqs[3]), ["file_write", "skill"]);
    let refused = reqs[3].last_tool_result().expect("the recall result");
    assert!(refused.contains("refused") && refused.contains("`notes`"), "{refused}");
    app.stop().await;
}
