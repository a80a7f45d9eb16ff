//! Command hooks: exit codes and decisions, the payload on stdin and in the environment, the
//! scrubbed environment, and timeouts that kill the whole process group. They must never leave
//! a process running after the test.

use crate::{assert_group_gone, cmd, read_when_written, run, sh_path, Expect, HookExt};
use butler::config::HookEvent;
use serde_json::{json, Value};

const PRE: HookEvent = HookEvent::PreToolUse;

#[tokio::test]
async fn exit_codes_and_decisions() {
    use Expect::*;
    // (command, block_on_failure, expected outcome for pre_tool_use on `shell`)
    let cases: &[(&str, bool, Expect)] = &[
        ("true", false, Continue),
        ("true", true, Continue),
        ("cat >/dev/null; echo all good", true, Continue),
        ("echo 'not json'", true, Continue),
        (r#"echo '{"decision":"approve","reason":"fine"}'"#, true, Continue),
        // A failure only blocks with block_on_failure.
        ("echo oops >&2; exit 1", false, Continue),
        ("echo oops >&2; exit 1", true, BlockWith(&["hook `echo oops >&2; exit 1`", "exited with code 1", "oops"])),
        ("exit 3", true, BlockWith(&["exited with code 3"])),
        ("kill -9 $$", true, BlockWith(&["killed by signal 9"])),
        // A command that does not exist: sh says so and exits 127.
        ("butler-no-such-hook-command --check", false, Continue),
        (
            "butler-no-such-hook-command --check",
            true,
            BlockWith(&["exited with code 127 (command not found)", "butler-no-such-hook-command"]),
        ),
        // Explicit blocks block whatever block_on_failure says.
        (r#"echo '{"decision":"block","reason":"no rm -rf, please"}'"#, false, BlockExactly("no rm -rf, please")),
        (r#"printf '{"decision": "block"}'"#, false, BlockWith(&["blocked the call"])),
        ("echo 'touches a protected path' >&2; exit 2", false, BlockExactly("touches a protected path")),
        (r#"echo '{"decision":"block","reason":"from stdout"}'; exit 2"#, false, BlockExactly("from stdout")),
        ("exit 2", false, BlockWith(&["blocked the call (exit code 2)"])),
        // Exit 1 with a JSON block is a failure, not a block.
        (r#"echo '{"decision":"block","reason":"x"}'; exit 1"#, false, Continue),
    ];
    for (command, block_on_failure, expect) in cases {
        let hooks = [cmd(PRE, command).blocking(*block_on_failure)];
        let outcome = run(&hooks, PRE, Some("shell"), &json!({"arguments": {"command": "ls"}})).await;
        expect.check(&outcome, &format!("`{command}` (block_on_failure = {block_on_failure})"));
    }
}

#[tokio::test]
async fn payload_arrives_on_stdin_and_in_the_environment() {
    // (event, tool, payload given to run, JSON the hook must receive)
    let cases: Vec<(HookEvent, Option<&str>, Value, Value)> = vec![
        (
            PRE,
            Some("shell"),
            // `event` and `tool` in the payload cannot override the real ones.
            json!({"arguments": {"command": "ls -la"}, "session": "s-1", "event": "spoofed", "tool": "other"}),
            json!({"event": "pre_tool_use", "tool": "shell", "arguments": {"command": "ls -la"}, "session": "s-1"}),
        ),
        (
            HookEvent::SessionStart,
            None,
            json!({"session": "s-2", "text": "héllo \"quoted\" $HOME `x`"}),
            json!({"event": "session_start", "tool": null, "session": "s-2", "text": "héllo \"quoted\" $HOME `x`"}),
        ),
        (HookEvent::PreCompact, None, json!(null), json!({"event": "pre_compact", "tool": null})),
        (HookEvent::PostCompact, None, json!([1, 2]), json!({"event": "post_compact", "tool": null, "data": [1, 2]})),
    ];
    for (event, tool, payload, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let command = format!(
            "cat > {stdin}; printf '%s' \"$BUTLER_HOOK_PAYLOAD\" > {env}; \
             printf '%s|%s' \"$BUTLER_HOOK_EVENT\" \"$BUTLER_HOOK_TOOL\" > {meta}",
            stdin = sh_path(dir.path(), "stdin.json"),
            env = sh_path(dir.path(), "env.json"),
            meta = sh_path(dir.path(), "meta"),
        );
        let outcome = run(&[cmd(event, &command).blocking(true)], event, tool, &payload).await;
        let case = format!("{event} {tool:?} {payload}");
        Expect::Continue.check(&outcome, &case);
        for file in ["stdin.json", "env.json"] {
            let text = std::fs::read_to_string(dir.path().join(file)).unwrap();
            let got: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{case}: {file}: {e}: {text}"));
            assert_eq!(got, expected, "{case}: {file}");
        }
        let meta = std::fs::read_to_string(dir.path().join("meta")).unwrap();
        assert_eq!(meta, format!("{event}|{}", tool.unwrap_or_default()), "{case}");
    }
}

#[tokio::test]
async fn environment_is_scrubbed() {
    const SECRET: &str = "sk-hookrun-test-secret-4f1c";
    // A secret in the test process's environment, as Butler's own would be.
    std::env::set_var("BUTLER_LLM__API_KEY", SECRET);
    let dir = tempfile::tempdir().unwrap();
    let command = format!("env > {}", sh_path(dir.path(), "env.txt"));
    let outcome = run(&[cmd(PRE, &command).blocking(true)], PRE, Some("shell"), &json!({})).await;
    Expect::Continue.check(&outcome, "env");
    let env = std::fs::read_to_string(dir.path().join("env.txt")).unwrap();
    assert!(!env.contains(SECRET), "the secret reached the hook:\n{env}");
    let allowed = [
        "PATH",
        "HOME",
        "LANG",
        "BUTLER_HOOK_PAYLOAD",
        "BUTLER_HOOK_EVENT",
        "BUTLER_HOOK_TOOL",
        // Set by the shell itself.
        "PWD",
        "OLDPWD",
        "SHLVL",
        "_",
    ];
    for line in env.lines() {
        let name = line.split('=').next().unwrap_or_default();
        assert!(allowed.contains(&name), "unexpected variable {name} in the hook's environment:\n{env}");
    }
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "PATH is passed on:\n{env}");
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    // (case, command after writing its process group id): each outlives its 1 s timeout.
    let cases = [
        ("sleeping in the foreground, a background child beside it", "sleep 30 & sleep 30"),
        ("exited, leaving a background child that holds stdout open", "sleep 30 & exit 0"),
        ("ignoring SIGTERM", "trap '' TERM; sleep 30"),
    ];
    for (case, body) in cases {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pgid");
        let command = format!("echo $$ > {}; {body}", sh_path(dir.path(), "pgid"));
        let hooks = [cmd(PRE, &command).timeout(1).blocking(true)];
        let outcome = run(&hooks, PRE, Some("shell"), &json!({})).await;
        Expect::BlockWith(&["timed out after 1s"]).check(&outcome, case);
        let pgid: u32 = read_when_written(&pid_file).await.trim().parse().unwrap();
        assert_group_gone(pgid, case).await;
    }
}

#[tokio::test]
async fn dropping_the_run_kills_its_hooks() {
    // The caller gives up (its own timeout, a cancelled turn) while a hook still runs.
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pgid");
    let command = format!("echo $$ > {}; sleep 30 & sleep 30", sh_path(dir.path(), "pgid"));
    let hooks = butler::hooks::Hooks::new(&[cmd(PRE, &command).timeout(60)]);
    let payload = json!({});
    let pgid: u32 = tokio::select! {
        outcome = hooks.run(PRE, Some("shell"), &payload) => panic!("the hook ended early: {outcome:?}"),
        text = read_when_written(&pid_file) => text.trim().parse().unwrap(),
    };
    // `run` was dropped when `select!` returned; its task is aborted at the next yield.
    assert_group_gone(pgid, "run dropped").await;
}
