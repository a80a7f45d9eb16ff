//! `butler backup` and `butler restore` on the real binary: a backup taken while Butler serves
//! and writes is a consistent, checked copy; restore refuses while Butler runs, then (stopped)
//! puts the copy back, keeps the replaced database and migrates; what was written after the
//! backup is gone and what was before is back. Bad input changes nothing: an existing target,
//! a file that is not a database, a copy from a newer Butler, a Postgres URL (which names
//! pg_dump).

use super::{llm_section, post, query, wait_messages};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::proc::Deployment;

fn run(dep: &Deployment, args: &[&str]) -> (i32, String, String) {
    let out = dep.command(args).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_serving_restores_what_was_there() {
    let llm = FakeLlm::start().await;
    llm.set_default(Reply::echo());
    let dep = Deployment::new(&llm_section(&llm.openai_url()));
    let base = dep.base();
    let server = dep.serve().await;
    post(&base, "b1", "before the backup").await;
    wait_messages(&base, "b1", "the echo", |m| m.len() >= 2).await;

    // Taken while Butler keeps writing.
    let copy = dep.dir.path().join("copy.db");
    let writer = {
        let base = base.clone();
        tokio::spawn(async move {
            for i in 0..10 {
                post(&base, "b2", &format!("during {i}")).await;
            }
        })
    };
    let (code, out, err) = run(&dep, &["backup", copy.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("backup: wrote") && out.contains("schema version"), "{out}");
    writer.await.unwrap();
    let copied = query(
        &format!("sqlite://{}", copy.display()),
        "SELECT text FROM web_messages WHERE conversation = 'web:b1' ORDER BY id",
    )
    .await;
    assert_eq!(copied.len(), 2, "the copy holds the conversation: {copied:?}");

    // Bad input: (arguments, exit code, what the error says).
    std::fs::write(dep.dir.path().join("junk.db"), b"this is not a database").unwrap();
    let junk = dep.dir.path().join("junk.db");
    let cases = [
        (vec!["backup", copy.to_str().unwrap()], 1, "already exists"),
        (vec!["restore", junk.to_str().unwrap()], 1, "is running"),
    ];
    for (args, want, says) in cases {
        let (code, out, err) = run(&dep, &args);
        assert_eq!(code, want, "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    post(&base, "b3", "after the backup").await;
    wait_messages(&base, "b3", "the echo", |m| m.len() >= 2).await;
    server.terminate(std::time::Duration::from_secs(20)).await;

    // Stopped: bad copies change nothing.
    let db = dep.db_url();
    let before = query(&db, "SELECT count(*) FROM web_messages").await;
    let (code, _, err) = run(&dep, &["restore", junk.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not a usable Butler database"), "{err}");
    let newer = dep.dir.path().join("newer.db");
    std::fs::copy(&copy, &newer).unwrap();
    let newer_url = format!("sqlite://{}", newer.display());
    query(&newer_url, "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (99990101000000, 'from the future', TRUE, x'00', 0) RETURNING version").await;
    let (code, _, err) = run(&dep, &["restore", newer.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("newer Butler") && err.contains("99990101000000"), "{err}");
    assert_eq!(query(&db, "SELECT count(*) FROM web_messages").await, before, "nothing changed");

    // The real restore.
    let (code, out, err) = run(&dep, &["restore", copy.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("is in place") && out.contains("kept as"), "{out}");
    let server = dep.serve().await;
    let b1 = wait_messages(&base, "b1", "the old conversation", |m| m.len() == 2).await;
    assert_eq!(b1[0]["text"], "before the backup");
    let b3 = super::messages(&base, "b3").await;
    assert!(b3.is_empty(), "written after the backup: gone with the restore: {b3:?}");
    drop(server);
    let kept: Vec<_> = std::fs::read_dir(dep.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".before-restore-"))
        .collect();
    assert!(!kept.is_empty(), "the replaced database is kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_is_backed_up_with_pg_dump() {
    let dep = Deployment::new("");
    let text = std::fs::read_to_string(&dep.config).unwrap();
    let pg = text.replace(
        &format!("url = \"{}\"", dep.db_url()),
        "url = \"postgres://postgres:secret-pw@127.0.0.1:5432/butler\"",
    );
    std::fs::write(&dep.config, pg).unwrap();
    for args in [vec!["backup", "x.dump"], vec!["restore", "x.dump"]] {
        let (code, out, err) = run(&dep, &args);
        assert_eq!(code, 1, "{args:?}: {out}{err}");
        assert!(err.contains("pg_dump") && err.contains("pg_restore"), "{args:?}: {err}");
        assert!(!err.contains("secret-pw"), "no password in errors: {err}");
    }
}
