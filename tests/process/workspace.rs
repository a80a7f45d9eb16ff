//! What replicas must share, with real `butler serve` replicas on one Postgres and one Redis
//! (issue 34, points 1 and 3): a replica whose `[tools] workspace_dir` is not the running
//! replicas' folder refuses to start, naming the folder and what to do; on one folder a file
//! uploaded through one replica is attached to a message posted to another and reaches the
//! model. A replica whose config differs says which sections (log, `/metrics`, `doctor`) and
//! stays ready.

use super::llm_section;
use super::replicas::{answers, metric, wait_for};
use crate::support::cluster::Replicas;
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::proc::clean_command;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

fn append(config: &Path, text: &str) {
    let mut all = std::fs::read_to_string(config).unwrap();
    all.push_str(text);
    std::fs::write(config, all).unwrap();
}

fn workspace(dir: &Path) -> String {
    format!("\n[tools]\nworkspace_dir = \"{}\"\n", dir.display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_on_another_workspace_refuses_to_start_and_one_on_the_same_reads_the_others_uploads() {
    let llm = FakeLlm::start().await;
    llm.on("read the notes", Reply::text("read them"));
    let mut set = Replicas::new(2, 1000, &llm_section(&llm.openai_url())).await;
    let (shared, other) = (set.dir.path().join("shared-workspace"), set.dir.path().join("other-workspace"));
    append(&set.nodes[0].config, &workspace(&shared));
    let second = std::fs::read_to_string(&set.nodes[1].config).unwrap();
    append(&set.nodes[1].config, &workspace(&other));
    set.start(0).await;

    // Another folder: no start, and the reason names the folder and the fix.
    let mut cmd = clean_command(set.dir.path());
    cmd.arg("serve").arg("--config").arg(&set.nodes[1].config);
    let out = tokio::time::timeout(Duration::from_secs(60), tokio::task::spawn_blocking(move || cmd.output()))
        .await
        .expect("it stops by itself")
        .unwrap()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "it must not run: {said}");
    assert!(said.contains(&other.display().to_string()) && said.contains("workspace_dir"), "{said}");
    assert!(said.contains("is not the one the running replica") && said.contains("NFS"), "{said}");

    // The same folder: it starts, and an upload through replica 0 is read by a turn on replica 1.
    std::fs::write(&set.nodes[1].config, format!("{second}{}", workspace(&shared))).unwrap();
    set.start(1).await;
    let (b0, b1) = (set.nodes[0].base(), set.nodes[1].base());
    let http = reqwest::Client::new();
    let r = http.post(format!("{b0}/api/v1/files?user=local&name=notes.txt")).body("the code is 4711").send().await;
    let r = r.unwrap();
    assert_eq!(r.status(), 201);
    let file: Value = r.json().await.unwrap();
    let body = json!({"conversation": "ws1", "user": "local", "text": "read the notes", "files": [file["id"]]});
    let r = http.post(format!("{b1}/api/v1/messages")).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap());
    wait_for("the answer", 30, || set.logs(), async || answers(&b0, "ws1").await == ["read them"]).await;
    let asked = llm.last_request().unwrap().last_user_text();
    assert!(asked.contains("the code is 4711"), "the file reached the model: {asked}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_with_another_config_names_the_sections_and_stays_ready() {
    let llm = FakeLlm::start().await;
    let mut set = Replicas::new(2, 1000, &llm_section(&llm.openai_url())).await;
    append(&set.nodes[1].config, "\n[limits]\nmax_iterations = 7\n");
    set.start_all().await;
    let log = || set.logs();
    assert!(
        log().contains("config differs from running replicas' in these sections") && log().contains("sections=limits"),
        "{}",
        log()
    );
    let (b0, b1) = (set.nodes[0].base(), set.nodes[1].base());
    assert_eq!(metric(&b1, "butler_replica_config_differing_sections").await, 1.0);
    assert_eq!(metric(&b0, "butler_replica_config_differing_sections").await, 0.0);
    assert_eq!(reqwest::get(format!("{b1}/readyz")).await.unwrap().status(), 200, "still ready");
    // `butler doctor` with either config says whether it is the running replicas'.
    for (i, want) in
        [(1, "differs from the running replicas' in: limits"), (0, "differs from the running replicas' in: limits")]
    {
        let out =
            clean_command(set.dir.path()).arg("doctor").arg("--config").arg(&set.nodes[i].config).output().unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(said.contains(want), "doctor with replica {i}'s config: {said}");
    }
    let same = set.dir.path().join("same.toml");
    std::fs::copy(&set.nodes[0].config, &same).unwrap();
    set.kill(1);
    wait_for(
        "replica 1 to be gone",
        10,
        || set.logs(),
        async || {
            let out = clean_command(set.dir.path()).arg("doctor").arg("--config").arg(&same).output().unwrap();
            String::from_utf8_lossy(&out.stdout).contains("the same as the 1 running replica(s)")
        },
    )
    .await;
}
