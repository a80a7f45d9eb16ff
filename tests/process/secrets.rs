//! Secrets never leave Butler, and forged requests cannot flood its log: the real binary runs
//! every channel (Telegram in webhook mode, Slack over HTTP and Socket Mode, Discord with its
//! interactions endpoint, the web chat with a token, a signed trigger, an LLM key, a Postgres
//! URL with a password) against the fakes, with a distinctive canary for every secret and
//! `RUST_LOG=trace`. After some traffic, none of the canaries appears in its stdout or stderr,
//! in `butler config check`, `GET /metrics` or `GET /api/v1/info`. Then forged requests to each
//! signed endpoint: the later ones get 429 and the log gets one WARN line per endpoint and
//! address, not one per request.
//!
//! These tests must never print a canary themselves except in a failure message that says
//! where it leaked.

use crate::support::db::{pg_admin_url, with_database, PgTestDb};
use crate::support::fake_discord::FakeDiscord;
use crate::support::fake_llm::FakeLlm;
use crate::support::fake_slack::{FakeSlack, APP_TOKEN, BOT_TOKEN};
use crate::support::fake_telegram::FakeTelegram;
use crate::support::proc::without_ansi;
use crate::support::proc::{clean_command, free_port, Server};
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;
use sqlx::{AssertSqlSafe, Connection, Executor, PgConnection};
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const TELEGRAM_TOKEN: &str = "7000000001:tgCanaryToken5f3a9e";
const TELEGRAM_HOOK_SECRET: &str = "tgCanaryHookSecret8c1d";
const SLACK_SIGNING_SECRET: &str = "slackCanarySigning2b7e";
const TRIGGER_SECRET: &str = "hookCanaryHmac6a4f";
const LLM_KEY: &str = "sk-llmCanaryKey9e0b";
const WEB_TOKEN: &str = "webCanaryToken3d8c";
const PG_PASSWORD: &str = "pgCanaryPassword7f21";
/// Ed25519 public key of RFC 8032 TEST 1 (public, not a secret).
const DISCORD_PUBLIC_KEY: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

/// Every secret the deployment holds; the fakes' fixed tokens are distinctive enough too.
const CANARIES: &[&str] = &[
    TELEGRAM_TOKEN,
    "tgCanaryToken5f3a9e",
    TELEGRAM_HOOK_SECRET,
    SLACK_SIGNING_SECRET,
    TRIGGER_SECRET,
    LLM_KEY,
    WEB_TOKEN,
    PG_PASSWORD,
    BOT_TOKEN,
    APP_TOKEN,
    crate::support::fake_discord::TOKEN,
];

/// A Postgres login role with a canary password owning a fresh database; dropped after it.
struct PgCanary {
    db: Option<PgTestDb>,
    role: String,
    url: String,
}

impl PgCanary {
    async fn create() -> Self {
        let role = format!("butler_canary_{}_{:08x}", std::process::id(), rand::random::<u32>());
        let db = PgTestDb::create().await;
        let mut conn = PgConnection::connect(&pg_admin_url()).await.expect("Postgres for tests");
        for sql in [
            format!("CREATE ROLE \"{role}\" LOGIN PASSWORD '{PG_PASSWORD}'"),
            format!("ALTER DATABASE \"{}\" OWNER TO \"{role}\"", db.name),
        ] {
            conn.execute(AssertSqlSafe(sql.clone())).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        let _ = conn.close().await;
        let url = with_database(&format!("postgres://{role}:{PG_PASSWORD}@127.0.0.1:5432/x"), &db.name);
        Self { db: Some(db), role, url }
    }
}

impl Drop for PgCanary {
    fn drop(&mut self) {
        drop(self.db.take());
        let (admin, sql) = (pg_admin_url(), format!("DROP ROLE IF EXISTS \"{}\"", self.role));
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                if let Ok(mut conn) = PgConnection::connect(&admin).await {
                    let _ = conn.execute(AssertSqlSafe(sql)).await;
                    let _ = conn.close().await;
                }
            });
        })
        .join();
    }
}

