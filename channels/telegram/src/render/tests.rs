//! Table tests of the Markdown -> Telegram HTML renderer, and the two promises it keeps for
//! any input: balanced, known tags only, and visible text no longer than the Markdown.

use super::*;

/// Checks tags are known and balanced and every `&` starts an entity; returns the visible text.
fn well_formed(html: &str) -> Result<String, String> {
    const TAGS: &[&str] = &["b", "i", "s", "u", "code", "pre", "a", "blockquote", "tg-spoiler"];
    let mut stack: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(pos) = rest.find(['<', '&', '>']) {
        rest = &rest[pos..];
        match rest.as_bytes()[0] {
            b'>' => return Err(format!("raw > in {html:?}")),
            b'&' => {
                let ok = ["&lt;", "&gt;", "&amp;", "&quot;"].iter().any(|e| rest.starts_with(e));
                if !ok {
                    return Err(format!("bare & in {html:?}"));
                }
                rest = &rest[1..];
            }
            _ => {
                let end = rest.find('>').ok_or_else(|| format!("unclosed tag in {html:?}"))?;
                let tag = &rest[1..end];
                if let Some(name) = tag.strip_prefix('/') {
                    if stack.pop().as_deref() != Some(name) {
                        return Err(format!("</{name}> does not close the open tag in {html:?}"));
                    }
                } else {
                    let name = tag.split(' ').next().unwrap_or("");
                    if !TAGS.contains(&name) {
                        return Err(format!("unknown tag <{name}> in {html:?}"));
                    }
                    stack.push(name.to_string());
                }
                rest = &rest[end + 1..];
            }
        }
    }
    if !stack.is_empty() {
        return Err(format!("unclosed {stack:?} in {html:?}"));
    }
    Ok(visible(html))
}

#[test]
fn table_of_renderings() {
    let cases: &[(&str, &str, &str)] = &[
        ("plain", "hello world", "hello world"),
        ("bold", "a **bold** b", "a <b>bold</b> b"),
        ("bold underscores", "__bold__", "<b>bold</b>"),
        ("italic", "*it* and _it_", "<i>it</i> and <i>it</i>"),
        ("bold italic", "***both***", "<b><i>both</i></b>"),
        ("nested", "**bold *and it***", "<b>bold <i>and it</i></b>"),
        ("strike", "~~gone~~", "<s>gone</s>"),
        ("spoiler", "||secret||", "<tg-spoiler>secret</tg-spoiler>"),
        ("inline code", "run `ls -la <dir>`", "run <code>ls -la &lt;dir&gt;</code>"),
        ("code keeps markup literal", "`**not bold**`", "<code>**not bold**</code>"),
        ("double backtick code", "`` a ` b ``", "<code>a ` b</code>"),
        ("link", "[Rust](https://www.rust-lang.org)", "<a href=\"https://www.rust-lang.org\">Rust</a>"),
        (
            "link with bold text",
            "[**go**](https://x.io/a?b=1&c=2)",
            "<a href=\"https://x.io/a?b=1&amp;c=2\"><b>go</b></a>",
        ),
        (
            "link with parens",
            "[wiki](https://en.wikipedia.org/wiki/Rust_(language))",
            "<a href=\"https://en.wikipedia.org/wiki/Rust_(language)\">wiki</a>",
        ),
        ("unsafe link is text", "[click](javascript:alert(1))", "click"),
        ("relative link is text", "[file](./a.txt)", "file"),
        ("image", "![a cat](https://x.io/cat.png)", "<a href=\"https://x.io/cat.png\">a cat</a>"),
        ("autolink", "<https://x.io>", "<a href=\"https://x.io\">https://x.io</a>"),
        ("special characters", "a < b > c & d \"e\"", "a &lt; b &gt; c &amp; d &quot;e&quot;"),
        ("html is text", "<b>not a tag</b>", "&lt;b&gt;not a tag&lt;/b&gt;"),
        ("entity is text", "&amp; &lt;", "&amp;amp; &amp;lt;"),
        ("escapes", "\\*not italic\\* \\_x\\_ \\`y\\`", "*not italic* _x_ `y`"),
        ("snake_case stays", "my_var_name and __init__", "my_var_name and <b>init</b>"),
        ("lone stars", "2 * 3 * 4 = 24", "2 * 3 * 4 = 24"),
        ("unclosed bold", "**open", "**open"),
        ("unclosed code", "`open", "`open"),
        ("heading", "# Title\ntext", "<b>Title</b>\ntext"),
        ("heading with markup", "## A `b` c", "<b>A <code>b</code> c</b>"),
        ("bullets", "- one\n- two\n  * nested", "• one\n• two\n  • nested"),
        ("numbered", "1. one\n2) two", "1. one\n2) two"),
        ("quote", "> quoted **b**\n> more", "<blockquote>quoted <b>b</b>\nmore</blockquote>"),
        ("rule", "a\n\n---\n\nb", "a\n\n———\n\nb"),
        ("paragraphs", "one\n\n\ntwo", "one\n\ntwo"),
        (
            "code block",
            "```rust\nfn main() { a < b && c }\n```",
            "<pre><code class=\"language-rust\">fn main() { a &lt; b &amp;&amp; c }</code></pre>",
        ),
        ("code block no lang", "```\n**x**\n```", "<pre>**x**</pre>"),
        ("tilde fence", "~~~py\nprint(1)\n~~~", "<pre><code class=\"language-py\">print(1)</code></pre>"),
        ("unclosed fence runs to end", "```\nstill code", "<pre>still code</pre>"),
        ("hostile language", "```a\"><b>\nx\n```", "<pre><code class=\"language-ab\">x</code></pre>"),
        ("table", "| a | b |\n|---|---|\n| <1> | 2 |", "<pre>| a | b |\n|---|---|\n| &lt;1&gt; | 2 |</pre>"),
        ("emoji", "😀 **😀**", "😀 <b>😀</b>"),
        ("bold across lines", "**one\ntwo**", "<b>one\ntwo</b>"),
        ("link text with brackets", "[a [b] c](https://x.io)", "<a href=\"https://x.io\">a [b] c</a>"),
        ("stream tool line", "_⚙ running web_fetch…_", "<i>⚙ running web_fetch…</i>"),
    ];
    for (name, md, want) in cases {
        let got = to_html(md);
        assert_eq!(&got, want, "{name}: {md:?}");
        let shown = well_formed(&got).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(utf16_len(&shown) <= utf16_len(md), "{name}: visible text grew: {shown:?}");
    }
}

