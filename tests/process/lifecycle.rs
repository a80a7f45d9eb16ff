//! Starting and stopping the real binary: the embedded default with no config and no services,
//! health and readiness, graceful shutdown on SIGTERM (running turns finish, the outbox is
//! flushed, exit 0) and parking turns that outlast the grace period.

use super::{llm_section, messages, post, query};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::proc::{clean_command, free_port, signal, Deployment, Server};
use std::time::Duration;

#[tokio::test]
async fn serve_without_config_runs_on_the_embedded_default() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let mut cmd = clean_command(dir.path());
    cmd.arg("serve");
    let base = "http://127.0.0.1:8080";
    let server = Server::start(cmd, log, base).await;
    // HOME is the temp dir: the default data dir is ~/.local/share/butler.
    assert!(dir.path().join(".local/share/butler/butler.db").exists(), "SQLite in the user's data dir");
    let health: serde_json::Value = reqwest::get(format!("{base}/healthz")).await.unwrap().json().await.unwrap();
    assert_eq!(health["status"], "ok");
    let page = reqwest::get(format!("{base}/")).await.unwrap().text().await.unwrap();
    assert!(page.contains("Butler"));
    let info: serde_json::Value = reqwest::get(format!("{base}/api/v1/info")).await.unwrap().json().await.unwrap();
    assert_eq!(info["llm"]["configured"], false);
    assert!(info["llm"]["hint"].as_str().unwrap().contains("OPENAI_API_KEY"));
    // Without a model it still answers, saying what to set.
    post(base, "hello", "hi").await;
    let mut reply = String::new();
    for _ in 0..200 {
        if let Some(m) = messages(base, "hello").await.into_iter().find(|m| m["role"] == "assistant") {
            reply = m["text"].as_str().unwrap().to_string();
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(reply.contains("OPENAI_API_KEY") && reply.contains("ANTHROPIC_API_KEY"), "{reply}");
    let log_text = server.log_text();
    assert!(log_text.contains("no language model is configured"), "{log_text}");
    let status = server.terminate(Duration::from_secs(15)).await;
    assert!(status.success(), "exit {status:?}");
}

/// `serve` starts itself again, once, with glibc's per-thread caches and fast bins off (so the
/// memory of a burst of conversations can go back; `cli::allocator`), keeps the operator's own
/// `GLIBC_TUNABLES` before its settings, and leaves them alone when they set the allocator;
/// started with the settings and the mark, as the deployment files start it, it says which it has.
#[tokio::test]
async fn serve_runs_with_the_allocator_settings_unless_the_operator_set_them() {
    const OURS: &str = butler::cli::allocator::TUNABLES;
    const MARK: &str = butler::cli::allocator::MARK;
    // (GLIBC_TUNABLES given, the mark given, the start-up line's words, GLIBC_TUNABLES the running
    // image got, whether its image has the mark: it executed again, or the mark was given)
    type Row = (Option<&'static str>, Option<&'static str>, &'static str, String, bool);
    let table: &[Row] = &[
        (None, None, "without per-thread caches and fast bins", OURS.to_string(), true),
        (
            Some("glibc.rtld.optional_static_tls=1024"),
            None,
            "without per-thread caches",
            format!("glibc.rtld.optional_static_tls=1024:{OURS}"),
            true,
        ),
        (
            Some("glibc.malloc.tcache_count=7"),
            None,
            "as GLIBC_TUNABLES sets them",
            "glibc.malloc.tcache_count=7".into(),
            false,
        ),
        // As deploy/Dockerfile and deploy/butler.service start it: once, with the settings.
        (Some(OURS), Some(""), "without per-thread caches and fast bins", OURS.to_string(), true),
        // The image started with the operator's own settings: theirs, and said so.
        (
            Some("glibc.malloc.tcache_count=7"),
            Some(""),
            "as GLIBC_TUNABLES sets them",
            "glibc.malloc.tcache_count=7".into(),
            true,
        ),
    ];
    for (given, mark, words, image, marked) in table {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let config = dir.path().join("butler.toml");
        std::fs::write(&config, format!("[server]\nlisten = \"127.0.0.1:{port}\"\n")).unwrap();
        let mut cmd = clean_command(dir.path());
        cmd.args(["serve", "--config"]).arg(&config);
        if let Some(t) = given {
            cmd.env("GLIBC_TUNABLES", t);
        }
        if let Some(m) = mark {
            cmd.env(MARK, m);
        }
        let server = Server::start(cmd, dir.path().join("serve.log"), &format!("http://127.0.0.1:{port}")).await;
        let log = server.log_text();
        let line =
            log.lines().find(|l| l.contains("memory allocator:")).unwrap_or_else(|| panic!("no allocator line: {log}"));
        assert!(line.contains(words), "{given:?} {mark:?}: {line}");
        // The process is the one that was spawned (the same pid), and its image was started with
        // these settings. Butler is not dumpable: only a privileged reader sees its environ.
        if let Ok(environ) = std::fs::read(format!("/proc/{}/environ", server.child.id())) {
            let vars: Vec<String> =
                environ.split(|b| *b == 0).map(|v| String::from_utf8_lossy(v).into_owned()).collect();
            // glibc cuts the variable at its first `:` where it reads it: compare up to there.
            let got = vars.iter().find_map(|v| v.strip_prefix("GLIBC_TUNABLES=")).unwrap_or_default();
            assert!(!got.is_empty() && image.starts_with(got), "{given:?} {mark:?}: {got:?} against {image:?}");
            let has_mark = vars.iter().any(|v| v.starts_with(&format!("{MARK}=")));
            assert_eq!(has_mark, *marked, "{given:?} {mark:?}: {vars:?}");
        }
        let status = server.terminate(Duration::from_secs(15)).await;
        assert!(status.success(), "{given:?} {mark:?}: exit {status:?}");
    }
}

#[tokio::test]
async fn sigterm_lets_the_running_turn_finish_and_flushes_the_outbox() {
    let llm = FakeLlm::start().await;
    let dep = Deployment::new(&llm_section(&llm.openai_url()));
    let server = dep.serve().await;
    llm.on("finish me", Reply::chunks((0..20).map(|i| format!("p{i} "))).chunk_delay(Duration::from_millis(50)));
    post(&dep.base(), "g", "finish me").await;
    assert!(llm.wait_for_requests(1, Duration::from_secs(10)).await);
    let status = server.terminate(Duration::from_secs(20)).await;
    assert!(status.success(), "exit {status:?}");
    let rows = query(&dep.db_url(), "SELECT role, text FROM web_messages ORDER BY id").await;
    let want = (0..20).map(|i| format!("p{i} ")).collect::<String>().trim_end().to_string();
    assert_eq!(
        rows.last().unwrap(),
        &vec!["assistant".to_string(), want],
        "the finished reply was delivered before exit"
    );
    assert_eq!(query(&dep.db_url(), "SELECT status FROM outbox").await, vec![vec!["sent".to_string()]]);
    assert_eq!(query(&dep.db_url(), "SELECT status FROM inbox").await, vec![vec!["done".to_string()]]);
}

#[tokio::test]
async fn a_turn_longer_than_the_grace_period_is_parked_and_resumed() {
    let llm = FakeLlm::start().await;
    let dep = Deployment::new(&llm_section(&llm.openai_url()));
    let text =
        std::fs::read_to_string(&dep.config).unwrap().replace("shutdown_grace_secs = 10", "shutdown_grace_secs = 1");
    std::fs::write(&dep.config, text).unwrap();
    let server = dep.serve().await;
    llm.on("too slow", Reply::text("late").first_byte_delay(Duration::from_secs(30)));
    llm.on("too slow", Reply::text("answered after the restart"));
    post(&dep.base(), "p", "too slow").await;
    assert!(llm.wait_for_requests(1, Duration::from_secs(10)).await);
    let status = server.terminate(Duration::from_secs(15)).await;
    assert!(status.success(), "exit {status:?}");
    assert_eq!(
        query(&dep.db_url(), "SELECT status FROM inbox").await,
        vec![vec!["pending".to_string()]],
        "parked, not lost"
    );
    let server = dep.serve().await;
    let mut got = Vec::new();
    for _ in 0..400 {
        got = messages(&dep.base(), "p").await.into_iter().filter(|m| m["role"] == "assistant").collect();
        if got.iter().any(|m| m["text"] == "answered after the restart") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["text"], "answered after the restart");
    drop(server);
}

#[tokio::test]
async fn ctrl_c_stops_serve_too() {
    let dep = Deployment::new("");
    let server = dep.serve().await;
    signal(server.child.id(), "INT");
    let status = server.wait_exit(Duration::from_secs(15)).await;
    assert!(status.success());
}

#[tokio::test]
async fn an_open_bot_is_an_explicit_choice_and_warned_about() {
    let dep = Deployment::new("[access]\npolicy = \"open\"\n");
    let server = dep.serve().await;
    let log = server.log_text();
    assert!(log.contains("WARN") && log.contains("policy = \"open\""), "{log}");
    let status = server.terminate(Duration::from_secs(15)).await;
    assert!(status.success());
    // The default is closed: no warning.
    let dep = Deployment::new("");
    let server = dep.serve().await;
    assert!(!server.log_text().contains("policy = \"open\""));
    server.terminate(Duration::from_secs(15)).await;
}
