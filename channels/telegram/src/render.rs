//! The agent's Markdown rendered as Telegram HTML (`parse_mode = HTML`): fenced code blocks,
//! inline code, links, bold, italic, strikethrough, spoilers, headings, quotes, lists, tables.
//!
//! Two promises the rest of the adapter relies on: the output is always HTML Telegram accepts
//! (every tag closed, every `<`, `>` and `&` of the text escaped, only tags Telegram knows), and
//! the visible text is never longer than the Markdown it came from, so a chunk that fits
//! Telegram's 4,096-character limit as Markdown still fits once rendered. This module must never
//! guess at platform state or do I/O: it is a pure function of its input.

mod inline;

use inline::inline;

/// Renders Markdown as Telegram HTML.
pub fn to_html(md: &str) -> String {
    let lines: Vec<&str> = md.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    let mut out = Out::default();
    let mut para: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(fence) = fence_open(line) {
            out.paragraph(&mut para);
            let mut code = Vec::new();
            i += 1;
            while i < lines.len() && !fence.closes(lines[i]) {
                code.push(strip_indent(lines[i], fence.indent));
                i += 1;
            }
            i += 1; // the closing fence (or the end: an unclosed block runs to the end)
            out.block(&pre(&code.join("\n"), fence.lang.as_deref()));
            continue;
        }
        if line.trim().is_empty() {
            out.paragraph(&mut para);
            out.blank();
            i += 1;
            continue;
        }
        let trimmed = line.trim_start();
        if is_rule(trimmed) {
            out.paragraph(&mut para);
            out.block("———");
        } else if let Some(text) = heading(trimmed) {
            out.paragraph(&mut para);
            out.block(&format!("<b>{}</b>", inline(text)));
        } else if is_table_row(trimmed) {
            out.paragraph(&mut para);
            let mut table = Vec::new();
            while i < lines.len() && is_table_row(lines[i].trim_start()) {
                table.push(lines[i]);
                i += 1;
            }
            out.block(&format!("<pre>{}</pre>", escape(&table.join("\n"))));
            continue;
        } else if trimmed.starts_with('>') {
            out.paragraph(&mut para);
            let mut quote = Vec::new();
            while i < lines.len() && lines[i].trim_start().starts_with('>') {
                let l = lines[i].trim_start().trim_start_matches('>');
                quote.push(l.strip_prefix(' ').unwrap_or(l));
                i += 1;
            }
            out.block(&format!("<blockquote>{}</blockquote>", inline(&quote.join("\n"))));
            continue;
        } else if let Some((indent, marker, rest)) = list_item(line) {
            out.paragraph(&mut para);
            out.line(&format!("{indent}{marker} {}", inline(rest)));
        } else {
            para.push(line);
        }
        i += 1;
    }
    out.paragraph(&mut para);
    out.s
}

/// The text a person sees: tags removed, entities decoded. Only for HTML this module produced.
pub fn visible(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(pos) = rest.find(['<', '&']) {
        out.push_str(&rest[..pos]);
        rest = &rest[pos..];
        if rest.starts_with('<') {
            rest = rest.find('>').map_or("", |end| &rest[end + 1..]);
            continue;
        }
        let end = rest.find(';').unwrap_or(rest.len() - 1);
        out.push(match &rest[..=end] {
            "&lt;" => '<',
            "&gt;" => '>',
            "&amp;" => '&',
            "&quot;" => '"',
            _ => '&',
        });
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Markdown as plain text (for callback alerts, which take no markup).
pub fn plain(md: &str) -> String {
    visible(&to_html(md))
}

/// Length in UTF-16 code units, the unit Telegram counts in.
pub fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Cuts `s` to at most `max` UTF-16 units on a character boundary (never inside a surrogate pair).
pub fn clip_utf16(s: &str, max: usize) -> &str {
    let mut used = 0;
    for (i, c) in s.char_indices() {
        used += c.len_utf16();
        if used > max {
            return &s[..i];
        }
    }
    s
}

/// HTML-escapes text for Telegram (`<`, `>`, `&`; quotes too, for attribute values).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        push_escaped(&mut out, c);
    }
    out
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        '&' => out.push_str("&amp;"),
        '"' => out.push_str("&quot;"),
        c => out.push(c),
    }
}

