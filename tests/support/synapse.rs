//! A real Synapse homeserver for the Matrix tests (`matrix-synapse` from PyPI, which `tests/run`
//! installs into a virtualenv; `BUTLER_TEST_SYNAPSE` names its python): one instance per test in
//! its own folder, SQLite, plain HTTP on a free port on 127.0.0.1, no federation, rate limits
//! raised so tests are not throttled; stopped when dropped. Users are registered with the shared
//! secret (`/_synapse/admin/v1/register`), as an operator would with `register_new_matrix_user`.
//!
//! It must never touch a port it did not pick.

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub const SERVER_NAME: &str = "hs.test";
const SHARED_SECRET: &str = "butler-test-registration-secret";

pub struct Synapse {
    pub port: u16,
    dir: tempfile::TempDir,
    child: Child,
}

fn python() -> String {
    std::env::var("BUTLER_TEST_SYNAPSE").unwrap_or_else(|_| {
        let home = std::env::var("HOME").unwrap_or_default();
        format!("{home}/.cache/butler/synapse/bin/python")
    })
}

fn limits(names: &[&str]) -> String {
    names.iter().map(|n| format!("  {n}: {{per_second: 10000, burst_count: 10000}}\n")).collect()
}

impl Synapse {
    pub async fn start() -> Self {
        let python = python();
        assert!(
            std::path::Path::new(&python).exists(),
            "Synapse is not installed at {python}: run tests/run (it installs matrix-synapse from PyPI)"
        );
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().display().to_string();
        let port = crate::support::proc::free_port();
        let seed: [u8; 32] = rand::random();
        use base64::Engine;
        let key = base64::engine::general_purpose::STANDARD_NO_PAD.encode(seed);
        std::fs::write(dir.path().join("signing.key"), format!("ed25519 a_test {key}\n")).unwrap();
        let flat = |name: &str| format!("{name}: {{per_second: 10000, burst_count: 10000}}\n");
        let config = format!(
            "server_name: \"{SERVER_NAME}\"\npid_file: {root}/homeserver.pid\n\
             listeners:\n  - port: {port}\n    bind_addresses: ['127.0.0.1']\n    type: http\n    tls: false\n    \
             x_forwarded: false\n    resources:\n      - names: [client]\n        compress: false\n\
             database:\n  name: sqlite3\n  args:\n    database: {root}/homeserver.db\n\
             media_store_path: {root}/media\nregistration_shared_secret: \"{SHARED_SECRET}\"\nreport_stats: false\n\
             macaroon_secret_key: \"test-macaroon\"\nform_secret: \"test-form\"\nsigning_key_path: {root}/signing.key\n\
             trusted_key_servers: []\nsuppress_key_server_warning: true\nenable_metrics: false\n\
             {}{}{}rc_login:\n{}rc_joins:\n{}rc_invites:\n{}rc_joins_per_room: {{per_second: 10000, burst_count: 10000}}\n",
            flat("rc_message"),
            flat("rc_registration"),
            flat("rc_admin_redaction"),
            limits(&["address", "account", "failed_attempts"]),
            limits(&["local", "remote"]),
            limits(&["per_room", "per_user", "per_issuer"]),
        );
        std::fs::write(dir.path().join("homeserver.yaml"), config).unwrap();
        let log = std::fs::File::create(dir.path().join("synapse.log")).unwrap();
        let child = Command::new(&python)
            .args(["-m", "synapse.app.homeserver", "-c"])
            .arg(dir.path().join("homeserver.yaml"))
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start Synapse");
        let me = Self { port, dir, child };
        me.wait_ready().await;
        me
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    async fn wait_ready(&self) {
        let http = reqwest::Client::new();
        for _ in 0..300 {
            if let Ok(r) = http.get(format!("{}/_matrix/client/versions", self.url())).send().await {
                if r.status().is_success() {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let log = std::fs::read_to_string(self.dir.path().join("synapse.log")).unwrap_or_default();
        panic!("Synapse did not start in 30 s:\n{}", log.lines().rev().take(30).collect::<Vec<_>>().join("\n"));
    }

    /// Registers `@local:hs.test` with `password` (the shared-secret admin API); its user id.
    pub async fn register(&self, local: &str, password: &str) -> String {
        let http = reqwest::Client::new();
        let url = format!("{}/_synapse/admin/v1/register", self.url());
        let nonce: Value = http.get(&url).send().await.unwrap().json().await.unwrap();
        let nonce = nonce["nonce"].as_str().unwrap().to_string();
        let mut mac = Hmac::<sha1::Sha1>::new_from_slice(SHARED_SECRET.as_bytes()).unwrap();
        mac.update(format!("{nonce}\0{local}\0{password}\0notadmin").as_bytes());
        let digest = hex::encode(mac.finalize().into_bytes());
        let body = json!({"nonce": nonce, "username": local, "password": password, "admin": false, "mac": digest});
        let resp = http.post(&url).json(&body).send().await.unwrap();
        let status = resp.status();
        let answer: Value = resp.json().await.unwrap();
        assert!(status.is_success(), "register {local}: {status} {answer}");
        answer["user_id"].as_str().unwrap().to_string()
    }

    /// The last lines of Synapse's log (for a failing test's message).
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("synapse.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().rev().take(40).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Synapse {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
