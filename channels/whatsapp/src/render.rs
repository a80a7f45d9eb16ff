//! Markdown as the agent writes it -> WhatsApp's own formatting: `**bold**` and `__bold__` ->
//! `*bold*`, `*italic*` -> `_italic_`, `~~strike~~` -> `~strike~`, headings -> a bold line,
//! `[text](url)` -> `text (url)`, `* item` -> `- item`; inline code and fenced blocks are kept
//! as they are (WhatsApp shows ``` blocks and `code` in monospace), and nothing inside them is
//! touched.
//!
//! Pure text in, text out: it must never call WhatsApp.

/// Stands for a bold marker until single-star italics are converted.
const BOLD: char = '\u{E000}';

/// `markdown` in WhatsApp's formatting.
pub fn render(markdown: &str) -> String {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    for line in markdown.split('\n') {
        let trimmed = line.trim_start();
        if let Some(open) = &fence {
            if trimmed.starts_with(open.as_str()) && trimmed.trim_start_matches(open.as_str()).trim().is_empty() {
                fence = None;
                out.push("```".to_string());
            } else {
                out.push(line.to_string());
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            let marker: String = trimmed.chars().take_while(|c| *c == '`' || *c == '~').collect();
            fence = Some(marker);
            out.push("```".to_string());
            continue;
        }
        out.push(render_line(line));
    }
    if fence.is_some() {
        out.push("```".to_string());
    }
    out.join("\n")
}

fn render_line(line: &str) -> String {
    let indent = &line[..line.len() - line.trim_start().len()];
    let rest = line.trim_start();
    let hashes = rest.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&hashes) && rest[hashes..].starts_with(' ') {
        let title = inline(rest[hashes..].trim()).replace(['*'], "");
        return if title.is_empty() { String::new() } else { format!("*{title}*") };
    }
    for bullet in ["* ", "+ "] {
        if let Some(item) = rest.strip_prefix(bullet) {
            return format!("{indent}- {}", inline(item));
        }
    }
    if rest.starts_with("- ") || rest.starts_with("> ") {
        return format!("{indent}{}{}", &rest[..2], inline(&rest[2..]));
    }
    format!("{indent}{}", inline(rest))
}

/// Inline formatting of one line, code spans left alone.
fn inline(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        let run = rest[start..].chars().take_while(|c| *c == '`').count();
        let ticks = &rest[start..start + run];
        match rest[start + run..].find(ticks) {
            Some(len) => {
                out.push_str(&spans(&rest[..start]));
                let end = start + run + len + run;
                out.push_str(&rest[start..end]);
                rest = &rest[end..];
            }
            None => break,
        }
    }
    out.push_str(&spans(rest));
    out
}

/// Emphasis, strike-through and links in text without code.
fn spans(text: &str) -> String {
    let text = links(text);
    let text = pairs(&text, "**", &BOLD.to_string());
    let text = pairs(&text, "__", &BOLD.to_string());
    let text = pairs(&text, "~~", "~");
    let text = pairs(&text, "*", "_");
    text.replace(BOLD, "*")
}

/// `[text](url)` -> `text (url)`, or the bare URL when the text is the URL.
fn links(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|i| open + i) else { break };
        let Some(end) = rest[close + 2..].find(')').map(|i| close + 2 + i) else { break };
        let (label, url) = (&rest[open + 1..close], &rest[close + 2..end]);
        out.push_str(&rest[..open]);
        if label == url || label.is_empty() {
            out.push_str(url);
        } else {
            out.push_str(&format!("{label} ({url})"));
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Replaces each `delim`…`delim` pair (opening before a non-space, closing after one, content
/// not empty) with `with`…`with`; unpaired delimiters stay as they are.
fn pairs(text: &str, delim: &str, with: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find(delim) {
        let after = &rest[open + delim.len()..];
        let opens = after.chars().next().is_some_and(|c| !c.is_whitespace() && !delim.starts_with(c));
        let word_before = rest[..open].chars().last().is_some_and(|c| c.is_alphanumeric());
        let close = if opens && !(delim == "*" && word_before) { closing(after, delim) } else { None };
        match close {
            Some(len) => {
                out.push_str(&rest[..open]);
                out.push_str(with);
                out.push_str(&after[..len]);
                out.push_str(with);
                rest = &after[len + delim.len()..];
            }
            None => {
                out.push_str(&rest[..open + delim.len()]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Where the closing `delim` of a span starting at `after` is: after a non-space character.
fn closing(after: &str, delim: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = after[from..].find(delim).map(|i| from + i) {
        let before = after[..i].chars().last();
        if i > 0 && before.is_some_and(|c| !c.is_whitespace()) {
            return Some(i);
        }
        from = i + delim.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn markdown_becomes_whatsapp_formatting() {
        let cases: &[(&str, &str)] = &[
            ("plain text", "plain text"),
            ("**bold** and __bold__", "*bold* and *bold*"),
            ("*italic* and _italic_", "_italic_ and _italic_"),
            ("~~gone~~", "~gone~"),
            ("a * b * c", "a * b * c"),
            ("2*3*4", "2*3*4"),
            ("`**kept**` and **bold**", "`**kept**` and *bold*"),
            ("# Title", "*Title*"),
            ("## **Bold** title", "*Bold title*"),
            ("* item\n* *two*", "- item\n- _two_"),
            ("- item", "- item"),
            ("> quoted **x**", "> quoted *x*"),
            ("[docs](https://x.example/a)", "docs (https://x.example/a)"),
            ("[https://x.example](https://x.example)", "https://x.example"),
            ("```rust\nlet a = **b**;\n```", "```\nlet a = **b**;\n```"),
            ("```\nunclosed *x*", "```\nunclosed *x*\n```"),
            ("snake_case_name stays", "snake_case_name stays"),
            ("**unclosed", "**unclosed"),
        ];
        for (markdown, want) in cases {
            assert_eq!(render(markdown), *want, "{markdown:?}");
        }
    }
}
