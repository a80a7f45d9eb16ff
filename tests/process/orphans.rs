//! Background tasks outlive nothing silently (issue 34, point 4): with real `butler serve`
//! replicas on one Postgres and one Redis, a background task running on a replica that is
//! SIGKILLed and never comes back is reported "interrupted" to its owner by another replica's
//! reaper once its heartbeat has expired, exactly once.

use super::llm_section;
use super::replicas::{answers, wait_for};
use crate::support::cluster::Replicas;
use crate::support::fake_llm::{FakeLlm, Reply};
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_task_of_a_replica_killed_for_good_is_reported_interrupted_once() {
    let llm = FakeLlm::start().await;
    llm.on("look into", Reply::tool_call("delegate", json!({"task": "slow-research the market", "background": true})));
    llm.on("look into", Reply::text("started it"));
    // First (a report's text holds its task's words too): the report's turn.
    llm.on_every("Background task", Reply::text("noted: the research was cut off"));
    // The task's model call outlasts the test: it only ends with its replica.
    llm.on_every("slow-research", Reply::text("never seen").first_byte_delay(Duration::from_secs(120)));
    let mut set = Replicas::new(2, 1000, &llm_section(&llm.openai_url())).await;
    set.start_all().await;
    let (b0, b1) = (set.nodes[0].base(), set.nodes[1].base());
    let body = json!({"conversation": "bg1", "user": "local", "text": "look into the market"});
    let r = reqwest::Client::new().post(format!("{b0}/api/v1/messages")).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 202);
    let child_asked = || llm.requests().iter().any(|r| r.last_user_text().contains("slow-research"));
    wait_for("the task to run", 30, || set.logs(), async || child_asked() && answers(&b0, "bg1").await.len() == 1)
        .await;

    // The replica running it dies for good.
    let rows = super::query(&set.db.url, "SELECT worker, status FROM delegations").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0][1], "running");
    let runner = set.by_worker(&rows[0][0]).expect("the task records the replica running it");
    set.kill(runner);
    let other = if runner == 0 { &b1 } else { &b0 };
    let reported = async || answers(other, "bg1").await.iter().any(|a| a == "noted: the research was cut off");
    wait_for("the report", 60, || set.logs(), reported).await;

    // Once: one report reached the model, one answer, the row ended and handed over.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let reports: Vec<String> = llm
        .requests()
        .iter()
        .map(|r| r.last_user_text())
        .filter(|t| t.contains("Background task") && t.contains("ended (interrupted)"))
        .collect();
    assert_eq!(reports.len(), 1, "{reports:?}");
    let said = answers(other, "bg1").await;
    assert_eq!(said.iter().filter(|a| *a == "noted: the research was cut off").count(), 1, "{said:?}");
    let rows =
        super::query(&set.db.url, "SELECT status, CASE WHEN delivered_ms IS NULL THEN 0 ELSE 1 END FROM delegations")
            .await;
    assert_eq!(rows[0][0], "interrupted");
    assert_eq!(rows[0][1], "1", "handed over: {rows:?}");
}