/// Every ASCII punctuation character, alone, doubled, and inside words, in every position.
#[test]
fn every_special_character_is_safe() {
    let specials = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
    for c in specials.chars() {
        for md in [
            format!("{c}"),
            format!("{c}{c}"),
            format!("a{c}b"),
            format!("a {c}b{c} c"),
            format!("{c}{c}x{c}{c}"),
            format!("[{c}](https://x.io/{c})"),
            format!("`{c}`"),
            format!("```\n{c}\n```"),
        ] {
            let html = to_html(&md);
            let shown = well_formed(&html).unwrap_or_else(|e| panic!("{md:?}: {e}"));
            assert!(utf16_len(&shown) <= utf16_len(&md), "{md:?} -> {html:?}");
        }
    }
}

/// Random mixes of markup characters: the output always parses and never grows.
#[test]
fn random_markdown_never_breaks_html_or_grows() {
    let alphabet: Vec<char> = "ab *_~|`[]()<>&\\!#-1.\n😀>https://x".chars().collect();
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..4000 {
        let len = (seed % 40) as usize + 1;
        let mut md = String::new();
        for _ in 0..len {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            md.push(alphabet[(seed % alphabet.len() as u64) as usize]);
        }
        let html = to_html(&md);
        let shown = well_formed(&html).unwrap_or_else(|e| panic!("{md:?}: {e}"));
        assert!(utf16_len(&shown) <= utf16_len(&md), "{md:?} -> {html:?}");
    }
}

#[test]
fn plain_text_and_clipping() {
    assert_eq!(
        plain("**Only** the person who asked (`telegram:1`) may answer."),
        "Only the person who asked (telegram:1) may answer."
    );
    assert_eq!(plain("a < b & c"), "a < b & c");
    let s = "a😀b";
    assert_eq!(clip_utf16(s, 2), "a", "never half a surrogate pair");
    assert_eq!(clip_utf16(s, 3), "a😀");
    assert_eq!(clip_utf16(s, 10), s);
}
