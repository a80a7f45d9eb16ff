//! Which hooks run and what their results add up to: matcher globs, events that only observe,
//! several hooks at once (concurrently, shown by a handshake, never by timing), and the
//! combined reason of several blocks.

use crate::{cmd, http_hook, run, sh_path, Expect, HookExt};
use butler::config::HookEvent;
use butler::hooks::Hooks;
use serde_json::json;

const PRE: HookEvent = HookEvent::PreToolUse;

#[tokio::test]
async fn matcher_globs_select_tool_hooks() {
    // (event, matcher, tool, runs)
    let cases: &[(HookEvent, &str, Option<&str>, bool)] = &[
        (PRE, "shell", Some("shell"), true),
        (PRE, "shell", Some("shell_exec"), false),
        (PRE, "shell", Some("Shell"), false),
        (PRE, "file_*", Some("file_read"), true),
        (PRE, "file_*", Some("file_"), true),
        (PRE, "file_*", Some("file"), false),
        (PRE, "file_*", Some("web_fetch"), false),
        (PRE, "*_fetch", Some("web_fetch"), true),
        (PRE, "f?le_read", Some("file_read"), true),
        (PRE, "*", Some("anything_at_all"), true),
        (PRE, "*", None, true),
        (PRE, "shell", None, false),
        (HookEvent::PostToolUse, "file_*", Some("file_write"), true),
        (HookEvent::PostToolUse, "file_*", Some("shell"), false),
        // Other events ignore the matcher.
        (HookEvent::SessionStart, "shell", None, true),
        (HookEvent::PreCompact, "file_*", Some("shell"), true),
    ];
    for &(event, matcher, tool, runs) in cases {
        let case = format!("{event} matcher {matcher:?} tool {tool:?}");
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let command = format!("touch {}; echo 'matched' >&2; exit 2", sh_path(dir.path(), "ran"));
        // A second hook for another event never runs.
        let other = if event == PRE { HookEvent::PostToolUse } else { PRE };
        let hooks = [cmd(event, &command).matcher(matcher), cmd(other, &command)];
        assert_eq!(Hooks::new(&hooks).wants(event, tool), runs, "{case}: wants");
        let outcome = run(&hooks, event, tool, &json!({})).await;
        assert_eq!(marker.exists(), runs, "{case}: ran");
        let expect = if runs && event == PRE { Expect::BlockExactly("matched") } else { Expect::Continue };
        expect.check(&outcome, &case);
    }
}

#[tokio::test]
async fn hooks_of_one_event_run_concurrently() {
    // Each hook announces itself, then waits for the other one: run one after the other, the
    // first would time out and (block_on_failure) block the call.
    let dir = tempfile::tempdir().unwrap();
    let hook = |me: &str, other: &str| {
        let command = format!(
            "touch {me}; while [ ! -e {other} ]; do sleep 0.05; done",
            me = sh_path(dir.path(), me),
            other = sh_path(dir.path(), other)
        );
        cmd(PRE, &command).timeout(30).blocking(true)
    };
    let hooks = [hook("a", "b"), hook("b", "c"), hook("c", "a")];
    let outcome = run(&hooks, PRE, Some("shell"), &json!({})).await;
    Expect::Continue.check(&outcome, "three hooks waiting for each other");
}

#[tokio::test]
async fn observing_events_never_block() {
    let closed = format!("http://127.0.0.1:{}/hook", crate::support::proc::free_port());
    // Everything that would block a pre_tool_use call, with block_on_failure everywhere.
    let failing = |event: HookEvent| {
        [
            cmd(event, "echo broken >&2; exit 1"),
            cmd(event, "echo 'no' >&2; exit 2"),
            cmd(event, r#"echo '{"decision":"block","reason":"no"}'"#),
            cmd(event, "butler-no-such-hook-command"),
            cmd(event, "sleep 30").timeout(1),
            http_hook(event, &closed),
        ]
        .map(|h| h.blocking(true))
    };
    let events = [
        (HookEvent::PostToolUse, Some("shell")),
        (HookEvent::SessionStart, None),
        (HookEvent::SessionEnd, None),
        (HookEvent::PreCompact, None),
        (HookEvent::PostCompact, None),
    ];
    for (event, tool) in events {
        let outcome = run(&failing(event), event, tool, &json!({"session": "s-1"})).await;
        Expect::Continue.check(&outcome, &format!("{event}"));
    }
    // The same hooks do block a pre_tool_use call: each reason, in configuration order.
    let outcome = run(&failing(PRE), PRE, Some("shell"), &json!({})).await;
    Expect::BlockWith(&[
        "exited with code 1: broken; no; no; ",
        "code 127",
        "timed out after 1s",
        "could not be reached",
    ])
    .check(&outcome, "pre_tool_use");
}

#[tokio::test]
async fn outcomes_of_several_hooks_combine() {
    use Expect::*;
    // (commands of the pre_tool_use hooks with their block_on_failure, expected outcome)
    let cases: &[(&[(&str, bool)], Expect)] = &[
        (&[], Continue),
        (&[("true", true), ("true", true)], Continue),
        (&[("true", true), ("exit 1", false)], Continue),
        (&[("exit 1", false), ("echo first >&2; exit 2", false)], BlockExactly("first")),
        (
            &[("echo first >&2; exit 2", false), ("true", true), ("echo second >&2; exit 2", false)],
            BlockExactly("first; second"),
        ),
        (
            &[("echo blocked >&2; exit 2", false), ("exit 1", true)],
            BlockWith(&["blocked; hook `exit 1` exited with code 1"]),
        ),
    ];
    for (commands, expect) in cases {
        let hooks: Vec<_> = commands.iter().map(|(c, b)| cmd(PRE, c).blocking(*b)).collect();
        let outcome = run(&hooks, PRE, Some("shell"), &json!({})).await;
        expect.check(&outcome, &format!("{commands:?}"));
    }
}
