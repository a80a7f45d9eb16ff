//! Markdown as the agent writes it -> Signal's plain text with text styles. Signal has no markup
//! in the text: styles are ranges sent beside it (`start:length:STYLE`, counted in UTF-16 code
//! units), so `**bold**` becomes `bold` with a BOLD range, `*italic*` / `_italic_` ITALIC,
//! `~~strike~~` STRIKETHROUGH, `` `code` `` and fenced blocks MONOSPACE, `||spoiler||` SPOILER,
//! headings a bold line, `[text](url)` `text (url)`, `* item` `- item`.
//!
//! Pure text in, text out: it must never call Signal.

/// Signal's text styles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Bold,
    Italic,
    Strike,
    Mono,
    Spoiler,
}

impl Style {
    fn name(self) -> &'static str {
        match self {
            Self::Bold => "BOLD",
            Self::Italic => "ITALIC",
            Self::Strike => "STRIKETHROUGH",
            Self::Mono => "MONOSPACE",
            Self::Spoiler => "SPOILER",
        }
    }
}

/// Text with its style ranges, as `send` takes them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Styled {
    pub text: String,
    /// `start:length:STYLE`, in UTF-16 code units of `text`.
    pub styles: Vec<String>,
}

/// Builds the text while counting UTF-16 units, so ranges are right for any script or emoji.
#[derive(Default)]
struct Out {
    text: String,
    units: usize,
    styles: Vec<String>,
}

impl Out {
    fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.units += s.encode_utf16().count();
    }

    /// Appends `s` styled `style` (nothing for an empty `s`).
    fn styled(&mut self, s: &str, style: Style) {
        let start = self.units;
        self.push(s);
        if self.units > start {
            self.styles.push(format!("{start}:{}:{}", self.units - start, style.name()));
        }
    }
}

/// `markdown` as Signal text and styles.
pub fn render(markdown: &str) -> Styled {
    let mut out = Out::default();
    let mut fence: Option<String> = None;
    let mut block = String::new();
    let lines: Vec<&str> = markdown.split('\n').collect();
    for (n, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let last = n + 1 == lines.len();
        if let Some(open) = &fence {
            if trimmed.starts_with(open.as_str()) && trimmed.trim_start_matches(open.as_str()).trim().is_empty() {
                fence = None;
                let body = std::mem::take(&mut block);
                out.styled(body.trim_end_matches('\n'), Style::Mono);
                if !last {
                    out.push("\n");
                }
            } else {
                block.push_str(line);
                block.push('\n');
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(trimmed.chars().take_while(|c| *c == '`' || *c == '~').collect());
            continue;
        }
        line_out(&mut out, line);
        if !last {
            out.push("\n");
        }
    }
    if fence.is_some() {
        out.styled(block.trim_end_matches('\n'), Style::Mono);
    }
    Styled { text: out.text, styles: out.styles }
}

fn line_out(out: &mut Out, line: &str) {
    let indent = &line[..line.len() - line.trim_start().len()];
    let rest = line.trim_start();
    let hashes = rest.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&hashes) && rest[hashes..].starts_with(' ') {
        let mut title = Out::default();
        inline(&mut title, rest[hashes..].trim());
        out.styled(&title.text, Style::Bold);
        return;
    }
    out.push(indent);
    for bullet in ["* ", "+ "] {
        if let Some(item) = rest.strip_prefix(bullet) {
            out.push("- ");
            return inline(out, item);
        }
    }
    inline(out, rest);
}

/// The markers that open and close a span, longest first.
const SPANS: [(&str, Style); 7] = [
    ("**", Style::Bold),
    ("__", Style::Bold),
    ("~~", Style::Strike),
    ("||", Style::Spoiler),
    ("`", Style::Mono),
    ("*", Style::Italic),
    ("_", Style::Italic),
];

/// One line's inline Markdown. Spans do not nest (the inner markers stay as text), which keeps
/// ranges simple and never loses a character.
fn inline(out: &mut Out, s: &str) {
    let mut rest = s;
    while !rest.is_empty() {
        if let Some((label, url, used)) = link(rest) {
            out.push(label);
            if url != label {
                out.push(&format!(" ({url})"));
            }
            rest = &rest[used..];
            continue;
        }
        let span = SPANS.iter().find_map(|(marker, style)| {
            let body = rest.strip_prefix(marker)?;
            // `_` inside words (snake_case) and `*` before a space are not emphasis.
            if body.starts_with(' ') || body.is_empty() {
                return None;
            }
            let end = body.find(marker)?;
            let inner = &body[..end];
            let after = &body[end + marker.len()..];
            let word_after = after.chars().next().is_some_and(char::is_alphanumeric);
            (!(inner.is_empty() || inner.ends_with(' ') || (*marker == "_" && word_after))).then_some((
                inner,
                *style,
                marker.len() * 2 + end,
            ))
        });
        match span {
            Some((inner, style, used)) => {
                out.styled(inner, style);
                rest = &rest[used..];
            }
            None => {
                let c = rest.chars().next().unwrap_or(' ');
                // A word's inner `_` or `*` stays as it is, and so does the word itself.
                let take = if c.is_alphanumeric() {
                    rest.find(|ch: char| !ch.is_alphanumeric() && ch != '_').unwrap_or(rest.len())
                } else {
                    c.len_utf8()
                };
                out.push(&rest[..take]);
                rest = &rest[take..];
            }
        }
    }
}

/// `[label](url)` at the start of `s`: (label, url, bytes used).
fn link(s: &str) -> Option<(&str, &str, usize)> {
    let body = s.strip_prefix('[')?;
    let close = body.find("](")?;
    let label = &body[..close];
    let after = &body[close + 2..];
    let end = after.find(')')?;
    let url = &after[..end];
    (!label.is_empty() && !url.contains(' ')).then_some((label, url, 1 + close + 2 + end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_text_and_styles() {
        let cases: &[(&str, &str, &[&str])] = &[
            ("plain words", "plain words", &[]),
            ("a **bold** word", "a bold word", &["2:4:BOLD"]),
            ("*it* and _it_", "it and it", &["0:2:ITALIC", "7:2:ITALIC"]),
            ("~~gone~~ ||secret||", "gone secret", &["0:4:STRIKETHROUGH", "5:6:SPOILER"]),
            ("run `ls -la` now", "run ls -la now", &["4:6:MONOSPACE"]),
            ("# Title\nbody", "Title\nbody", &["0:5:BOLD"]),
            ("* one\n+ two", "- one\n- two", &[]),
            ("see [docs](https://x.y/z)", "see docs (https://x.y/z)", &[]),
            ("snake_case_name stays", "snake_case_name stays", &[]),
            ("2 * 3 * 4", "2 * 3 * 4", &[]),
            ("```rust\nfn main() {}\n```\nafter", "fn main() {}\nafter", &["0:12:MONOSPACE"]),
            // UTF-16 units: the emoji is two units, so the range starts at 3.
            ("😀 **é**", "😀 é", &["3:1:BOLD"]),
            ("```\nunclosed", "unclosed", &["0:8:MONOSPACE"]),
        ];
        for (md, text, styles) in cases {
            let got = render(md);
            assert_eq!(got.text, *text, "{md}");
            assert_eq!(got.styles, styles.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{md}");
        }
    }
}
