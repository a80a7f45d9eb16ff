//! Markdown as the agent writes it -> HTML for the platforms that take it (a mail's HTML part,
//! Matrix's `formatted_body`): paragraphs, line breaks,
//! headings, `**bold**`, `*italic*`, `` `code` ``, fenced blocks as `<pre>`, `[text](url)` links
//! (http, https and mailto only), everything else escaped.
//!
//! Pure text in, text out: it must never emit a tag or attribute from the input as is.

fn escape(s: &str) -> String {
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

fn inline(line: &str) -> String {
    let s = escape(line);
    let s = pairs(&s, "`", "code");
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
        ];
        for (md, want) in cases {
            assert_eq!(super::markdown_html(md), want, "{md}");
        }
    }
}
