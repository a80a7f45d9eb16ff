//! The file tools: read / list / write / edit inside the workspace, and every way out refused
//! (`..`, absolute paths, symlinks to outside for reading and writing, NUL bytes), with the
//! outside directory checked to be untouched.

use crate::{err_text, pick, Harness};
use butler::config::FilesConfig;
use butler::tools::builtin::file_tools;
use butler::tools::Tool;
use serde_json::{json, Value};
use std::os::unix::fs::symlink;
use std::sync::Arc;

fn tools() -> Vec<Arc<dyn Tool>> {
    file_tools(&FilesConfig { enabled: true, max_read_bytes: 1000, max_write_bytes: 2000 }, 0)
}

#[tokio::test]
async fn read_list_write_edit() {
    let h = Harness::new().await;
    let t = tools();
    let (read, list, write, edit) =
        (pick(&t, "file_read"), pick(&t, "file_list"), pick(&t, "file_write"), pick(&t, "file_edit"));
    assert!(read.spec().read_only && list.spec().read_only);
    assert!(!write.spec().read_only && !edit.spec().read_only);

    // The workspace does not exist yet: list creates it and finds it empty.
    assert_eq!(h.call(&*list, json!({})).await.unwrap(), "`.` is empty");
    let out = h.call(&*write, json!({"path": "notes/todo.md", "content": "one\ntwo\nthree\n"})).await.unwrap();
    assert_eq!(out, "Wrote 14 bytes to notes/todo.md.");
    let ws = h.workspace();
    assert_eq!(std::fs::read_to_string(ws.join("notes/todo.md")).unwrap(), "one\ntwo\nthree\n");
    assert_eq!(h.call(&*read, json!({"path": "notes/todo.md"})).await.unwrap(), "one\ntwo\nthree\n");
    assert_eq!(
        h.call(&*read, json!({"path": "./notes//todo.md", "offset": 2, "limit": 1})).await.unwrap(),
        "two\n[more lines follow; read on with offset=3]"
    );
    assert_eq!(h.call(&*list, json!({"path": "."})).await.unwrap(), "notes/");
    assert_eq!(h.call(&*list, json!({"path": "notes"})).await.unwrap(), "todo.md (14 bytes)");

    let out = h.call(&*edit, json!({"path": "notes/todo.md", "old": "two", "new": "2"})).await.unwrap();
    assert_eq!(out, "Replaced 1 occurrence in notes/todo.md.");
    assert_eq!(std::fs::read_to_string(ws.join("notes/todo.md")).unwrap(), "one\n2\nthree\n");
    // Overwrite, then edit all.
    h.call(&*write, json!({"path": "notes/todo.md", "content": "a-a-a"})).await.unwrap();
    let out =
        h.call(&*edit, json!({"path": "notes/todo.md", "old": "a", "new": "b", "replace_all": true})).await.unwrap();
    assert_eq!(out, "Replaced 3 occurrences in notes/todo.md.");
    assert_eq!(std::fs::read_to_string(ws.join("notes/todo.md")).unwrap(), "b-b-b");
    // No temporary files are left behind.
    assert_eq!(h.call(&*list, json!({"path": "notes"})).await.unwrap(), "todo.md (5 bytes)");

    // A symlink that stays inside the workspace is fine.
    symlink(ws.join("notes"), ws.join("inside-link")).unwrap();
    assert_eq!(h.call(&*read, json!({"path": "inside-link/todo.md"})).await.unwrap(), "b-b-b");
    h.call(&*write, json!({"path": "inside-link/new.txt", "content": "x"})).await.unwrap();
    assert_eq!(std::fs::read_to_string(ws.join("notes/new.txt")).unwrap(), "x");
}

