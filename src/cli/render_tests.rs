//! The terminal rendering of Markdown, as a table of (markdown, plain, ANSI) cases, and the
//! streaming rule: a reply fed in any pieces renders exactly as the whole; and approval requests
//! as `butler chat` prints them, with what the call would do (snapshots), a long one whole.

use super::{render, Markdown, Mode};

const B: &str = "\x1b[1m";
const B_: &str = "\x1b[22m";
const I: &str = "\x1b[3m";
const I_: &str = "\x1b[23m";
const C: &str = "\x1b[36m";
const C_: &str = "\x1b[39m";

fn cases() -> Vec<(&'static str, String, String)> {
    vec![
        ("plain text", "plain text".into(), "plain text".into()),
        ("a **bold** word", "a bold word".into(), format!("a {B}bold{B_} word")),
        ("an *em* and _em_ too", "an em and em too".into(), format!("an {I}em{I_} and {I}em{I_} too")),
        ("snake_case_name stays", "snake_case_name stays".into(), "snake_case_name stays".into()),
        ("2 * 3 * 4", "2 * 3 * 4".into(), "2 * 3 * 4".into()),
        ("run `ls -l` now", "run `ls -l` now".into(), format!("run {C}ls -l{C_} now")),
        ("**bold with `code`**", "bold with `code`".into(), format!("{B}bold with {C}code{C_}{B_}")),
        (
            "see [docs](https://x.y/z)",
            "see docs (https://x.y/z)".into(),
            "see docs \x1b[2m(https://x.y/z)\x1b[22m".into(),
        ),
        ("\\*not em\\*", "*not em*".into(), "*not em*".into()),
        ("# Title\ntext\n", "Title\ntext\n".into(), "\x1b[1;4mTitle\x1b[0m\ntext\n".into()),
        (
            "- one\n- **two**\n  - nested\n1. first\n",
            "• one\n• two\n  • nested\n1. first\n".into(),
            format!("• one\n• {B}two{B_}\n  • nested\n1. first\n"),
        ),
        ("> quoted *words*", "│ quoted words".into(), format!("\x1b[2m│\x1b[22m quoted {I}words{I_}")),
        ("---\n", format!("{}\n", "─".repeat(40)), format!("\x1b[2m{}\x1b[22m\n", "─".repeat(40))),
        (
            "Code:\n```rust\nlet x = **1**;\n```\ndone",
            "Code:\n  let x = **1**;\ndone".into(),
            format!("Code:\n  {C}let x = **1**;{C_}\ndone"),
        ),
        (
            "| Name | Qty |\n|---|--:|\n| apple | 3 |\n| **kiwi** | 12 |\nafter\n",
            "Name  │ Qty\n──────┼────\napple │   3\nkiwi  │  12\nafter\n".into(),
            format!("{B}Name {B_} │ {B}Qty{B_}\n──────┼────\napple │   3\n{B}kiwi{B_}  │  12\nafter\n"),
        ),
        ("| a | b |\n| c | d |", "a │ b\nc │ d".into(), "a │ b\nc │ d".into()),
    ]
}

#[test]
fn markdown_renders_for_the_terminal() {
    for (md, plain, ansi) in cases() {
        assert_eq!(render(md, Mode::Plain), plain, "plain: {md:?}");
        assert_eq!(render(md, Mode::Ansi), ansi, "ansi: {md:?}");
        assert_eq!(render(md, Mode::Raw), md, "raw: {md:?}");
        assert!(!render(md, Mode::Plain).contains('\x1b'), "no escape codes in plain: {md:?}");
    }
}

#[test]
fn a_reply_streamed_in_pieces_renders_as_the_whole() {
    let extra = ["Some words **bold here** and more words at the end", "- item with `code span` inside it\nnext"];
    let texts: Vec<&str> = cases().iter().map(|c| c.0).chain(extra).collect();
    for md in texts {
        for mode in [Mode::Plain, Mode::Ansi] {
            let whole = render(md, mode);
            let mut stream = Markdown::new(mode);
            let mut got = String::new();
            for ch in md.chars() {
                got.push_str(&stream.push(&ch.to_string()));
            }
            got.push_str(&stream.finish());
            assert_eq!(got, whole, "{mode:?} char by char: {md:?}");
        }
    }
}

#[test]
fn words_of_a_paragraph_are_written_before_its_line_ends() {
    let mut md = Markdown::new(Mode::Ansi);
    assert_eq!(md.push("Hello **wor"), "Hello ");
    assert_eq!(md.push("ld** and"), format!("{B}world{B_} "));
    assert_eq!(md.finish(), "and");
}

