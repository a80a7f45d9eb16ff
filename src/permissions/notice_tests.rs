//! The approval message with its detail: each kind of detail as a chat message shows it
//! (snapshots), the cut of a long detail (lines, characters, a first line too long) with the
//! whole of it as a file, the whole detail where the client renders Markdown itself, fences
//! that the detail's own backticks cannot close, and questions' messages unchanged.

use super::*;
use crate::store::{Detail, DetailKind};

const ID: &str = "0123456789abcdef0123456789abcdef";
const CHAT: Room = Room { buttons: true, max_len: 4_096, whole: false };
const WEB: Room = Room { buttons: true, max_len: 100_000, whole: true };

fn row(summary: &str, detail: Option<Detail>) -> ApprovalRow {
    ApprovalRow { detail, ..ApprovalRow::pending("file_write", "telegram:42", ("telegram:42", "u-alice"), summary) }
}

fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn each_kind_of_detail_in_a_chat_message() {
    let tail = "Asked by Alice; this request expires in 10 minutes.";
    // (summary, kind, detail text, message)
    let cases = [
        (
            "write 20 bytes to todo.md",
            DetailKind::Content,
            "- buy milk\n- call mum\n",
            "🔐 **Approval needed**: Butler wants to write 20 bytes to todo.md.\n```\n- buy milk\n- call mum\n```",
        ),
        (
            "edit todo.md: replace \"milk\" with \"oat milk\"",
            DetailKind::Diff,
            "--- a/todo.md\n+++ b/todo.md\n@@ -1 +1 @@\n-- buy milk\n+- buy oat milk\n",
            "🔐 **Approval needed**: Butler wants to edit todo.md: replace \"milk\" with \"oat milk\".\n```diff\n\
             --- a/todo.md\n+++ b/todo.md\n@@ -1 +1 @@\n-- buy milk\n+- buy oat milk\n```",
        ),
        (
            "run `make test` in your workspace",
            DetailKind::Command,
            "# in /srv/ws/u-1\nmake test",
            "🔐 **Approval needed**: Butler wants to run `make test` in your workspace.\n```sh\n# in /srv/ws/u-1\nmake test\n```",
        ),
        (
            "POST https://api.example.com/x with headers Authorization and a 8-byte body",
            DetailKind::Request,
            "POST https://api.example.com/x\nAuthorization: ***\n\n{\n  \"n\": 1\n}",
            "🔐 **Approval needed**: Butler wants to POST https://api.example.com/x with headers Authorization and a 8-byte body.\n\
             ```http\nPOST https://api.example.com/x\nAuthorization: ***\n\n{\n  \"n\": 1\n}\n```",
        ),
        (
            "use `create_issue` of MCP server `tracker`",
            DetailKind::Arguments,
            "{\n  \"title\": \"Bug\",\n  \"token\": \"***\"\n}",
            "🔐 **Approval needed**: Butler wants to use `create_issue` of MCP server `tracker`.\n```json\n{\n  \"title\": \"Bug\",\n  \
             \"token\": \"***\"\n}\n```",
        ),
    ];
    for (summary, kind, text, want) in cases {
        let notice = approval_notice(&row(summary, Some(Detail::new(kind, text))), "Alice", CHAT);
        assert_eq!(notice.message.text, format!("{want}\n{tail}"), "{kind:?}");
        assert_eq!(notice.file, None, "{kind:?}: short enough, no file");
        assert_eq!(notice.message.key, format!("approval:{ID}"));
        // The web page gets the same whole block.
        assert_eq!(
            approval_notice(&row(summary, Some(Detail::new(kind, text))), "Alice", WEB).message.text,
            notice.message.text
        );
    }
    // Without a detail (other tools) and without buttons: as before.
    let plain = approval_notice(&row("touch `lamp`", None), "Alice", Room { buttons: false, ..CHAT });
    let want = format!(
        "🔐 **Approval needed**: Butler wants to touch `lamp`.\n{tail}\nReply `/approve {ID}` or `/deny {ID}`."
    );
    assert_eq!(plain.message.text, want);
    let empty =
        approval_notice(&row("write 0 bytes to a.txt", Some(Detail::new(DetailKind::Content, ""))), "Alice", CHAT);
    assert_eq!(
        empty.message.text,
        format!("🔐 **Approval needed**: Butler wants to write 0 bytes to a.txt.\n_(empty)_\n{tail}")
    );
}

