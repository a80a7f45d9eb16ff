//! Downloads over real HTTP under the size cap: refused before the download, stopped while
//! streaming, names kept inside `<workspace>/media`, a re-run reusing the file.

use super::{attachment, media, platform, prepare, saved_files, Served};
use crate::config::MediaConfig;
use butler_channel::MediaKind;
use std::sync::atomic::Ordering;

fn capped(max_bytes: u64) -> MediaConfig {
    MediaConfig { max_bytes, ..MediaConfig::default() }
}

#[tokio::test]
async fn a_claimed_size_over_the_cap_is_refused_before_anything_is_downloaded() {
    let (files, source) = platform().await;
    files.put("big", Served::Endless { len: 40 * 1024 * 1024, announce: true });
    let ws = tempfile::tempdir().unwrap();
    let m = media(MediaConfig::default(), source);
    let mut a = attachment(MediaKind::Video, "big", Some("talk.mp4"), Some("video/mp4"));
    a.size = Some(33_030_144);
    let out = prepare(&m, ws.path(), "telegram:update:1", &[a], true).await;
    assert_eq!(files.requests.load(Ordering::SeqCst), 0, "no request reached the platform");
    assert_eq!(
        out.notes,
        vec!["The file \"talk.mp4\" is 31.5 MB; the limit is 20 MB ([media] max_bytes).".to_string()]
    );
    assert_eq!(
        out.text,
        "[video \"talk.mp4\" not saved: the file \"talk.mp4\" is 31.5 MB; the limit is 20 MB ([media] max_bytes); the person was told]"
    );
    assert!(out.saved.is_empty());
    assert!(saved_files(ws.path()).is_empty());
}

#[tokio::test]
async fn an_announced_size_over_the_cap_is_refused_and_leaves_nothing() {
    let (files, source) = platform().await;
    files.put("big", Served::Endless { len: 8 * 1024 * 1024, announce: true });
    let ws = tempfile::tempdir().unwrap();
    let m = media(capped(1024 * 1024), source);
    let a = attachment(MediaKind::Document, "big", Some("dump.bin"), None);
    let out = prepare(&m, ws.path(), "e1", &[a], true).await;
    assert_eq!(
        out.notes,
        vec!["The file \"dump.bin\" is 8.0 MB; the limit is 1.0 MB ([media] max_bytes).".to_string()]
    );
    assert!(saved_files(ws.path()).is_empty(), "{:?}", saved_files(ws.path()));
}

#[tokio::test]
async fn a_stream_past_the_cap_is_stopped_and_its_partial_file_deleted() {
    let (files, source) = platform().await;
    let total = 64 * 1024 * 1024;
    files.put("endless", Served::Endless { len: total, announce: false });
    let ws = tempfile::tempdir().unwrap();
    let m = media(capped(1024 * 1024), source);
    let a = attachment(MediaKind::Voice, "endless", None, Some("audio/ogg"));
    let out = prepare(&m, ws.path(), "e1", &[a], true).await;
    assert_eq!(
        out.notes,
        vec!["The voice note is larger than 1.0 MB, the limit ([media] max_bytes); I stopped downloading it."
            .to_string()]
    );
    assert!(saved_files(ws.path()).is_empty(), "no partial file: {:?}", saved_files(ws.path()));
    let produced = files.produced.load(Ordering::SeqCst);
    assert!(produced < total / 2, "the download stopped early ({produced} of {total} bytes produced)");
}

#[tokio::test]
async fn hostile_names_stay_inside_the_media_folder() {
    let (files, source) = platform().await;
    let ws = tempfile::tempdir().unwrap();
    let m = media(MediaConfig::default(), source);
    let names = ["../../etc/passwd", "..\\..\\x", "..", "/abs/path/.hidden", "a/../../b.txt"];
    let mut atts = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let id = format!("f{i}");
        files.bytes(&id, format!("file {i}\n").into_bytes());
        atts.push(attachment(MediaKind::Document, &id, Some(name), Some("text/plain")));
    }
    let out = prepare(&m, ws.path(), "e1", &atts, true).await;
    let media_dir = ws.path().join("media").canonicalize().unwrap();
    assert_eq!(out.saved.len(), names.len());
    for path in &out.saved {
        assert_eq!(path.parent().unwrap(), media_dir, "{path:?}");
        let name = path.file_name().unwrap().to_string_lossy();
        assert!(!name.starts_with('.') && !name.contains(".."), "{name}");
    }
    let saved = saved_files(ws.path());
    let id = crate::media::stable_id("e1", 0);
    assert!(saved.contains(&format!("{id}-passwd")), "{saved:?}");
    assert!(saved.iter().any(|n| n.ends_with("-x")), "{saved:?}");
    assert!(saved.iter().any(|n| n.ends_with("-file-3.txt")), "`..` gets the made-up name: {saved:?}");
    assert!(saved.iter().any(|n| n.ends_with("-hidden")), "{saved:?}");
    // Nothing was written next to the workspace.
    let outside: Vec<_> = std::fs::read_dir(ws.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(outside, vec![std::ffi::OsString::from("media")]);
}

#[tokio::test]
async fn a_rerun_of_the_same_event_reuses_the_file_and_other_events_do_not_collide() {
    let (files, source) = platform().await;
    files.bytes("doc", b"first version\n".to_vec());
    files.bytes("pic", super::png(10, 10, false));
    let ws = tempfile::tempdir().unwrap();
    let m = media(MediaConfig::default(), source);
    let atts = [
        attachment(MediaKind::Document, "doc", Some("notes.txt"), None),
        attachment(MediaKind::Image, "pic", None, None),
    ];
    let first = prepare(&m, ws.path(), "telegram:update:7", &atts, true).await;
    assert_eq!(files.requests.load(Ordering::SeqCst), 2);
    let again = prepare(&m, ws.path(), "telegram:update:7", &atts, true).await;
    assert_eq!(files.requests.load(Ordering::SeqCst), 2, "the re-run downloaded nothing");
    assert_eq!(first, again, "the re-run reads the same");
    // A later event with a file of the same name gets its own copy.
    files.bytes("doc", b"second version\n".to_vec());
    let other = prepare(&m, ws.path(), "telegram:update:8", &atts[..1], true).await;
    assert!(other.text.contains("second version"));
    assert_eq!(saved_files(ws.path()).len(), 3, "{:?}", saved_files(ws.path()));
    assert!(saved_files(ws.path()).iter().all(|n| !n.ends_with(".part")));
}

#[tokio::test]
async fn a_missing_source_or_file_becomes_a_note() {
    let (_files, source) = platform().await;
    let ws = tempfile::tempdir().unwrap();
    let m = media(MediaConfig::default(), source);
    let a = [attachment(MediaKind::Image, "gone", None, None)];
    let out = prepare(&m, ws.path(), "e1", &a, true).await;
    assert_eq!(out.notes, vec!["The photo could not be downloaded: not found: file gone.".to_string()]);
    let req = crate::media::PrepareRequest {
        channel: "nowhere",
        attachments: &a,
        workspace: ws.path(),
        event_id: "e1",
        vision: true,
    };
    let out = m.prepare(req).await;
    assert_eq!(out.notes, vec!["Files sent on nowhere cannot be fetched by Butler.".to_string()]);
}
