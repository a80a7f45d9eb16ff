//! Documents: PDF text extracted (and the whole text kept beside it when cut), text files cut
//! at `[media] max_chars` with a marker, malformed PDFs a note, never a crash.

use super::{attachment, media, pdf, platform, prepare, F_CLOSE, F_OPEN};
use crate::config::MediaConfig;
use crate::media::document::{read_pdf, read_text};
use butler_channel::MediaKind;

#[tokio::test]
async fn pdf_text_is_extracted_page_by_page() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.pdf");
    std::fs::write(&path, pdf(&[&["Quarterly report", "Revenue grew (a lot)"], &["Page two says hello"]])).unwrap();
    let d = read_pdf(&path, 10_000).await.unwrap();
    assert_eq!(d.pages, Some(2));
    assert!(d.text.contains("Quarterly report"), "{:?}", d.text);
    assert!(d.text.contains("Revenue grew (a lot)"), "{:?}", d.text);
    assert!(d.text.contains("Page two says hello"), "{:?}", d.text);
    assert_eq!(d.more, 0);
    assert_eq!(d.whole, None);
}

#[tokio::test]
async fn a_long_pdf_is_cut_and_its_whole_text_saved_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.pdf");
    let line = "All work and no play makes Jack a dull boy.";
    let lines: Vec<&str> = std::iter::repeat_n(line, 40).collect();
    std::fs::write(&path, pdf(&[&lines, &lines])).unwrap();
    let d = read_pdf(&path, 200).await.unwrap();
    assert_eq!(d.text.chars().count(), 200);
    assert!(d.more > 3000, "{}", d.more);
    let whole = d.whole.expect("the whole text is written beside the PDF");
    assert_eq!(whole, dir.path().join("long.pdf.txt"));
    let all = std::fs::read_to_string(whole).unwrap();
    assert_eq!(all.chars().count(), 200 + d.more);
    assert_eq!(all.matches(line).count(), 80);
}

#[tokio::test]
async fn malformed_pdfs_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let mut cut = pdf(&[&["hello"]]);
    cut.truncate(60);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("only the header", b"%PDF-1.7\n".to_vec()),
        ("cut in the middle", cut),
        ("garbage after the header", [b"%PDF-1.4\n".as_slice(), &[0xffu8; 3000]].concat()),
        (
            "an object loop",
            b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 1 0 R >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"
                .to_vec(),
        ),
    ];
    for (what, bytes) in cases {
        let path = dir.path().join("bad.pdf");
        std::fs::write(&path, bytes).unwrap();
        match read_pdf(&path, 1000).await {
            Err(e) => assert!(e.is_the_file(), "{what}: {e}"),
            Ok(d) => assert!(d.text.trim().is_empty(), "{what}: read {:?}", d.text),
        }
    }
}

#[tokio::test]
async fn text_is_read_as_utf8_in_pieces_and_cut_with_a_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    // A BOM, multi-byte characters across the 64 KiB piece boundary, an invalid byte.
    let mut bytes = b"\xef\xbb\xbf".to_vec();
    bytes.extend(std::iter::repeat_n("é", 40_000).collect::<String>().into_bytes());
    bytes.push(0xff);
    bytes.extend_from_slice("end".as_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let d = read_text(&path, 100_000).await.unwrap();
    assert_eq!(d.text.chars().count(), 40_000 + 1 + 3);
    assert!(d.text.starts_with('é'));
    assert!(d.text.ends_with("\u{fffd}end"));
    let d = read_text(&path, 10).await.unwrap();
    assert_eq!(d.text, "éééééééééé");
    assert_eq!(d.more, 40_000 - 10 + 4);
}

#[tokio::test]
async fn documents_in_a_message() {
    let (files, source) = platform().await;
    files.bytes("pdf", pdf(&[&["Hello from a PDF"]]));
    files.bytes("broken", b"%PDF-1.7\nthis is not really a pdf".to_vec());
    files.bytes("long", "word ".repeat(100).into_bytes());
    let ws = tempfile::tempdir().unwrap();
    let m = media(MediaConfig { max_chars: 100, ..MediaConfig::default() }, source);
    let atts = [
        attachment(MediaKind::Document, "pdf", Some("report.pdf"), Some("application/pdf")),
        attachment(MediaKind::Document, "broken", Some("broken.pdf"), Some("application/pdf")),
        attachment(MediaKind::Document, "long", Some("long.txt"), Some("text/plain")),
    ];
    let out = prepare(&m, ws.path(), "e1", &atts, true).await;
    let id = |i| crate::media::stable_id("e1", i);
    let blocks: Vec<&str> = out.text.split("\n\n").collect();
    assert!(blocks[0].starts_with("[file \"report.pdf\", PDF, 1 page, "), "{}", blocks[0]);
    assert!(
        blocks[0].contains(&format!(
            "saved as media/{}-report.pdf]\n{F_OPEN}\n```\nHello from a PDF\n```\n{F_CLOSE}",
            id(0)
        )),
        "{}",
        blocks[0]
    );
    assert!(blocks[1].starts_with("[file \"broken.pdf\" could not be read: "), "{}", blocks[1]);
    assert!(out.notes.iter().any(|n| n.starts_with("I couldn't read the file \"broken.pdf\": ")), "{:?}", out.notes);
    assert_eq!(
        blocks[2],
        format!(
            "[file \"long.txt\", text, 500 bytes, saved as media/{0}-long.txt]\n{F_OPEN}\n```\n{1}\n```\n{F_CLOSE}\n[… cut: 400 more characters; the whole file is media/{0}-long.txt in your workspace (file_read)]",
            id(2),
            "word ".repeat(20)
        )
    );
}
