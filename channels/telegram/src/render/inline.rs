//! Inline Markdown (code spans, links, emphasis, strikethrough, spoilers, escapes) as Telegram
//! HTML. A delimiter without its partner stays literal text, so the output is always balanced;
//! it must never emit a tag it does not also close.

use super::push_escaped;

/// Renders one paragraph (lines joined with `\n`) of inline Markdown.
pub(super) fn inline(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 16);
    render(&chars, 0, chars.len(), false, &mut out);
    out
}

fn render(c: &[char], start: usize, end: usize, in_link: bool, out: &mut String) {
    let mut i = start;
    while i < end {
        let ch = c[i];
        match ch {
            '\\' if i + 1 < end && c[i + 1].is_ascii_punctuation() => {
                push_escaped(out, c[i + 1]);
                i += 2;
            }
            '`' => {
                let n = run(c, i, end, '`');
                match code_close(c, i + n, end, n) {
                    Some(j) => {
                        let mut body: String = c[i + n..j].iter().collect();
                        if body.len() > 2 && body.starts_with(' ') && body.ends_with(' ') && body.trim() != "" {
                            body = body[1..body.len() - 1].to_string();
                        }
                        out.push_str("<code>");
                        body.chars().for_each(|x| push_escaped(out, x));
                        out.push_str("</code>");
                        i = j + n;
                    }
                    None => {
                        (0..n).for_each(|_| out.push('`'));
                        i += n;
                    }
                }
            }
            '[' | '!' if !in_link => match link(c, i, end) {
                Some(l) => {
                    if safe_url(&l.url) {
                        out.push_str("<a href=\"");
                        l.url.chars().for_each(|x| push_escaped(out, x));
                        out.push_str("\">");
                        if l.text.0 == l.text.1 {
                            out.push_str(if l.image { "image" } else { "link" });
                        } else {
                            render(c, l.text.0, l.text.1, true, out);
                        }
                        out.push_str("</a>");
                    } else {
                        render(c, l.text.0, l.text.1, true, out);
                    }
                    i = l.next;
                }
                None => {
                    push_escaped(out, ch);
                    i += 1;
                }
            },
            '<' if !in_link => match autolink(c, i, end) {
                Some(j) => {
                    let url: String = c[i + 1..j].iter().collect();
                    out.push_str("<a href=\"");
                    url.chars().for_each(|x| push_escaped(out, x));
                    out.push_str("\">");
                    url.chars().for_each(|x| push_escaped(out, x));
                    out.push_str("</a>");
                    i = j + 1;
                }
                None => {
                    out.push_str("&lt;");
                    i += 1;
                }
            },
            '*' | '_' | '~' | '|' => i = delimited(c, i, end, in_link, out),
            _ => {
                push_escaped(out, ch);
                i += 1;
            }
        }
    }
}

/// Emphasis, strikethrough (`~~`) and spoilers (`||`) starting at `i`; returns where to go on.
fn delimited(c: &[char], i: usize, end: usize, in_link: bool, out: &mut String) -> usize {
    let ch = c[i];
    let n = run(c, i, end, ch);
    let tags: &[&str] = match (ch, n) {
        ('*' | '_', 1) => &["i"],
        ('*' | '_', 2) => &["b"],
        ('*' | '_', 3) => &["b", "i"],
        ('~', 2) => &["s"],
        ('|', 2) => &["tg-spoiler"],
        _ => &[],
    };
    if !tags.is_empty() && can_open(c, i, n) {
        if let Some(j) = closer(c, i + n, end, ch, n) {
            tags.iter().for_each(|t| out.push_str(&format!("<{t}>")));
            render(c, i + n, j, in_link, out);
            tags.iter().rev().for_each(|t| out.push_str(&format!("</{t}>")));
            return j + n;
        }
    }
    (0..n).for_each(|_| push_escaped(out, ch));
    i + n
}

fn run(c: &[char], i: usize, end: usize, ch: char) -> usize {
    c[i..end].iter().take_while(|x| **x == ch).count()
}

fn before(c: &[char], i: usize) -> char {
    if i == 0 {
        ' '
    } else {
        c[i - 1]
    }
}

fn after(c: &[char], j: usize) -> char {
    c.get(j).copied().unwrap_or(' ')
}

fn is_punct(x: char) -> bool {
    x.is_ascii_punctuation() || (!x.is_alphanumeric() && !x.is_whitespace())
}