#[tokio::test]
async fn edit_errors() {
    let h = Harness::new().await;
    let t = tools();
    let (write, edit) = (pick(&t, "file_write"), pick(&t, "file_edit"));
    h.call(&*write, json!({"path": "f.txt", "content": "same same"})).await.unwrap();
    let e = err_text(h.call(&*edit, json!({"path": "f.txt", "old": "same", "new": "x"})).await);
    assert!(e.contains("occurs 2 times") && e.contains("replace_all"), "{e}");
    let e = err_text(h.call(&*edit, json!({"path": "f.txt", "old": "absent", "new": "x"})).await);
    assert!(e.contains("not found"), "{e}");
    let e = err_text(h.call(&*edit, json!({"path": "f.txt", "old": "", "new": "x"})).await);
    assert!(e.contains("empty"), "{e}");
    let e = err_text(h.call(&*edit, json!({"path": "missing.txt", "old": "a", "new": "x"})).await);
    assert!(e.contains("does not exist"), "{e}");
    assert_eq!(std::fs::read_to_string(h.workspace().join("f.txt")).unwrap(), "same same");
}

#[tokio::test]
async fn size_limits() {
    let h = Harness::new().await;
    let t = tools();
    let (read, write) = (pick(&t, "file_read"), pick(&t, "file_write"));
    let e = err_text(h.call(&*write, json!({"path": "big.txt", "content": "x".repeat(2001)})).await);
    assert!(e.contains("max_write_bytes"), "{e}");
    assert!(!h.workspace().join("big.txt").exists());
    let lines: String = (0..300).map(|i| format!("line {i:03}\n")).collect(); // 9 bytes a line
    std::fs::write(h.workspace().join("long.txt"), &lines).unwrap();
    let out = h.call(&*read, json!({"path": "long.txt"})).await.unwrap();
    assert!(out.ends_with("[… cut at 1000 bytes (files.max_read_bytes); read on with offset=112]"), "{out}");
    assert!(out.starts_with("line 000\n"));
    let next = h.call(&*read, json!({"path": "long.txt", "offset": 112, "limit": 2})).await.unwrap();
    assert_eq!(next, "line 111\nline 112\n[more lines follow; read on with offset=114]");
}

/// Arguments of one tool for a path.
type MakeArgs = fn(&str) -> Value;

#[tokio::test]
async fn path_escapes_are_refused() {
    let h = Harness::new().await;
    let t = tools();
    let ws = h.workspace();
    // A directory next to the workspace, with a file the model must never see or change.
    let outside = h.tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "outside secret").unwrap();
    symlink(&outside, ws.join("link_out")).unwrap();
    symlink(outside.join("secret.txt"), ws.join("file_link_out")).unwrap();
    symlink(outside.join("not-yet.txt"), ws.join("dangling_out")).unwrap();
    symlink("/etc", ws.join("etc_link")).unwrap();
    std::fs::create_dir_all(ws.join("a")).unwrap();

    let paths = [
        "../outside/secret.txt",
        "../x",
        "a/../../x",
        "a/../../outside/secret.txt",
        "/etc/passwd",
        "/",
        "~/x",
        "link_out",
        "link_out/secret.txt",
        "link_out/new.txt",
        "file_link_out",
        "dangling_out",
        "etc_link/passwd",
        "a/b\0c",
    ];
    let ops: [(&str, MakeArgs); 4] = [
        ("file_read", |p| json!({ "path": p })),
        ("file_list", |p| json!({ "path": p })),
        ("file_write", |p| json!({"path": p, "content": "pwned"})),
        ("file_edit", |p| json!({"path": p, "old": "outside", "new": "pwned"})),
    ];
    for (name, args) in ops {
        let tool = pick(&t, name);
        for path in paths {
            let e = err_text(h.call(&*tool, args(path)).await);
            assert!(e.contains("refused"), "{name} {path:?}: {e}");
            assert!(!e.contains("outside secret"), "{name} {path:?} leaked: {e}");
        }
    }
    // Nothing outside changed or appeared, and the symlinks are still symlinks.
    assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).unwrap(), "outside secret");
    let mut names: Vec<_> = std::fs::read_dir(&outside).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, vec![std::ffi::OsString::from("secret.txt")]);
    assert!(!h.tmp.path().join("x").exists() && !h.tmp.path().join("workspaces/x").exists());
    for link in ["link_out", "file_link_out", "dangling_out"] {
        assert!(std::fs::symlink_metadata(ws.join(link)).unwrap().file_type().is_symlink(), "{link}");
    }
}