#[test]
fn a_long_detail_is_cut_in_a_chat_message_and_sent_whole_as_a_file() {
    let long = lines(200);
    let r = row("write 1792 bytes to long.md", Some(Detail::new(DetailKind::Content, long.clone())));
    let notice = approval_notice(&r, "Alice", CHAT);
    let want = format!(
        "🔐 **Approval needed**: Butler wants to write 1792 bytes to long.md.\n```\n{}```\n\
         _… 170 more lines: the whole content is in the attached file content-01234567.txt._\n\
         Asked by Alice; this request expires in 10 minutes.",
        lines(30)
    );
    assert_eq!(notice.message.text, want);
    let file = notice.file.expect("the whole content as a file");
    assert_eq!(file.key, format!("approval:{ID}:detail"));
    assert_eq!(
        (file.name.as_str(), file.mime, file.text.as_str()),
        ("content-01234567.txt", "text/plain", long.as_str())
    );
    assert_eq!(file.caption, "📎 The whole content of the approval request above (200 lines).");
    assert_eq!(file.conversation, "telegram:42");

    // The web page and the terminal get all of it in the message (they fold or scroll it).
    let web = approval_notice(&r, "Alice", WEB);
    assert!(web.message.text.contains(&format!("```\n{long}```")) && web.file.is_none(), "{}", web.message.text);
    // ... unless their message is too short for it too.
    let short = approval_notice(&r, "Alice", Room { max_len: 1_000, ..WEB });
    assert!(short.file.is_some() && short.message.text.chars().count() <= 1_000, "{}", short.message.text);

    // A diff: a .diff file; a short platform (Discord) cuts earlier, within its limit.
    let diff: String = (0..100).map(|i| format!("+added line number {i} with some words in it\n")).collect();
    let r = row("edit big.md: replace \"a\" with \"b\"", Some(Detail::new(DetailKind::Diff, diff)));
    let discord = approval_notice(&r, "Alice", Room { max_len: 2_000, ..CHAT });
    let text = &discord.message.text;
    assert!(text.encode_utf16().count() <= 2_000, "{}", text.len());
    assert!(
        text.contains("```diff\n+added line number 0 ") && text.contains("more lines: the whole diff is in"),
        "{text}"
    );
    let file = discord.file.unwrap();
    assert_eq!((file.name.as_str(), file.mime), ("diff-01234567.diff", "text/x-diff"));
}

#[test]
fn cutting_table() {
    let long_line = "x".repeat(50);
    // (text, lines, chars) -> None when it all fits, else (shown, more)
    type Case = (String, usize, usize, Option<(&'static str, More)>);
    let cases: Vec<Case> = vec![
        ("a\nb\nc".into(), 3, 100, None),
        ("a\nb\nc\nd".into(), 3, 100, Some(("a\nb\nc", More::Lines(1)))),
        ("aa\nbb\ncc".into(), 10, 5, Some(("aa\nbb", More::Lines(1)))),
        ("aa\nbb\ncc".into(), 10, 8, None),
        (long_line.clone(), 10, 10, Some(("xxxxxxxxx…", More::Chars(41)))),
        (format!("{long_line}\nshort"), 10, 10, Some(("xxxxxxxxx…", More::Chars(47)))),
        (format!("ok\n{long_line}\nshort"), 10, 10, Some(("ok", More::Lines(2)))),
        ("é\nü\nß\nø".into(), 2, 100, Some(("é\nü", More::Lines(2)))),
    ];
    for (text, max_lines, max_chars, want) in cases {
        let got = head_of(&text, max_lines, max_chars);
        let want = want.map(|(shown, more)| Cut { shown: shown.to_string(), more });
        assert_eq!(got, want, "{text:?} in {max_lines} lines, {max_chars} chars");
    }
}

#[test]
fn the_detail_cannot_close_its_own_fence() {
    // (body, fence length)
    let cases =
        [("plain", 3), ("a `code` span", 3), ("```rust\nfn x() {}\n```", 4), ("  ````\nx", 5), ("``not a fence", 3)];
    for (body, want) in cases {
        assert_eq!(fence_len(body), want, "{body:?}");
    }
    let readme = "# Title\n```sh\nmake\n```\n";
    let notice = approval_notice(
        &row("write 24 bytes to README.md", Some(Detail::new(DetailKind::Content, readme))),
        "Al",
        CHAT,
    );
    assert!(notice.message.text.contains("\n````\n# Title\n```sh\nmake\n```\n````\n"), "{}", notice.message.text);
}
