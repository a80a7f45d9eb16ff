//! The blocks the agent reads, pinned: a table of (attachment, bytes) -> the exact text, run
//! through the whole path (HTTP download, sniffing, reading). `{id}` stands for the
//! attachment's stable id, `<F>` and `</F>` for the untrusted fence around a document's text.

use super::{attachment, media, platform, prepare, F_CLOSE, F_OPEN};
use crate::config::MediaConfig;
use butler_channel::MediaKind;

struct Case {
    kind: MediaKind,
    name: Option<&'static str>,
    mime: Option<&'static str>,
    secs: Option<u32>,
    bytes: Vec<u8>,
    text: &'static str,
}

fn case(kind: MediaKind, name: Option<&'static str>, bytes: &[u8], text: &'static str) -> Case {
    Case { kind, name, mime: None, secs: None, bytes: bytes.to_vec(), text }
}

#[tokio::test]
async fn rendered_blocks() {
    let zip = [b"PK\x03\x04".as_slice(), &[0u8; 2044]].concat();
    let mut mp4 = b"\x00\x00\x00\x20ftypisom".to_vec();
    mp4.resize(3000, 0);
    let cases = vec![
        case(MediaKind::Document, Some("todo.txt"), b"buy milk\ncall mum\n", "[file \"todo.txt\", text, 18 bytes, saved as media/{id}-todo.txt]\n<F>\n```\nbuy milk\ncall mum\n```\n</F>"),
        case(
            MediaKind::Document,
            Some("README.md"),
            b"# Plan\n\n```sh\nmake\n```\n",
            "[file \"README.md\", Markdown, 23 bytes, saved as media/{id}-README.md]\n<F>\n````markdown\n# Plan\n\n```sh\nmake\n```\n````\n</F>",
        ),
        case(MediaKind::Document, Some("data"), b"{\"a\": 1}", "[file \"data\", JSON, 8 bytes, saved as media/{id}-data]\n<F>\n```json\n{\"a\": 1}\n```\n</F>"),
        case(
            MediaKind::Document,
            None,
            b"name,age,city\nAnn,31,Oslo\nBob,42,Rome\n",
            "[file, CSV, 38 bytes, saved as media/{id}-file-1.csv]\n<F>\n```csv\nname,age,city\nAnn,31,Oslo\nBob,42,Rome\n```\n</F>",
        ),
        case(MediaKind::Document, Some("x.zip"), &zip, "[file \"x.zip\", application/zip, 2.0 KB, saved as media/{id}-x.zip; not read]"),
        case(MediaKind::Document, Some("empty.txt"), b"", "[file \"empty.txt\", saved as media/{id}-empty.txt; it is empty]"),
        case(MediaKind::Document, Some("blank.txt"), b"\n\n  \n", "[file \"blank.txt\", text, 5 bytes, saved as media/{id}-blank.txt; it is empty]"),
        Case {
            secs: Some(12),
            mime: Some("video/mp4"),
            ..case(MediaKind::Video, Some("clip \"best\" [1].mp4"), &mp4, "[video \"clip 'best' (1).mp4\", MP4 video, 12 s, 2.9 KB, saved as media/{id}-clip_best_1_.mp4; not watched]")
        },
        Case { secs: Some(5), ..case(MediaKind::VideoNote, None, &mp4, "[video note, MP4 video, 5 s, 2.9 KB, saved as media/{id}-video-note-1.mp4; not watched]") },
        Case {
            mime: Some("image/png"),
            ..case(MediaKind::Image, Some("fake.png"), b"\x00\x01\x02\x03\x04", "[file \"fake.png\", application/octet-stream, 5 bytes, saved as media/{id}-fake.png; not read]")
        },
    ];
    let (files, source) = platform().await;
    let m = media(MediaConfig::default(), source);
    for (i, c) in cases.into_iter().enumerate() {
        let ws = tempfile::tempdir().unwrap();
        let file_id = format!("f{i}");
        files.bytes(&file_id, c.bytes);
        let mut a = attachment(c.kind, &file_id, c.name, c.mime);
        a.duration_secs = c.secs;
        let event = format!("web:c:{i}");
        let out = prepare(&m, ws.path(), &event, &[a], true).await;
        let want =
            c.text.replace("{id}", &crate::media::stable_id(&event, 0)).replace("<F>", F_OPEN).replace("</F>", F_CLOSE);
        assert_eq!(out.text, want, "case {i}");
        assert!(out.notes.is_empty() && out.images.is_empty(), "case {i}: {:?}", out.notes);
    }
}

#[tokio::test]
async fn several_attachments_are_blocks_in_order_separated_by_a_blank_line() {
    let (files, source) = platform().await;
    files.bytes("a", b"first\n".to_vec());
    files.bytes("b", b"second\n".to_vec());
    let ws = tempfile::tempdir().unwrap();
    let m = media(MediaConfig::default(), source);
    let atts = [
        attachment(MediaKind::Document, "a", Some("a.txt"), None),
        attachment(MediaKind::Document, "b", Some("b.txt"), None),
    ];
    let out = prepare(&m, ws.path(), "e", &atts, true).await;
    let id = |i| crate::media::stable_id("e", i);
    assert_eq!(
        out.text,
        format!(
            "[file \"a.txt\", text, 6 bytes, saved as media/{}-a.txt]\n{F_OPEN}\n```\nfirst\n```\n{F_CLOSE}\n\n[file \"b.txt\", text, 7 bytes, saved as media/{}-b.txt]\n{F_OPEN}\n```\nsecond\n```\n{F_CLOSE}",
            id(0),
            id(1)
        )
    );
    assert_eq!(out.saved.len(), 2);
    let none = prepare(&m, ws.path(), "e2", &[], true).await;
    assert_eq!(none, crate::media::Prepared::default());
}
