//! Private by default (issue 30, point 6), through the real binary: everything `butler serve`
//! and `butler backup` create is its user's alone (a data folder made 0700; the database,
//! workspaces, uploads and a backup 0600/0700, whatever the caller's umask), and `serve` says
//! which config file it read and why, and warns about another one it does not read.

use crate::support::proc::{clean_command, free_port, Server};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_butler_creates_is_private_and_it_says_which_config_it_read() {
    let home = tempfile::tempdir().unwrap();
    let (cwd, data) = (home.path().join("work"), home.path().join("data"));
    let port = free_port();
    let local = cwd.join("config/butler.toml");
    let mine = home.path().join(".config/butler/butler.toml");
    for file in [&local, &mine] {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, format!("[server]\nlisten = \"127.0.0.1:{port}\"\n\n[memory]\narchivist = false\n"))
            .unwrap();
    }
    let command = |args: &[&str]| {
        let mut cmd = clean_command(&cwd);
        cmd.args(args).env("HOME", home.path()).env("BUTLER_DATA_DIR", &data);
        cmd
    };
    let base = format!("http://127.0.0.1:{port}");
    let server = Server::start(command(&["serve"]), home.path().join("serve.log"), &base).await;

    // An upload lands in the web file store under the workspace.
    let r = reqwest::Client::new()
        .post(format!("{base}/api/v1/files?name=note.txt&user=local"))
        .header("Content-Type", "text/plain")
        .body("a private note")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap_or_default());

    let uploads = data.join("workspaces/.web-files");
    let mut files: Vec<_> = std::fs::read_dir(&uploads).unwrap().flatten().map(|e| e.path()).collect();
    files.retain(|p| p.is_file());
    assert!(!files.is_empty(), "the upload is stored under {}", uploads.display());
    // (what, path, mode)
    let mut cases = vec![
        ("the data folder", data.clone(), 0o700),
        ("the database", data.join("butler.db"), 0o600),
        ("the workspaces", data.join("workspaces"), 0o700),
        ("the uploads", uploads.clone(), 0o700),
    ];
    cases.extend(files.iter().map(|f| ("an upload", f.clone(), 0o600)));
    for (what, path, want) in &cases {
        assert_eq!(mode(path), *want, "{what}: {} is {:o}", path.display(), mode(path));
    }

    let log = server.log_text();
    let said = format!("config file {}: config/butler.toml in the working directory", local.display());
    assert!(log.contains(&said), "serve says which file and why: {log}");
    let warned = format!("{} is a config file too and is not read", mine.display());
    assert!(log.contains(&warned), "serve warns about the other file: {log}");
    assert!(server.terminate(Duration::from_secs(20)).await.success());

    let copy = home.path().join("backup.db");
    let out = command(&["backup", copy.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(mode(&copy), 0o600, "a backup is private too");
}
