//! The real `butler` binary as a process: crash recovery (SIGKILL mid-turn), graceful shutdown,
//! the embedded default, `doctor`, `config check`, `migrate`, the terminal chat, and the deploy/ files
//! (checked statically and run with the Dockerfile runtime environment).

/// The Matrix tests' people (only the binaries that need matrix-sdk's client compile it).
#[cfg(feature = "matrix")]
#[path = "../support/matrix_person.rs"]
pub mod matrix_person;
#[path = "../support/mod.rs"]
mod support;

mod approvals;
mod backup;
mod chat;
mod cli;
mod crash;
mod delegate;
mod deploy;
mod faults;
mod faults_platforms;
mod first_run;
mod inbox;
mod init;
mod lifecycle;
#[cfg(feature = "matrix")]
mod matrix;
mod mcp;
mod orphans;
mod phones;
mod private;
mod replicas;
mod replicas_failure;
mod secrets;
mod skills;
mod streams;
mod telemetry;
mod workspace;

use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Rows of a query on the binary's database (SQLite or Postgres, by the URL's scheme), as
/// strings (`NULL` for what is neither text nor a number), for assertions on what it stored.
pub async fn query(db_url: &str, sql: &str) -> Vec<Vec<String>> {
    use sqlx::Row;
    macro_rules! render {
        ($rows:expr) => {
            $rows
                .iter()
                .map(|r| {
                    (0..r.len())
                        .map(|i| {
                            r.try_get::<String, _>(i)
                                .or_else(|_| r.try_get::<i64, _>(i).map(|n| n.to_string()))
                                .or_else(|_| r.try_get::<i32, _>(i).map(|n| n.to_string()))
                                .unwrap_or_else(|_| "NULL".into())
                        })
                        .collect()
                })
                .collect()
        };
    }
    let sql = sqlx::AssertSqlSafe(sql.to_string());
    if db_url.starts_with("postgres") {
        let pool = sqlx::PgPool::connect(db_url).await.expect("open the test database");
        let rows = sqlx::query(sql).fetch_all(&pool).await.expect("query");
        pool.close().await;
        return render!(rows);
    }
    let pool = sqlx::SqlitePool::connect(db_url).await.expect("open the test database");
    let rows = sqlx::query(sql).fetch_all(&pool).await.expect("query");
    pool.close().await;
    render!(rows)
}

/// The messages of a web conversation over HTTP.
pub async fn messages(base: &str, conv: &str) -> Vec<Value> {
    let url = format!("{base}/api/v1/conversations/{conv}/messages");
    match reqwest::get(url).await {
        Ok(r) if r.status() == 200 => {
            r.json::<Value>().await.unwrap()["messages"].as_array().cloned().unwrap_or_default()
        }
        _ => vec![],
    }
}

pub async fn post(base: &str, conv: &str, text: &str) -> Value {
    let body = serde_json::json!({"conversation": conv, "user": "local", "text": text});
    let r = reqwest::Client::new().post(format!("{base}/api/v1/messages")).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 202);
    r.json().await.unwrap()
}

pub fn llm_section(url: &str) -> String {
    format!("[llm]\nprovider = \"openai\"\nbase_url = \"{url}\"\nmodel = \"fake-model\"\nmax_retries = 0\n")
}

/// Polls the conversation until `pred` holds (30 s at most), naming `what` if it never does.
pub async fn wait_messages(base: &str, conv: &str, what: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let msgs = messages(base, conv).await;
        if pred(&msgs) {
            return msgs;
        }
        assert!(Instant::now() < deadline, "{what} never happened: {msgs:#?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The watchdog (`/metrics`): no turn or delivery stuck, none left running.
pub async fn assert_nothing_stuck(base: &str) {
    let metrics = reqwest::get(format!("{base}/metrics")).await.unwrap().text().await.unwrap();
    let gauge = |name: &str, work: &str| {
        let prefix = format!("{name}{{work=\"{work}\"}} ");
        metrics.lines().find_map(|l| l.strip_prefix(&prefix)).and_then(|v| v.trim().parse::<f64>().ok())
    };
    for work in ["turn", "delivery"] {
        assert_eq!(gauge("butler_work_stuck", work), Some(0.0), "{work} stuck\n{metrics}");
        assert_eq!(gauge("butler_work_in_flight", work), Some(0.0), "{work} left running\n{metrics}");
    }
}

/// The "approve once" action of the first approval request among `msgs`.
pub fn approve_action(msgs: &[Value]) -> Option<String> {
    msgs.iter()
        .flat_map(|m| m["buttons"].as_array().cloned().unwrap_or_default())
        .map(|b| b["action"].as_str().unwrap_or_default().to_string())
        .find(|a| a.starts_with("ap:") && a.ends_with(":once"))
}

/// A click on `action` in `conv`, as the web page sends it.
pub async fn click(base: &str, conv: &str, action: &str) {
    let body = json!({"conversation": conv, "user": "local", "action": action});
    let r = reqwest::Client::new().post(format!("{base}/api/v1/actions")).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 202);
}
