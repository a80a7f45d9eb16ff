//! Exactly once across processes: three real `butler serve` processes (each on its own port)
//! share one fresh Postgres database and all tick; jobs due a few seconds ahead (cron and
//! one-shot `at` jobs) and a `butler schedule run-now` each run once and are answered once.

use crate::support::db::PgTestDb;
use crate::support::fake_llm::FakeLlm;
use crate::support::proc::{Deployment, Server};
use crate::{eventually, put, set_next, spec};
use butler::store::{now_ms, RunQuery, RunStatus, Store};
use std::time::Duration;

fn deployment(pg: &str, llm: &str) -> Deployment {
    let dep = Deployment::new("");
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:{}\"\nshutdown_grace_secs = 5\n\n[database]\nurl = \"{pg}\"\n\n\
         [llm]\nprovider = \"openai\"\nbase_url = \"{llm}\"\nmodel = \"fake-model\"\nmax_retries = 0\n",
        dep.port
    );
    std::fs::write(&dep.config, text).unwrap();
    dep
}

async fn runs_of(store: &dyn Store, id: i64) -> Vec<butler::store::RunRow> {
    store.schedule_runs(&RunQuery::Of { schedule_id: id, limit: 10 }).await.unwrap()
}

async fn all_delivered(store: &dyn Store, ids: &[i64]) -> bool {
    for id in ids {
        let r = runs_of(store, *id).await;
        if r.is_empty() || r.iter().any(|x| x.status != RunStatus::Delivered) {
            return false;
        }
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_on_one_database_run_each_job_once() {
    let db = PgTestDb::create().await;
    let llm = FakeLlm::start().await;
    let deps: Vec<Deployment> = (0..3).map(|_| deployment(&db.url, &llm.openai_url())).collect();
    let mut servers: Vec<Server> = Vec::new();
    for dep in &deps {
        servers.push(dep.serve().await);
    }
    let store = butler::store::connect(&db.url, 4).await.unwrap();

    // Five cron jobs made due a few seconds ahead, two one-shots, one job run by hand.
    let now = now_ms();
    let mut ids = Vec::new();
    for i in 0..5 {
        let job = put(
            &*store,
            &spec(&format!("cron-{i}"), "0 0 1 1 *", "UTC", &format!("replica cron {i}"), "web:replicas"),
            "cli:local",
            None,
        )
        .await;
        set_next(&*store, job.id, now + 3_000 + i * 250).await;
        ids.push(job.id);
    }
    for i in 0..2 {
        let at = butler::schedule::cron::rfc3339(now + 3_500 + i * 500, chrono_tz::UTC);
        let job = put(
            &*store,
            &spec(&format!("at-{i}"), &at, "UTC", &format!("replica at {i}"), "web:replicas"),
            "cli:local",
            None,
        )
        .await;
        ids.push(job.id);
    }
    let manual =
        put(&*store, &spec("manual", "0 0 1 1 *", "UTC", "replica manual", "web:replicas"), "cli:local", None).await;
    ids.push(manual.id);
    let o = deps[1].command(&["schedule", "run-now", &manual.id.to_string()]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    eventually("every job delivered", || all_delivered(&*store, &ids)).await;
    // Keep all three ticking a while longer: nothing more may happen.
    tokio::time::sleep(Duration::from_secs(3)).await;

    for id in &ids {
        let r = runs_of(&*store, *id).await;
        assert_eq!(r.len(), 1, "job #{id} ran {} times: {r:?}", r.len());
    }
    let replies: Vec<String> = store
        .web_list("web:replicas", 0, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.role == "assistant")
        .map(|m| m.text)
        .collect();
    assert_eq!(replies.len(), 8, "one reply per run: {replies:#?}");
    for i in 0..5 {
        assert_eq!(replies.iter().filter(|t| t.contains(&format!("replica cron {i}"))).count(), 1);
    }
    for what in ["replica at 0", "replica at 1", "replica manual"] {
        assert_eq!(replies.iter().filter(|t| t.contains(what)).count(), 1, "{what}");
    }
    assert_eq!(crate::turns(&llm).len(), 8, "one turn per run");
    let fired: usize = servers.iter().map(|s| s.log_text().matches("job fired").count()).sum();
    assert_eq!(fired, 7, "the ticks of three processes claimed the 7 due fire times once");
    store.close().await;
    for s in servers {
        let status = s.terminate(Duration::from_secs(20)).await;
        assert!(status.success(), "{status}");
    }
    drop(db);
}