/// Output with the source's block separation kept: one newline between adjacent blocks, two
/// where the source had a blank line.
#[derive(Default)]
struct Out {
    s: String,
    blank: bool,
}

impl Out {
    fn sep(&mut self) {
        if !self.s.is_empty() {
            self.s.push_str(if self.blank { "\n\n" } else { "\n" });
        }
        self.blank = false;
    }

    fn block(&mut self, html: &str) {
        self.sep();
        self.s.push_str(html);
    }

    fn line(&mut self, html: &str) {
        self.block(html);
    }

    fn blank(&mut self) {
        self.blank = true;
    }

    fn paragraph(&mut self, para: &mut Vec<&str>) {
        if !para.is_empty() {
            let html = inline(&para.join("\n"));
            para.clear();
            self.block(&html);
        }
    }
}

struct Fence {
    marker: char,
    len: usize,
    indent: usize,
    lang: Option<String>,
}

impl Fence {
    fn closes(&self, line: &str) -> bool {
        let t = line.trim_start_matches(' ');
        line.len() - t.len() <= 3
            && t.chars().take_while(|c| *c == self.marker).count() >= self.len
            && t.trim_start_matches(self.marker).trim().is_empty()
    }
}

fn fence_open(line: &str) -> Option<Fence> {
    let t = line.trim_start_matches(' ');
    let indent = line.len() - t.len();
    let marker = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = t.chars().take_while(|c| *c == marker).count();
    if indent > 3 || len < 3 {
        return None;
    }
    let info = t[len..].trim();
    if marker == '`' && info.contains('`') {
        return None;
    }
    let lang: String = info
        .split_whitespace()
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "+-_.#".contains(*c))
        .collect();
    Some(Fence { marker, len, indent, lang: (!lang.is_empty()).then_some(lang) })
}

fn strip_indent(line: &str, n: usize) -> &str {
    let spaces = line.len() - line.trim_start_matches(' ').len();
    &line[spaces.min(n)..]
}

fn pre(code: &str, lang: Option<&str>) -> String {
    match lang {
        Some(lang) => format!("<pre><code class=\"language-{lang}\">{}</code></pre>", escape(code)),
        None => format!("<pre>{}</pre>", escape(code)),
    }
}

/// A pipe-table row (`| a | b |`), shown as preformatted text; `||spoiler||` is not one.
fn is_table_row(t: &str) -> bool {
    t.starts_with('|') && !t.starts_with("||")
}

fn is_rule(t: &str) -> bool {
    let t = t.trim_end();
    let Some(c) = t.chars().next().filter(|c| "-*_".contains(*c)) else { return false };
    t.chars().all(|x| x == c || x == ' ') && t.chars().filter(|x| *x == c).count() >= 3
}

fn heading(t: &str) -> Option<&str> {
    let level = t.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &t[level..];
    if !rest.is_empty() && !rest.starts_with(' ') {
        return None;
    }
    Some(rest.trim().trim_end_matches('#').trim_end())
}

/// `- item`, `* item`, `+ item` (shown with a bullet) and `1. item` / `1) item` (kept).
fn list_item(line: &str) -> Option<(&str, String, &str)> {
    let t = line.trim_start();
    let indent = &line[..line.len() - t.len()];
    if let Some(rest) = t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")).or_else(|| t.strip_prefix("+ ")) {
        return Some((indent, "•".into(), rest));
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if (1..=9).contains(&digits) {
        let after = &t[digits..];
        if let Some(rest) = after.strip_prefix(". ").or_else(|| after.strip_prefix(") ")) {
            return Some((indent, escape(&t[..digits + 1]), rest));
        }
    }
    None
}

#[cfg(test)]
mod tests;
