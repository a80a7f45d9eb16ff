//! Markdown as the agent writes it -> HTML for the platforms that take it (a mail's HTML part,
//! Matrix's `formatted_body`): paragraphs, line breaks,
//! headings, `**bold**`, `*italic*`, `` `code` ``, fenced blocks as `<pre>`, `[text](url)` links
//! (http, https and mailto only) and `<https://…>` autolinks, everything else escaped.
//!
//! Pure text in, text out: it must never emit a tag or attribute from the input as is.

/// `s` safe as HTML text or a quoted attribute value.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Replaces each `delim…delim` pair in escaped text with `<tag>…</tag>`.
fn pairs(s: &str, delim: &str, tag: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find(delim) {
        let after = &rest[start + delim.len()..];
        match after.find(delim) {
            Some(end) if end > 0 && !after.starts_with(' ') => {
                out.push_str(&rest[..start]);
                out.push_str(&format!("<{tag}>{}</{tag}>", &after[..end]));
                rest = &after[end + delim.len()..];
            }
            _ => {
                out.push_str(&rest[..start + delim.len()]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn links(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let parsed = after.find("](").and_then(|mid| {
            let url_part = &after[mid + 2..];
            url_part.find(')').map(|end| (&after[..mid], &url_part[..end], open + 1 + mid + 2 + end + 1))
        });
        match parsed {
            Some((label, url, used))
                if ["http://", "https://", "mailto:"].iter().any(|p| url.starts_with(p)) && !url.contains(' ') =>
            {
                out.push_str(&rest[..open]);
                out.push_str(&format!("<a href=\"{url}\">{label}</a>"));
                rest = &rest[used..];
            }
            _ => {
                out.push_str(&rest[..open + 1]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The first `<http(s)://…>` autolink in escaped text: what is before it, its address (still
/// escaped) and what is after it.
fn next_autolink(s: &str) -> Option<(&str, &str, &str)> {
    let mut from = 0;
    while let Some(i) = s[from..].find("&lt;") {
        let start = from + i;
        let body = &s[start + 4..];
        if body.starts_with("https://") || body.starts_with("http://") {
            if let Some(end) = body.find("&gt;") {
                let url = &body[..end];
                if !url.contains(char::is_whitespace) && !url.contains("&lt;") && !url.contains("&quot;") {
                    return Some((&s[..start], url, &body[end + 4..]));
                }
            }
        }
        from = start + 4;
    }
    None
}

/// A line: autolinks kept whole (an address may hold `__` or `*`), the rest styled.
fn inline(line: &str) -> String {
    let escaped = escape(line);
    let mut out = String::new();
    let mut rest = escaped.as_str();
    while let Some((before, url, after)) = next_autolink(rest) {
        out.push_str(&styled(before));
        out.push_str(&format!("<a href=\"{url}\">{url}</a>"));
        rest = after;
    }
    out.push_str(&styled(rest));
    out
}

fn styled(s: &str) -> String {
    let s = pairs(s, "`", "code");
    let s = pairs(&s, "**", "strong");
    let s = pairs(&s, "__", "strong");
    let s = pairs(&s, "*", "em");
    links(&s)
}

/// `markdown` as an HTML fragment (no document around it).
pub fn markdown_html(markdown: &str) -> String {
    let mut out = String::new();
    let mut para: Vec<String> = Vec::new();
    let mut code: Option<Vec<String>> = None;
    let flush = |para: &mut Vec<String>, out: &mut String| {
        if !para.is_empty() {
            out.push_str(&format!("<p>{}</p>", para.join("<br>")));
            para.clear();
        }
    };
    for line in markdown.lines() {
        let t = line.trim_start();
        if t.starts_with("```") {
            match code.take() {
                Some(block) => out.push_str(&format!("<pre><code>{}</code></pre>", escape(&block.join("\n")))),
                None => {
                    flush(&mut para, &mut out);
                    code = Some(Vec::new());
                }
            }
            continue;
        }
        if let Some(block) = code.as_mut() {
            block.push(line.to_string());
            continue;
        }
        if t.is_empty() {
            flush(&mut para, &mut out);
            continue;
        }
        let hashes = t.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && t[hashes..].starts_with(' ') {
            flush(&mut para, &mut out);
            let level = hashes.min(3);
            out.push_str(&format!("<h{level}>{}</h{level}>", inline(t[hashes..].trim())));
            continue;
        }
        para.push(inline(line));
    }
    if let Some(block) = code {
        out.push_str(&format!("<pre><code>{}</code></pre>", escape(&block.join("\n"))));
    }
    flush(&mut para, &mut out);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn markdown_becomes_safe_html() {
        let cases = [
            ("**Done** and *soon*", "<p><strong>Done</strong> and <em>soon</em></p>"),
            ("a <script>x</script>", "<p>a &lt;script&gt;x&lt;/script&gt;</p>"),
            ("one\ntwo\n\nthree", "<p>one<br>two</p><p>three</p>"),
            ("# Plan", "<h1>Plan</h1>"),
            ("```\n<b>\n```", "<pre><code>&lt;b&gt;</code></pre>"),
            (
                "[docs](https://x.y) [bad](javascript:alert(1))",
                "<p><a href=\"https://x.y\">docs</a> [bad](javascript:alert(1))</p>",
            ),
            ("run `ls *` now", "<p>run <code>ls *</code> now</p>"),
            (
                "- Deny: <https://b.example/approve/a__b*c.d?x=1&y=2> **now**",
                "<p>- Deny: <a href=\"https://b.example/approve/a__b*c.d?x=1&amp;y=2\">https://b.example/approve/a__b*c.d?x=1&amp;y=2</a> <strong>now</strong></p>",
            ),
            ("<ftp://x> <https://a b>", "<p>&lt;ftp://x&gt; &lt;https://a b&gt;</p>"),
        ];
        for (md, want) in cases {
            assert_eq!(super::markdown_html(md), want, "{md}");
        }
    }
}
