//! Sniffing (the type from the bytes, never the name or the claim), safe file names and the
//! small words, as tables.

use super::{gif, jpeg, ogg_opus_tone, pdf, png};
use crate::media::sniff::{is_ogg_opus, same_type};
use crate::media::words::{count, duration, quoted, sentence, shorten, size};
use crate::media::{safe_name, sniff, sniff_file, stable_id};

fn riff(form: &[u8]) -> Vec<u8> {
    let mut v = b"RIFF\x24\x00\x00\x00".to_vec();
    v.extend_from_slice(form);
    v.extend_from_slice(&[0; 32]);
    v
}

fn ftyp(brand: &[u8]) -> Vec<u8> {
    let mut v = b"\x00\x00\x00\x20ftyp".to_vec();
    v.extend_from_slice(brand);
    v.extend_from_slice(&[0; 20]);
    v
}

#[test]
fn magic_numbers() {
    let mut bmp = b"BM\x46\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00\x28\x00\x00\x00".to_vec();
    bmp.extend_from_slice(&[0; 40]);
    let mut vorbis = b"OggS\x00\x02".to_vec();
    vorbis.extend_from_slice(&[0; 22]);
    vorbis.extend_from_slice(b"\x01\x1e\x01vorbis");
    let table: Vec<(&str, Vec<u8>, Option<&str>)> = vec![
        ("png", png(8, 8, false), Some("image/png")),
        ("jpeg", jpeg(8, 8), Some("image/jpeg")),
        ("gif", gif(8, 8), Some("image/gif")),
        ("webp", riff(b"WEBPVP8 "), Some("image/webp")),
        ("bmp", bmp, Some("image/bmp")),
        ("pdf", pdf(&[&["hello"]]), Some("application/pdf")),
        ("pdf after junk", [b"junk\n".as_slice(), &pdf(&[&["x"]])].concat(), Some("application/pdf")),
        ("ogg opus", ogg_opus_tone(0.1), Some("audio/ogg")),
        ("ogg vorbis", vorbis, Some("audio/ogg")),
        ("mp3 id3", b"ID3\x04\x00\x00\x00\x00\x00\x00".to_vec(), Some("audio/mpeg")),
        ("mp3 frame", b"\xff\xfb\x90\x64\x00\x00".to_vec(), Some("audio/mpeg")),
        ("aac adts", b"\xff\xf1\x50\x80\x00\x1f".to_vec(), Some("audio/aac")),
        ("wav", riff(b"WAVEfmt "), Some("audio/wav")),
        ("flac", b"fLaC\x00\x00\x00\x22".to_vec(), Some("audio/flac")),
        ("m4a", ftyp(b"M4A "), Some("audio/mp4")),
        ("mp4", ftyp(b"isom"), Some("video/mp4")),
        ("mov", ftyp(b"qt  "), Some("video/quicktime")),
        ("heic", ftyp(b"heic"), Some("image/heic")),
        ("webm", b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x84webm".to_vec(), Some("video/webm")),
        ("mkv", b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x88matroska".to_vec(), Some("video/x-matroska")),
        ("zip", b"PK\x03\x04\x14\x00\x00\x00".to_vec(), Some("application/zip")),
        ("text", b"hello there\n".to_vec(), Some("text/plain")),
        ("text cut in a character", "caf\u{e9}".as_bytes()[..4].to_vec(), Some("text/plain")),
        ("text that starts BM", b"BMW is a car maker\n".to_vec(), Some("text/plain")),
        ("NUL is not text", b"abc\x00def".to_vec(), None),
        ("invalid UTF-8", b"abc\xff\xfedef".to_vec(), None),
        ("random bytes", (0..200u8).map(|i| i.wrapping_mul(37)).collect(), None),
        ("empty", Vec::new(), None),
    ];
    for (what, bytes, want) in table {
        assert_eq!(sniff(&bytes), want, "{what}");
    }
}

#[test]
fn text_is_refined_by_content_and_name_only() {
    type Row<'a> = (&'a str, &'a [u8], bool, Option<&'a str>, &'a str);
    let table: Vec<Row> = vec![
        ("json parses", b"{\"a\": [1, 2]}", true, None, "application/json"),
        ("json named .txt still json", b"[1, 2, 3]", true, Some("x.txt"), "application/json"),
        ("broken json", b"{\"a\": ", true, None, "text/plain"),
        ("cut json named .json", b"{\"a\": [1, 2", false, Some("data.json"), "application/json"),
        ("cut json without a name", b"{\"a\": [1, 2", false, None, "text/plain"),
        ("csv by name", b"a;b\n1;2\n", true, Some("table.CSV"), "text/csv"),
        ("csv by content", b"name,age,city\nAnn,31,Oslo\nBob,42,\"Rome, IT\"\n", true, None, "text/csv"),
        ("prose with commas", b"Hello, you, there.\nFine thanks.\n", true, None, "text/plain"),
        ("markdown by name", b"# Title\n\ntext", true, Some("notes.md"), "text/markdown"),
        ("markdown name on binary", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", true, Some("notes.md"), "image/png"),
        ("unknown binary", b"\x00\x01\x02\x03", true, Some("a.txt"), "application/octet-stream"),
    ];
    for (what, head, complete, name, want) in table {
        assert_eq!(sniff_file(head, complete, name), want, "{what}");
    }
}

#[test]
fn claimed_types_are_compared_not_trusted() {
    let table = [
        ("image/jpg", "image/jpeg", true),
        ("IMAGE/JPEG; q=1", "image/jpeg", true),
        ("audio/oga", "audio/ogg", true),
        ("image/png", "application/octet-stream", false),
        ("image/jpeg", "application/pdf", false),
        ("text/x-markdown", "text/plain", true),
    ];
    for (claimed, sniffed, same) in table {
        assert_eq!(same_type(claimed, sniffed), same, "{claimed} vs {sniffed}");
    }
    assert!(is_ogg_opus(&ogg_opus_tone(0.1)));
    assert!(!is_ogg_opus(b"OggS\x00\x02 nothing"));
}

#[test]
fn sender_names_become_one_safe_component() {
    let table = [
        ("IMG_1.jpg", Some("IMG_1.jpg")),
        ("../../etc/passwd", Some("passwd")),
        ("..\\..\\x", Some("x")),
        ("C:\\Users\\me\\report final (2).pdf", Some("report_final_2_.pdf")),
        ("..", None),
        (".", None),
        ("", None),
        ("...", None),
        ("/", None),
        (".bashrc", Some("bashrc")),
        ("отчёт.pdf", Some("_.pdf")),
        ("a\u{0}b\nc.txt", Some("a_b_c.txt")),
    ];
    for (claimed, want) in table {
        assert_eq!(safe_name(claimed).as_deref(), want, "{claimed:?}");
    }
    let long = format!("{}.pdf", "a".repeat(300));
    let capped = safe_name(&long).unwrap();
    assert_eq!(capped.len(), 80);
    assert!(capped.ends_with("a.pdf"));
    // Stable per event and index, different across events and indexes.
    assert_eq!(stable_id("telegram:update:1", 0), stable_id("telegram:update:1", 0));
    assert_ne!(stable_id("telegram:update:1", 0), stable_id("telegram:update:1", 1));
    assert_ne!(stable_id("telegram:update:1", 0), stable_id("telegram:update:2", 0));
    assert_eq!(stable_id("e", 0).len(), 10);
}

#[test]
fn words() {
    let sizes = [
        (0, "0 bytes"),
        (1, "1 byte"),
        (1023, "1023 bytes"),
        (3500, "3.4 KB"),
        (120 * 1024, "120 KB"),
        (2 * 1024 * 1024, "2.0 MB"),
        (2_200_000, "2.1 MB"),
        (20 * 1024 * 1024, "20 MB"),
        (33_030_144, "31.5 MB"),
    ];
    for (n, want) in sizes {
        assert_eq!(size(n), want, "{n}");
    }
    let durations = [(7, "7 s"), (60, "1 min"), (182, "3 min 2 s"), (3600, "1 h"), (3900, "1 h 5 min")];
    for (s, want) in durations {
        assert_eq!(duration(s), want);
    }
    assert_eq!(count(12345), "12,345");
    assert_eq!(count(999), "999");
    assert_eq!(count(1_000_000), "1,000,000");
    assert_eq!(quoted("a \"b\" [c]\n"), "\"a 'b' (c) \"");
    assert_eq!(sentence("the file is big"), "The file is big.");
    assert_eq!(sentence("done."), "Done.");
    assert_eq!(shorten("short", 10), "short");
    assert_eq!(shorten("one two three four five", 15), "one two three…");
}
