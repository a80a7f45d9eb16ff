//! What a new user meets, through the real binary: one data dir wherever Butler is started
//! (and the database named at start, password masked), model set-up errors that name the
//! missing piece with the served models, `doctor`'s model lines, logs without colour codes in a
//! file, and a clean terminal chat (no log lines, no prompt in front of replies, Markdown
//! rendered) in a pseudo-terminal.

use super::llm_section;
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::proc::{clean_command, free_port, Deployment, Server};
use expectrl::Session;
use std::process::{Command, Stdio};
use std::time::Duration;

fn output(mut cmd: Command) -> (String, String) {
    let out = cmd.output().unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn every_folder_uses_the_one_data_dir_and_says_which_database() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path().display().to_string();
    let default_db = format!("sqlite://{h}/.local/share/butler/butler.db");
    // (working folder under home, extra environment, database shown)
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], String);
    let cases: &[Case] = &[
        ("a", &[], default_db.clone()),
        ("b/c", &[], default_db.clone()),
        ("a", &[("XDG_DATA_HOME", &format!("{h}/xdg"))], format!("sqlite://{h}/xdg/butler/butler.db")),
        ("a", &[("BUTLER_DATA_DIR", &format!("{h}/mine"))], format!("sqlite://{h}/mine/butler.db")),
        (
            "a",
            &[("BUTLER_DATABASE__URL", "postgres://butler:hunter2@127.0.0.1:1/butler")],
            "postgres://butler:***@127.0.0.1:1/butler".to_string(),
        ),
    ];
    for (folder, vars, want) in cases {
        let cwd = home.path().join(folder);
        std::fs::create_dir_all(&cwd).unwrap();
        let mut cmd = clean_command(&cwd);
        cmd.env("HOME", home.path()).envs(vars.iter().copied()).arg("doctor");
        let (stdout, _) = output(cmd);
        assert!(
            stdout.contains("database") && stdout.contains(want.as_str()),
            "{folder} {vars:?}: want {want} in\n{stdout}"
        );
        assert!(!stdout.contains("hunter2"), "{stdout}");
    }
    assert!(home.path().join(".local/share/butler/butler.db").exists(), "the database is in the data dir");
    assert!(!home.path().join("a/data").exists(), "nothing under ./data");

    // The terminal chat says it too, before the conversation.
    let mut cmd = clean_command(&home.path().join("b"));
    cmd.env("HOME", home.path()).arg("chat").stdin(Stdio::null());
    let (_, stderr) = output(cmd);
    assert!(stderr.contains(&format!("database: {default_db}")), "{stderr}");
    assert!(stderr.contains(&format!("logs: {h}/.local/share/butler/logs/chat.log")), "{stderr}");
}

#[tokio::test]
async fn model_set_up_errors_name_the_missing_piece_and_doctor_shows_the_model() {
    let llm = FakeLlm::start().await;
    llm.serve_models(&["fake-model", "llama3.1"]);
    let url = llm.openai_url();
    let home = tempfile::tempdir().unwrap();
    // (environment, lines doctor prints, lines it must not print)
    type Case<'a> = (Vec<(&'a str, &'a str)>, Vec<String>, Vec<&'a str>);
    let cases: Vec<Case> = vec![
        (
            vec![("OPENAI_BASE_URL", &url)],
            vec![
                format!("[FAIL] model (openai, no model name, at {url}): a model name is needed"),
                "BUTLER_MODEL".to_string(),
                "It serves: fake-model, llama3.1.".to_string(),
            ],
            vec!["none -"],
        ),
        (
            vec![("BUTLER_LLM__BASE_URL", &url), ("BUTLER_MODEL", "fake-model")],
            vec![
                format!("[ ok ] model (openai fake-model at {url}): answered a test request"),
                "[ ok ] served models: fake-model, llama3.1".to_string(),
            ],
            vec!["[FAIL] model"],
        ),
        (
            vec![("OPENAI_BASE_URL", &url), ("BUTLER_MODEL", "llama3.1")],
            vec![format!("[ ok ] model (openai llama3.1 at {url})")],
            vec![],
        ),
        (vec![], vec!["[FAIL] model (not configured): no language model is configured".to_string()], vec!["none -"]),
    ];
    for (vars, wants, never) in cases {
        let mut cmd = clean_command(home.path());
        cmd.envs(vars.iter().copied()).arg("doctor");
        let (stdout, _) = tokio::task::spawn_blocking(move || output(cmd)).await.unwrap();
        for w in &wants {
            assert!(stdout.contains(w.as_str()), "{vars:?}: want {w:?} in\n{stdout}");
        }
        for n in never {
            assert!(!stdout.contains(n), "{vars:?}: {n:?} in\n{stdout}");
        }
    }

    // `serve` says the same at start, and which database it uses.
    let port = free_port();
    let log = home.path().join("serve.log");
    let mut cmd = clean_command(home.path());
    cmd.env("OPENAI_BASE_URL", &url).env("BUTLER_SERVER__LISTEN", format!("127.0.0.1:{port}")).arg("serve");
    let server = Server::start(cmd, log, &format!("http://127.0.0.1:{port}")).await;
    let text = server.log_text();
    assert!(text.contains("a model name is needed") && text.contains("It serves: fake-model, llama3.1."), "{text}");
    assert!(text.contains("using the database sqlite://"), "{text}");
    // Written to a file: no colour codes.
    assert!(!text.contains('\u{1b}'), "escape codes in a log file:\n{text:?}");
    let status = server.terminate(Duration::from_secs(15)).await;
    assert!(status.success());
}