/// The running deployment and everything it talks to.
struct Rig {
    dir: tempfile::TempDir,
    port: u16,
    config: std::path::PathBuf,
    server: Server,
    out_log: std::path::PathBuf,
    _pg: PgCanary,
    _fakes: (FakeTelegram, FakeSlack, FakeDiscord, FakeLlm),
}

impl Rig {
    async fn start() -> Self {
        let (telegram, slack, discord, llm) =
            (FakeTelegram::start(TELEGRAM_TOKEN).await, FakeSlack::start().await, FakeDiscord::start().await, {
                FakeLlm::start().await
            });
        let pg = PgCanary::create().await;
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let config = dir.path().join("butler.toml");
        let text = format!(
            r#"[server]
listen = "127.0.0.1:{port}"
shutdown_grace_secs = 5

[database]
url = "{db}"

[memory]
archivist = false

[llm]
provider = "openai"
base_url = "{llm}"
api_key = "{LLM_KEY}"
model = "fake-model"
max_retries = 0

[channels.web]
token = "{WEB_TOKEN}"

[channels.telegram]
token = "{TELEGRAM_TOKEN}"
api_url = "{tg}"
mode = "webhook"
webhook_secret = "{TELEGRAM_HOOK_SECRET}"
webhook_url = "https://butler.example/channels/telegram/webhook"

[channels.slack]
bot_token = "{BOT_TOKEN}"
signing_secret = "{SLACK_SIGNING_SECRET}"
app_token = "{APP_TOKEN}"
api_url = "{slack}"

[channels.discord]
token = "{dc_token}"
public_key = "{DISCORD_PUBLIC_KEY}"
api_url = "{dc}"

[[triggers]]
name = "deploys"
secret = "{TRIGGER_SECRET}"
signature = "butler"
"#,
            db = pg.url,
            llm = llm.openai_url(),
            tg = telegram.api_url(),
            slack = slack.api_url(),
            dc_token = crate::support::fake_discord::TOKEN,
            dc = discord.url(),
        );
        std::fs::write(&config, text).unwrap();
        let (out_log, err_log) = (dir.path().join("serve.out"), dir.path().join("serve.err"));
        let child = clean_command(dir.path())
            .env("RUST_LOG", "trace")
            .args(["serve", "--config"])
            .arg(&config)
            .stdout(Stdio::from(std::fs::File::create(&out_log).unwrap()))
            .stderr(Stdio::from(std::fs::File::create(&err_log).unwrap()))
            .spawn()
            .expect("spawn butler serve");
        let mut server = Server { child, log: err_log };
        server.wait_ready(&format!("http://127.0.0.1:{port}")).await;
        Self { dir, port, config, server, out_log, _pg: pg, _fakes: (telegram, slack, discord, llm) }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    async fn post(&self, path: &str, headers: &[(&str, String)], body: &[u8]) -> (u16, String) {
        let mut req = reqwest::Client::new().post(self.url(path)).body(body.to_vec());
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let r = req.send().await.expect("post");
        (r.status().as_u16(), r.text().await.unwrap_or_default())
    }

    async fn get(&self, path: &str) -> String {
        let r = reqwest::Client::new().get(self.url(path)).bearer_auth(WEB_TOKEN).send().await.expect("get");
        assert_eq!(r.status(), 200, "GET {path}");
        r.text().await.unwrap()
    }

    /// Stops the server and returns everything it wrote (stdout, then stderr).
    async fn stop(self) -> String {
        let log = self.server.log.clone();
        self.server.terminate(Duration::from_secs(20)).await;
        let out = std::fs::read_to_string(&self.out_log).unwrap_or_default();
        let rest = std::fs::read_to_string(&log).unwrap_or_default();
        format!("{out}{rest}")
    }
}

fn now_secs() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

fn hmac_hex(secret: &str, parts: &[&[u8]]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    for p in parts {
        mac.update(p);
    }
    hex::encode(mac.finalize().into_bytes())
}

/// Says where a canary leaked (by its position in [`CANARIES`], never its value).
fn leaks(place: &str, text: &str) -> Vec<String> {
    CANARIES
        .iter()
        .enumerate()
        .filter(|(_, c)| text.contains(*c))
        .map(|(i, _)| format!("secret #{i} appears in {place}"))
        .collect()
}

#[tokio::test]
async fn no_secret_reaches_the_log_config_check_metrics_or_info() {
    let rig = Rig::start().await;
    let mut found = Vec::new();

    // Traffic on every path that holds a secret: a web message (the LLM key is used), a signed
    // trigger, a Telegram update with the right secret and one with a wrong one, forged Slack
    // and Discord requests.
    let msg = json!({"conversation": "c1", "text": "hello"});
    let r = reqwest::Client::new().post(rig.url("/api/v1/messages")).bearer_auth(WEB_TOKEN).json(&msg).send().await;
    assert_eq!(r.unwrap().status(), 202);
    let body = br#"{"service":"api","status":"deployed"}"#;
    let ts = now_secs();
    let signed = vec![
        ("x-butler-timestamp", ts.to_string()),
        (
            "x-butler-signature-256",
            format!("sha256={}", hmac_hex(TRIGGER_SECRET, &[ts.to_string().as_bytes(), b".", body])),
        ),
        ("content-type", "application/json".to_string()),
    ];
    assert_eq!(rig.post("/hooks/deploys", &signed, body).await.0, 202);
    let update = json!({"update_id": 5001, "message": {"message_id": 1, "date": ts, "chat": {"id": 42, "type": "private"},
        "from": {"id": 42, "is_bot": false, "first_name": "Alice"}, "text": "hi"}});
    let update = serde_json::to_vec(&update).unwrap();
    let secret = [("x-telegram-bot-api-secret-token", TELEGRAM_HOOK_SECRET.to_string())];
    assert_eq!(rig.post("/channels/telegram/webhook", &secret, &update).await.0, 200);
    let wrong = [("x-telegram-bot-api-secret-token", "nope".to_string())];
    assert_eq!(rig.post("/channels/telegram/webhook", &wrong, &update).await.0, 401);
    let slack =
        [("x-slack-request-timestamp", ts.to_string()), ("x-slack-signature", format!("v0={}", "0".repeat(64)))];
    assert_eq!(rig.post("/channels/slack/events", &slack, b"{}").await.0, 401);
    assert_eq!(rig.post("/channels/discord/interactions", &[], b"{}").await.0, 401);
    tokio::time::sleep(Duration::from_millis(500)).await;

    let metrics = rig.get("/metrics").await;
    assert!(metrics.contains("butler_"), "{metrics}");
    found.extend(leaks("GET /metrics", &metrics));
    let info = rig.get("/api/v1/info").await;
    assert!(serde_json::from_str::<Value>(&info).is_ok(), "{info}");
    found.extend(leaks("GET /api/v1/info", &info));

    let check = clean_command(rig.dir.path())
        .env("RUST_LOG", "trace")
        .args(["config", "check", "--config"])
        .arg(&rig.config)
        .output()
        .expect("butler config check");
    let check_text = format!("{}{}", String::from_utf8_lossy(&check.stdout), String::from_utf8_lossy(&check.stderr));
    assert!(check.status.success() && check_text.contains("[channels.telegram]"), "{check_text}");
    found.extend(leaks("`butler config check`", &check_text));

    let log = rig.stop().await;
    // The log is the real thing: trace level, and the line that once printed the secret.
    assert!(log.contains("Telegram channel registered") && log.contains("TRACE"), "{}", &log[..log.len().min(4000)]);
    found.extend(leaks("the serve log (stdout and stderr)", &log));
    assert!(found.is_empty(), "{found:#?}");
}

#[tokio::test]
async fn forged_requests_are_rate_limited_per_address_and_logged_in_aggregate() {
    let rig = Rig::start().await;
    const N: usize = 45;
    let ts = now_secs().to_string();
    let forged: Vec<(&str, Vec<(&str, String)>)> = vec![
        (
            "/hooks/deploys",
            vec![("x-butler-timestamp", ts.clone()), ("x-butler-signature-256", format!("sha256={}", "ab".repeat(32)))],
        ),
        (
            "/channels/slack/events",
            vec![("x-slack-request-timestamp", ts.clone()), ("x-slack-signature", format!("v0={}", "0".repeat(64)))],
        ),
        (
            "/channels/discord/interactions",
            vec![("x-signature-ed25519", "00".repeat(64)), ("x-signature-timestamp", ts.clone())],
        ),
        ("/channels/telegram/webhook", vec![("x-telegram-bot-api-secret-token", "guess".into())]),
    ];
    for (path, headers) in &forged {
        let mut statuses = Vec::new();
        for _ in 0..N {
            let (status, body) = rig.post(path, headers, b"{}").await;
            let code = serde_json::from_str::<Value>(&body).map(|v| v["error"]["code"].clone()).unwrap_or_default();
            assert!(code.is_string(), "{path}: a JSON error, got {body}");
            statuses.push(status);
        }
        let refused = statuses.iter().filter(|s| **s == 401).count();
        let limited = statuses.iter().filter(|s| **s == 429).count();
        assert_eq!((refused, limited), (30, N - 30), "{path}: {statuses:?}");
        assert!(statuses[..30].iter().all(|s| *s == 401), "{path}: the first ones are plain refusals");
    }
    // A genuine request from the same address still goes through.
    let body = br#"{"ok":true}"#;
    let now = now_secs();
    let signed = vec![
        ("x-butler-timestamp", now.to_string()),
        (
            "x-butler-signature-256",
            format!("sha256={}", hmac_hex(TRIGGER_SECRET, &[now.to_string().as_bytes(), b".", body])),
        ),
    ];
    assert_eq!(rig.post("/hooks/deploys", &signed, body).await.0, 202);

    let log = without_ansi(&rig.stop().await);
    let warns: Vec<&str> = log.lines().filter(|l| l.contains("WARN") && l.contains("refused")).collect();
    // One line per endpoint and address in the minute, each with its count, for 4 * 45 requests.
    assert_eq!(warns.len(), forged.len(), "{warns:#?}");
    assert!(warns.iter().all(|l| l.contains("refused=1") && l.contains("127.0.0.1")), "{warns:#?}");
}

/// Butler's environment (its API keys) and memory are unreadable to the programs it starts and
/// to any other process of its user (issue 36): an MCP server read `/proc/<Butler>/environ`.
/// The reader is a process of the same user without CAP_SYS_PTRACE. As root every process here
/// runs with its capabilities dropped (Butler, the control process and the reader alike: a full
/// root process is closed to a capless one whatever its flag, so only this compares like with
/// like). The reader reads a dumpable control process's environ, and Butler's not.
#[tokio::test]
async fn butlers_environment_is_unreadable_through_proc() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = dir.path().join("butler.toml");
    std::fs::write(&config, format!("[server]\nlisten = \"127.0.0.1:{port}\"\n")).unwrap();
    // `program args` with no capabilities as root, as it is otherwise.
    let capless = |program: &str| {
        if as_root() {
            let mut c = std::process::Command::new("setpriv");
            c.args(["--bounding-set", "-all", "--inh-caps", "-all", program]);
            c
        } else {
            std::process::Command::new(program)
        }
    };
    let mut cmd = capless(crate::support::proc::binary());
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("BUTLER_PROC_CANARY", LLM_KEY)
        .current_dir(dir.path())
        .args(["serve", "--config"])
        .arg(&config);
    let server = Server::start(cmd, dir.path().join("serve.log"), &format!("http://127.0.0.1:{port}")).await;
    let read_as_peer = |pid: u32| capless("cat").arg(format!("/proc/{pid}/environ")).output().expect("run the reader");
    // The reader works: a dumpable process of the same user (a plain `sleep`) is readable.
    let mut plain = capless("sleep").arg("30").env("BUTLER_PROC_CANARY", "visible").spawn().unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let out = read_as_peer(plain.id());
    plain.kill().ok();
    plain.wait().ok();
    assert!(String::from_utf8_lossy(&out.stdout).contains("BUTLER_PROC_CANARY=visible"), "{out:?}");
    // Butler's is not.
    let out = read_as_peer(server.child.id());
    assert!(!out.status.success(), "the read should fail");
    let seen = String::from_utf8_lossy(&out.stdout);
    assert!(seen.is_empty() && !seen.contains(LLM_KEY), "Butler's environment was readable through /proc");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Permission denied"), "{out:?}");
}

/// Whether this test runs as root (then the reader drops its capabilities first).
fn as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .is_some_and(|l| l.split_whitespace().nth(1) == Some("0"))
}