fn approval(summary: &str, detail: Option<crate::store::Detail>) -> crate::store::ApprovalRow {
    let row = crate::store::ApprovalRow::pending("tool", "cli:local", ("cli:local", "local"), summary);
    crate::store::ApprovalRow { session_key: "cli:local".into(), detail, ..row }
}

#[test]
fn approval_requests_show_what_the_call_would_do() {
    use crate::permissions::notice::{approval_notice, Room};
    use crate::store::{Detail, DetailKind};
    let room = Room::of(&super::super::chat::CAPS);
    let tail = "Asked by local; this request expires in 10 minutes.";
    // (summary, kind, detail, as printed without colour)
    let cases = [
        ("write 32 bytes to notes/groceries.md", DetailKind::Content, "# Groceries\n\n- oat milk\n- bread\n", "🔐 Approval needed: Butler wants to write 32 bytes to notes/groceries.md.\n  # Groceries\n  \n  - oat milk\n  - bread\n"),
        (
            "edit todo.md: replace \"- call mum\" with \"- call mum and dad\"",
            DetailKind::Diff,
            "--- a/todo.md\n+++ b/todo.md\n@@ -1,3 +1,3 @@\n - buy milk\n-- call mum\n+- call mum and dad\n - water the plants\n",
            "🔐 Approval needed: Butler wants to edit todo.md: replace \"- call mum\" with \"- call mum and dad\".\n  --- a/todo.md\n  +++ b/todo.md\n  @@ -1,3 +1,3 @@\n   - buy milk\n  -- call mum\n  +- call mum and dad\n   - water the plants\n",
        ),
        (
            "run `cd notes && grep -c milk *.md | sort -r > counts.txt` in your workspace",
            DetailKind::Command,
            "# in /srv/ws/local\ncd notes && grep -c milk *.md | sort -r > counts.txt",
            "🔐 Approval needed: Butler wants to run `cd notes && grep -c milk *.md | sort -r > counts.txt` in your workspace.\n  # in /srv/ws/local\n  cd notes && grep -c milk *.md | sort -r > counts.txt\n",
        ),
        (
            "POST https://api.example.com/v1/issues?api_key=*** with headers Authorization, Content-Type and a 34-byte body",
            DetailKind::Request,
            "POST https://api.example.com/v1/issues?api_key=***\nAuthorization: ***\nContent-Type: application/json\n\n{\n  \"title\": \"Milk\",\n  \"token\": \"***\"\n}",
            "🔐 Approval needed: Butler wants to POST https://api.example.com/v1/issues?api_key=*** with headers Authorization, Content-Type and a 34-byte body.\n  POST https://api.example.com/v1/issues?api_key=***\n  Authorization: ***\n  Content-Type: application/json\n  \n  {\n    \"title\": \"Milk\",\n    \"token\": \"***\"\n  }\n",
        ),
        (
            "use `create_issue` of MCP server `tracker`",
            DetailKind::Arguments,
            "{\n  \"api_token\": \"***\",\n  \"labels\": [\n    \"bug\"\n  ],\n  \"title\": \"Login <fails>\"\n}",
            "🔐 Approval needed: Butler wants to use `create_issue` of MCP server `tracker`.\n  {\n    \"api_token\": \"***\",\n    \"labels\": [\n      \"bug\"\n    ],\n    \"title\": \"Login <fails>\"\n  }\n",
        ),
    ];
    let mut got = Vec::new();
    for (summary, kind, text, _) in cases {
        let notice = approval_notice(&approval(summary, Some(Detail::new(kind, text))), "local", room);
        assert!(notice.file.is_none(), "{kind:?}");
        got.push(render(&notice.message.text, Mode::Plain));
    }
    let want: Vec<String> = cases.iter().map(|c| format!("{}{tail}", c.3)).collect();
    assert_eq!(got, want);

    // A 200-line write: the terminal prints all of it, no file.
    let long: String = (1..=200).map(|n| format!("{n}. a line of the long list\n")).collect();
    let notice = approval_notice(
        &approval("write 5692 bytes to long.md", Some(Detail::new(DetailKind::Content, long))),
        "local",
        room,
    );
    let printed = render(&notice.message.text, Mode::Plain);
    assert!(notice.file.is_none() && !printed.contains("more lines"), "{printed}");
    let indented: String = (1..=200).map(|n| format!("  {n}. a line of the long list\n")).collect();
    assert!(printed.contains(&indented), "{printed}");
}