#[tokio::test]
async fn doctor_warns_when_the_model_base_url_is_butler_itself() {
    let port = free_port();
    let dep = Deployment::new(&llm_section(&format!("http://127.0.0.1:{port}/v1")));
    let text = std::fs::read_to_string(&dep.config).unwrap();
    // Deployment listens on its own port: point the model at it.
    let text = text.replace(&format!("127.0.0.1:{}\"", dep.port), &format!("127.0.0.1:{port}\""));
    std::fs::write(&dep.config, text).unwrap();
    let (stdout, _) = tokio::task::spawn_blocking(move || output(dep.command(&["doctor"]))).await.unwrap();
    assert!(
        stdout.contains(&format!(
            "[warn] model base URL: [llm] base_url http://127.0.0.1:{port}/v1 is Butler's own address"
        )),
        "{stdout}"
    );
}

/// The terminal chat in a pty: (environment, whether styles are expected).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminal_chat_renders_markdown_and_keeps_logs_out() {
    let llm = FakeLlm::start().await;
    let reply = "**Bold** words:\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 22 |\n\n```\nlet x = 1;\n```\nend";
    llm.on_every("show me", Reply::text(reply));
    let dep = Deployment::new(&llm_section(&llm.openai_url()));
    for (vars, styled) in [(vec![], true), (vec![("NO_COLOR", "1")], false)] {
        let mut cmd = dep.command(&["chat"]);
        cmd.env("RUST_LOG", "debug").envs(vars.iter().copied());
        let seen = tokio::task::spawn_blocking(move || {
            let mut s = Session::spawn(cmd).unwrap();
            s.set_expect_timeout(Some(Duration::from_secs(30)));
            // Echo on, as in a real terminal: the typed line ends with a newline on screen.
            s.get_process_mut().set_echo(true, Some(Duration::from_secs(5))).unwrap();
            let mut seen = String::new();
            let mut expect = |s: &mut Session, needle: &str| match s.expect(needle) {
                Ok(found) => {
                    seen.push_str(&String::from_utf8_lossy(found.before()));
                    seen.push_str(needle);
                }
                Err(e) => panic!("`{needle}` never came ({e}):\n{seen}"),
            };
            expect(&mut s, "› ");
            s.send_line("show me some markdown").unwrap();
            expect(&mut s, "end");
            expect(&mut s, "› ");
            s.send_line("/whoami").unwrap();
            expect(&mut s, "cli:local");
            expect(&mut s, "› ");
            // Ctrl-D: end of input.
            s.send([4u8]).unwrap();
            let _ = s.expect(expectrl::Eof);
            seen
        })
        .await
        .unwrap();
        let has_escape = |needle: &str| seen.contains(needle);
        assert_eq!(has_escape("\u{1b}[1mBold\u{1b}[22m"), styled, "{vars:?}: bold\n{seen:?}");
        if !styled {
            assert!(!seen.replace("\r\u{1b}[K", "").contains('\u{1b}'), "NO_COLOR: no escape codes\n{seen:?}");
        }
        for want in ["• one", "• two", "──┼───", "1 │ 22", "let x = 1;"] {
            assert!(seen.contains(want), "{vars:?}: want {want:?} in\n{seen}");
        }
        assert!(!seen.contains("**Bold**") && !seen.contains("|---|") && !seen.contains("```"), "rendered:\n{seen}");
        // No log line reached the terminal, even at debug level.
        for log in [" DEBUG ", " INFO ", " WARN ", "butler::"] {
            assert!(!seen.contains(log), "{vars:?}: a log line in the conversation ({log}):\n{seen}");
        }
        // The reply starts on its own line, not after the prompt.
        let line = seen.lines().find(|l| l.contains("Bold")).unwrap();
        assert!(!line.contains('›'), "the prompt stands in front of the reply: {line:?}");
    }
    let log = std::fs::read_to_string(dep.dir.path().join(".local/share/butler/logs/chat.log")).unwrap();
    assert!(log.contains("DEBUG") || log.contains("INFO"), "the log lines went to the data dir's chat.log");
    assert!(!log.contains('\u{1b}'), "no colour codes in the log file");
}