/// A run `c[i..i+n]` that may open: followed by non-space, and for `_` not inside a word.
fn can_open(c: &[char], i: usize, n: usize) -> bool {
    let (prev, next) = (before(c, i), after(c, i + n));
    let left = !next.is_whitespace() && (!is_punct(next) || prev.is_whitespace() || is_punct(prev));
    left && (c[i] != '_' || !prev.is_alphanumeric())
}

fn can_close(c: &[char], j: usize, n: usize) -> bool {
    let (prev, next) = (before(c, j), after(c, j + n));
    let right = !prev.is_whitespace() && (!is_punct(prev) || next.is_whitespace() || is_punct(next));
    right && (c[j] != '_' || !next.is_alphanumeric())
}

/// The first run of exactly `n` times `ch` after `from` that can close (else the end of a longer
/// one), skipping code spans and escapes.
fn closer(c: &[char], from: usize, end: usize, ch: char, n: usize) -> Option<usize> {
    let mut j = from;
    // A longer run that can close (`***` ending `**bold *it***`), used if no exact one comes.
    let mut longer = None;
    while j < end {
        match c[j] {
            '\\' => j += 2,
            '`' => {
                let m = run(c, j, end, '`');
                j = code_close(c, j + m, end, m).map_or(j + m, |k| k + m);
            }
            x if x == ch => {
                let m = run(c, j, end, ch);
                if m == n && j > from && can_close(c, j, n) {
                    return Some(j);
                }
                if m > n && j > from && longer.is_none() && can_close(c, j, m) {
                    longer = Some(j + m - n);
                }
                j += m;
            }
            _ => j += 1,
        }
    }
    longer
}

/// Where the closing backtick run of length `n` starts, if there is one before `end`.
fn code_close(c: &[char], from: usize, end: usize, n: usize) -> Option<usize> {
    let mut j = from;
    while j < end {
        if c[j] == '`' {
            let m = run(c, j, end, '`');
            if m == n {
                return Some(j);
            }
            j += m;
        } else {
            j += 1;
        }
    }
    None
}

struct Link {
    image: bool,
    /// The range of the link text.
    text: (usize, usize),
    url: String,
    next: usize,
}

/// `[text](url)` or `![alt](url)` at `i` (an optional `"title"` after the URL is dropped).
fn link(c: &[char], i: usize, end: usize) -> Option<Link> {
    let image = c[i] == '!';
    let open = if image { i + 1 } else { i };
    if c.get(open) != Some(&'[') {
        return None;
    }
    let mut depth = 0;
    let mut j = open;
    let close = loop {
        if j >= end {
            return None;
        }
        match c[j] {
            '\\' => j += 1,
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    break j;
                }
            }
            '`' => {
                let m = run(c, j, end, '`');
                j = code_close(c, j + m, end, m).map_or(j + m, |k| k + m) - 1;
            }
            '\n' if j + 1 < end && c[j + 1] == '\n' => return None,
            _ => {}
        }
        j += 1;
    };
    if c.get(close + 1) != Some(&'(') || close + 1 >= end {
        return None;
    }
    let mut parens = 0;
    let mut k = close + 2;
    let url_end = loop {
        if k >= end {
            return None;
        }
        match c[k] {
            '(' => parens += 1,
            ')' if parens == 0 => break k,
            ')' => parens -= 1,
            '\n' => return None,
            _ => {}
        }
        k += 1;
    };
    let inner: String = c[close + 2..url_end].iter().collect();
    let url = inner.split_whitespace().next().unwrap_or("").trim_start_matches('<').trim_end_matches('>');
    Some(Link { image, text: (open + 1, close), url: url.to_string(), next: url_end + 1 })
}

/// `<https://...>`: returns the index of the closing `>`.
fn autolink(c: &[char], i: usize, end: usize) -> Option<usize> {
    let j = (i + 1..end).find(|&j| c[j] == '>' || c[j].is_whitespace() || c[j] == '<')?;
    if c[j] != '>' {
        return None;
    }
    let url: String = c[i + 1..j].iter().collect();
    safe_url(&url).then_some(j)
}

/// Schemes a link may use; anything else (relative paths, `javascript:`) is shown as text.
fn safe_url(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    ["http://", "https://", "tg://", "mailto:"].iter().any(|p| lower.starts_with(p) && lower.len() > p.len())
}
