//! Table tests of Markdown -> Slack mrkdwn: escaping, emphasis, links, code, lists, tables.

use super::*;

#[test]
fn rendering_table() {
    let cases: &[(&str, &str, &str)] = &[
        ("plain text", "hello world", "hello world"),
        ("escapes", "a & b < c > d", "a &amp; b &lt; c &gt; d"),
        ("no mentions or broadcasts", "<!channel> <@U123> hi", "&lt;!channel&gt; &lt;@U123&gt; hi"),
        ("entities stay literal", "&amp; is an entity", "&amp;amp; is an entity"),
        ("bold", "**bold** and __also__", "*bold* and *also*"),
        ("italic", "*it* and _it_", "_it_ and _it_"),
        ("strike", "~~gone~~", "~gone~"),
        ("snake_case untouched", "call my_func_name now", "call my_func_name now"),
        ("math untouched", "2*3*4 = 24", "2*3*4 = 24"),
        ("lone star", "a * b", "a * b"),
        ("inline code escaped", "use `a<b && c>d` here", "use `a&lt;b &amp;&amp; c&gt;d` here"),
        ("no emphasis in code", "`**not bold**`", "`**not bold**`"),
        ("link", "see [the docs](https://example.com/a?b=1&c=2)", "see <https://example.com/a?b=1&amp;c=2|the docs>"),
        ("link with title", "[x](https://e.com \"Title\")", "<https://e.com|x>"),
        ("link label formatted", "[**big** deal](https://e.com)", "<https://e.com|*big* deal>"),
        (
            "link with parens",
            "[wiki](https://en.wikipedia.org/wiki/Rust_(language))",
            "<https://en.wikipedia.org/wiki/Rust_(language)|wiki>",
        ),
        ("pipe in url", "[a](https://e.com/?q=a|b)", "<https://e.com/?q=a%7Cb|a>"),
        ("autolink", "<https://example.com>", "<https://example.com>"),
        ("label equal to url", "[https://e.com](https://e.com)", "<https://e.com>"),
        ("relative link keeps words", "[notes](./notes.md)", "notes"),
        ("javascript link dropped", "[click](javascript:alert(1))", "click"),
        ("image", "![diagram](https://e.com/d.png)", "<https://e.com/d.png|diagram>"),
        ("bare url escaped", "https://e.com/?a=1&b=2", "https://e.com/?a=1&amp;b=2"),
        ("heading", "# Title\ntext", "*Title*\ntext"),
        ("heading level 3", "### Sub ###", "*Sub*"),
        ("not a heading", "#hashtag", "#hashtag"),
        ("bullets", "- one\n- two\n* three\n+ four", "• one\n• two\n• three\n• four"),
        ("nested bullets", "- top\n  - inner\n    - deep", "• top\n    ◦ inner\n        ◦ deep"),
        ("ordered", "1. first\n2. second\n10) tenth", "1. first\n2. second\n10. tenth"),
        ("tasks", "- [ ] todo\n- [x] done", "☐ todo\n☑ done"),
        ("list item formatting", "- **a** & b", "• *a* &amp; b"),
        ("quote", "> quoted <b>", "> quoted &lt;b&gt;"),
        ("rule", "above\n\n---\n\nbelow", "above\n\n──────────\n\nbelow"),
        ("code fence drops language", "```rust\nlet a = b && c;\n```", "```\nlet a = b &amp;&amp; c;\n```"),
        (
            "code keeps markdown literal",
            "```\n# not a heading\n- not a list\n**x**\n```",
            "```\n# not a heading\n- not a list\n**x**\n```",
        ),
        ("tilde fence", "~~~\nx < y\n~~~", "```\nx &lt; y\n```"),
        ("unclosed fence closed", "```\ncode", "```\ncode\n```"),
        ("backslash escape", "\\*not italic\\*", "*not italic*"),
        ("blank lines kept", "a\n\nb", "a\n\nb"),
    ];
    for (name, md, want) in cases {
        assert_eq!(to_mrkdwn(md), *want, "{name}: {md:?}");
    }
}

#[test]
fn tables_become_aligned_code_blocks() {
    let md = "Results:\n\n| Name | Score |\n|:-----|------:|\n| **Ann** | 10 |\n| Bo & Co | 7 |\n\nDone.";
    let want = "Results:\n\n```\nName    | Score\n--------+------\nAnn     | 10\nBo &amp; Co | 7\n```\n\nDone.";
    assert_eq!(to_mrkdwn(md), want);
    // A lone pipe line without a delimiter row is just text.
    assert_eq!(to_mrkdwn("| not a table"), "| not a table");
}

#[test]
fn nothing_unescaped_survives() {
    // Whatever the input, every `<` and `>` in the output belongs to a link Butler built (or
    // starts a quote line).
    let inputs =
        ["<script>alert(1)</script>", "a <@U1|x> b", "[<x>](https://e.com/<y>)", "`<>` <>", "> > deep <!here>"];
    for md in inputs {
        let out = to_mrkdwn(md);
        let links = out.matches("<https://").count();
        let quotes = out.lines().filter(|l| l.starts_with("> ")).count();
        assert_eq!(out.matches('<').count(), links, "{md:?} -> {out:?}");
        assert_eq!(out.matches('>').count(), links + quotes, "{md:?} -> {out:?}");
    }
}
