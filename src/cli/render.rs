//! Markdown for the terminal chat: bold, italics, inline code, links, headings, lists, quotes,
//! rules, fenced code blocks and tables, with ANSI styles ([`Mode::Ansi`]), laid out without
//! escape codes ([`Mode::Plain`], for `NO_COLOR`), or passed through as written ([`Mode::Raw`],
//! when stdout is not a terminal).
//!
//! [`Markdown`] renders a reply while it streams: each piece of text is rendered as soon as it
//! cannot change any more (a finished line; a paragraph up to its last space; a table once it
//! has ended), so pieces rendered one by one give what [`render`] gives for the whole. It must
//! never drop text and never emit an escape code outside [`Mode::Ansi`].

/// How replies are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// As the model wrote it (stdout is a file or a pipe).
    Raw,
    /// Laid out for reading, no escape codes (`NO_COLOR`).
    Plain,
    /// Laid out with ANSI styles.
    Ansi,
}

impl Mode {
    /// The mode for this process: raw unless stdout is a terminal, plain with `NO_COLOR`.
    pub fn detect() -> Self {
        use std::io::IsTerminal;
        if !std::io::stdout().is_terminal() {
            Mode::Raw
        } else if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
            Mode::Plain
        } else {
            Mode::Ansi
        }
    }
}

const BOLD: (&str, &str) = ("\x1b[1m", "\x1b[22m");
const ITALIC: (&str, &str) = ("\x1b[3m", "\x1b[23m");
const CODE: (&str, &str) = ("\x1b[36m", "\x1b[39m");
const STRIKE: (&str, &str) = ("\x1b[9m", "\x1b[29m");
const DIM: (&str, &str) = ("\x1b[2m", "\x1b[22m");
const HEADING: (&str, &str) = ("\x1b[1;4m", "\x1b[0m");

/// `text` rendered whole (what streaming it in any pieces gives).
#[cfg(test)]
pub fn render(text: &str, mode: Mode) -> String {
    let mut md = Markdown::new(mode);
    let mut out = md.push(text);
    out.push_str(&md.finish());
    out
}

/// A reply being rendered as it streams in.
pub struct Markdown {
    mode: Mode,
    /// The line not finished yet.
    pending: String,
    /// Bytes of `pending` already rendered (a paragraph's words, written ahead of its end).
    emitted: usize,
    /// Inside a fenced code block: its fence (```` ``` ```` or `~~~`).
    fence: Option<String>,
    /// Rows of a table not written yet (its widths need all of them).
    table: Vec<String>,
}

impl Markdown {
    pub fn new(mode: Mode) -> Self {
        Self { mode, pending: String::new(), emitted: 0, fence: None, table: Vec::new() }
    }

    /// Takes the next piece of the reply; returns what can be written now.
    pub fn push(&mut self, text: &str) -> String {
        if self.mode == Mode::Raw {
            return text.to_string();
        }
        let mut out = String::new();
        self.pending.push_str(text);
        while let Some(nl) = self.pending.find('\n') {
            let line: String = self.pending[..nl].to_string();
            let done = self.emitted;
            self.pending.drain(..=nl);
            self.emitted = 0;
            self.line(&line, done, &mut out);
        }
        self.ahead(&mut out);
        out
    }

    /// The end of the reply: writes what is left.
    pub fn finish(&mut self) -> String {
        if self.mode == Mode::Raw {
            return String::new();
        }
        let mut out = String::new();
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            let done = std::mem::take(&mut self.emitted);
            self.line(&line, done, &mut out);
            // The reply did not end with a newline: neither does its rendering.
            if out.ends_with('\n') && self.table.is_empty() {
                out.pop();
            }
        }
        let ended_inside = !self.table.is_empty();
        self.flush_table(&mut out);
        if ended_inside && out.ends_with('\n') {
            out.pop();
        }
        self.fence = None;
        out
    }

    /// One finished line, of which the first `done` bytes were already written.
    fn line(&mut self, line: &str, done: usize, out: &mut String) {
        let trimmed = line.trim_start();
        if let Some(fence) = &self.fence {
            if trimmed.starts_with(fence.as_str()) && trimmed.trim_end().chars().all(|c| fence.starts_with(c)) {
                self.fence = None;
            } else {
                out.push_str("  ");
                self.styled(CODE, line, out);
                out.push('\n');
            }
            return;
        }
        if is_table_row(trimmed) {
            self.table.push(trimmed.trim_end().to_string());
            return;
        }
        self.flush_table(out);
        if let Some(fence) = fence_of(trimmed) {
            self.fence = Some(fence);
            return;
        }
        if done > 0 {
            out.push_str(&inline(&line[done..], self.mode));
        } else {
            out.push_str(&self.block(line));
        }
        out.push('\n');
    }

    /// Writes the words of an unfinished paragraph, list item or quote that can no longer
    /// change: up to its last space, when no inline marker is left open there.
    fn ahead(&mut self, out: &mut String) {
        if self.fence.is_some() || !self.table.is_empty() || !self.pending.contains(' ') {
            return;
        }
        let Some(start) = flowing_text_start(&self.pending) else { return };
        let Some(cut) = self.pending.rfind(' ').map(|i| i + 1) else { return };
        let from = self.emitted.max(start);
        if cut <= from || !balanced(&self.pending[start..cut]) {
            return;
        }
        if self.emitted == 0 {
            out.push_str(&self.prefix(&self.pending[..start]));
        }
        out.push_str(&inline(&self.pending[from..cut], self.mode));
        self.emitted = cut;
    }

    /// A whole line outside code and tables.
    fn block(&self, line: &str) -> String {
        let trimmed = line.trim();
        if let Some(text) = heading_text(trimmed) {
            let text = inline(text, self.mode);
            return match self.mode {
                Mode::Ansi => format!("{}{text}{}", HEADING.0, HEADING.1),
                _ => text,
            };
        }
        if trimmed.len() >= 3 && ["-", "*", "_"].iter().any(|c| trimmed.chars().all(|t| t.to_string() == *c)) {
            let mut out = String::new();
            self.styled(DIM, &"─".repeat(40), &mut out);
            return out;
        }
        match flowing_text_start(line) {
            Some(start) => format!("{}{}", self.prefix(&line[..start]), inline(&line[start..], self.mode)),
            None => inline(line, self.mode),
        }
    }

    /// The rendering of a list or quote marker (`- `, `1. `, `> `), indentation kept.
    fn prefix(&self, marker: &str) -> String {
        let indent = &marker[..marker.len() - marker.trim_start().len()];
        let m = marker.trim();
        let shown = match m {
            "" => String::new(),
            "-" | "*" | "+" => "• ".to_string(),
            ">" => {
                let mut s = String::new();
                self.styled(DIM, "│", &mut s);
                s.push(' ');
                s
            }
            numbered => format!("{numbered} "),
        };
        format!("{indent}{shown}")
    }

    fn styled(&self, style: (&str, &str), text: &str, out: &mut String) {
        if self.mode == Mode::Ansi {
            out.push_str(style.0);
            out.push_str(text);
            out.push_str(style.1);
        } else {
            out.push_str(text);
        }
    }

    /// Writes the collected table with its columns aligned.
    fn flush_table(&mut self, out: &mut String) {
        if self.table.is_empty() {
            return;
        }
        let rows: Vec<Vec<String>> = std::mem::take(&mut self.table).iter().map(|r| cells(r)).collect();
        let is_rule = |row: &Vec<String>| {
            row.iter().all(|c| {
                let c = c.trim();
                !c.is_empty() && c.trim_matches(':').chars().all(|ch| ch == '-') && c.contains('-')
            })
        };
        let rule = rows.get(1).filter(|r| is_rule(r)).cloned();
        let right: Vec<bool> = rule
            .as_ref()
            .map(|r| r.iter().map(|c| c.trim().ends_with(':') && !c.trim().starts_with(':')).collect())
            .unwrap_or_default();
        let body: Vec<Vec<(String, usize)>> = rows
            .iter()
            .enumerate()
            .filter(|(i, _)| !(*i == 1 && rule.is_some()))
            .map(|(_, r)| {
                r.iter().map(|c| (inline(c.trim(), self.mode), inline(c.trim(), Mode::Plain).chars().count())).collect()
            })
            .collect();
        let columns = body.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> =
            (0..columns).map(|i| body.iter().filter_map(|r| r.get(i)).map(|c| c.1).max().unwrap_or(0)).collect();
        for (n, row) in body.iter().enumerate() {
            let mut line = String::new();
            for (i, width) in widths.iter().enumerate() {
                let (text, len) = row.get(i).cloned().unwrap_or_default();
                let pad = " ".repeat(width - len);
                if i > 0 {
                    line.push_str(" │ ");
                }
                let cell = if right.get(i).copied().unwrap_or(false) {
                    format!("{pad}{text}")
                } else {
                    format!("{text}{pad}")
                };
                if n == 0 && rule.is_some() {
                    self.styled(BOLD, &cell, &mut line);
                } else {
                    line.push_str(&cell);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
            if n == 0 && rule.is_some() {
                let parts: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                out.push_str(&parts.join("─┼─"));
                out.push('\n');
            }
        }
    }
}

fn is_table_row(trimmed: &str) -> bool {
    trimmed.starts_with('|') && trimmed.trim_end().len() > 1
}

/// The cells of a table row (`| a | b |`); `\|` is a pipe inside a cell.
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').filter(|s| !s.ends_with('\\')).unwrap_or(inner);
    let mut out = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                if let Some(s) = out.last_mut() {
                    s.push('|');
                }
                chars.next();
            }
            '|' => out.push(String::new()),
            c => {
                if let Some(s) = out.last_mut() {
                    s.push(c);
                }
            }
        }
    }
    out
}

/// The fence a line opens (```` ``` ```` or `~~~`, three or more).
fn fence_of(trimmed: &str) -> Option<String> {
    for c in ['`', '~'] {
        let n = trimmed.chars().take_while(|x| *x == c).count();
        if n >= 3 {
            return Some(c.to_string().repeat(n));
        }
    }
    None
}

fn heading_text(trimmed: &str) -> Option<&str> {
    let hashes = trimmed.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
        Some(trimmed[hashes..].trim().trim_end_matches('#').trim_end())
    } else {
        None
    }
}

/// Where the text of a paragraph, list item or quote starts (after its marker); `None` for a
/// line that is something else (heading, rule, fence, table row).
fn flowing_text_start(line: &str) -> Option<usize> {
    let indent = line.len() - line.trim_start().len();
    let rest = &line[indent..];
    if rest.starts_with('#') || rest.starts_with('|') || fence_of(rest).is_some() {
        return None;
    }
    if rest.len() >= 3 && ["-", "*", "_"].iter().any(|c| rest.trim_end().chars().all(|t| t.to_string() == *c)) {
        return None;
    }
    for marker in ["- ", "* ", "+ ", "> "] {
        if rest.starts_with(marker) {
            return Some(indent + marker.len());
        }
    }
    if rest == ">" {
        return Some(indent + 1);
    }
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if (1..=9).contains(&digits) && (rest[digits..].starts_with(". ") || rest[digits..].starts_with(") ")) {
        return Some(indent + digits + 2);
    }
    Some(indent)
}

/// No inline marker is left open in `s`: each kind of delimiter run (`**`, `*`, `__`, `_` at a
/// word's edge, `~~`, `` ` ``) comes an even number of times, and brackets are closed.
fn balanced(s: &str) -> bool {
    let chars: Vec<char> = s.chars().collect();
    let mut counts = [0usize; 6];
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let run = chars[i..].iter().take_while(|x| **x == c).count();
        let inside_word =
            i > 0 && chars[i - 1].is_alphanumeric() && chars.get(i + run).is_some_and(|n| n.is_alphanumeric());
        match c {
            '*' => {
                counts[0] += run / 2;
                counts[1] += run % 2;
            }
            '_' if !inside_word => {
                counts[2] += run / 2;
                counts[3] += run % 2;
            }
            '~' => counts[4] += run / 2,
            '`' => counts[5] += run,
            _ => {}
        }
        i += run;
    }
    counts.iter().all(|n| n % 2 == 0)
        && s.matches('[').count() == s.matches(']').count()
        && s.matches('(').count() == s.matches(')').count()
        && !s.ends_with('\\')
}

/// Bold, italics, strike-through, inline code and links within one piece of a line.
fn inline(s: &str, mode: Mode) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let wrap = |style: (&str, &str), inner: &str, out: &mut String| {
        if mode == Mode::Ansi {
            out.push_str(style.0);
            out.push_str(inner);
            out.push_str(style.1);
        } else {
            out.push_str(inner);
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\\' && next.is_some_and(|n| n.is_ascii_punctuation()) {
            out.push(chars[i + 1]);
            i += 2;
            continue;
        }
        if c == '`' {
            if let Some(end) = find(&chars, i + 1, &['`']) {
                let code: String = chars[i + 1..end].iter().collect();
                match mode {
                    Mode::Ansi => wrap(CODE, &code, &mut out),
                    _ => out.push_str(&format!("`{code}`")),
                }
                i = end + 1;
                continue;
            }
        }
        if let Some((inner, style, end)) = double(&chars, i) {
            wrap(style, &inline(&inner, mode), &mut out);
            i = end;
            continue;
        }
        let after_word = i > 0 && chars[i - 1].is_alphanumeric();
        if (c == '*' || (c == '_' && !after_word)) && next.is_some_and(|n| !n.is_whitespace() && n != c) {
            if let Some(end) = find_single(&chars, i + 1, c) {
                let inner: String = chars[i + 1..end].iter().collect();
                wrap(ITALIC, &inline(&inner, mode), &mut out);
                i = end + 1;
                continue;
            }
        }
        if c == '[' {
            if let Some(close) = find(&chars, i + 1, &[']']) {
                if chars.get(close + 1) == Some(&'(') {
                    if let Some(paren) = find(&chars, close + 2, &[')']) {
                        let text: String = chars[i + 1..close].iter().collect();
                        let url: String = chars[close + 2..paren].iter().collect();
                        out.push_str(&inline(&text, mode));
                        if url != text {
                            out.push(' ');
                            match mode {
                                Mode::Ansi => wrap(DIM, &format!("({url})"), &mut out),
                                _ => out.push_str(&format!("({url})")),
                            }
                        }
                        i = paren + 1;
                        continue;
                    }
                }
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// A `**bold**`, `__bold__` or `~~strike~~` starting at `i`: its text, style and the index
/// after it.
fn double(chars: &[char], i: usize) -> Option<(String, (&'static str, &'static str), usize)> {
    let c = chars[i];
    let style = match c {
        '*' | '_' => BOLD,
        '~' => STRIKE,
        _ => return None,
    };
    if chars.get(i + 1) != Some(&c) || chars.get(i + 2).is_none_or(|n| n.is_whitespace()) {
        return None;
    }
    let end = find(chars, i + 3, &[c, c])?;
    if chars[end - 1].is_whitespace() {
        return None;
    }
    Some((chars[i + 2..end].iter().collect(), style, end + 2))
}

/// The index of the next `delim` (one or two chars) at or after `from`.
fn find(chars: &[char], from: usize, delim: &[char]) -> Option<usize> {
    (from..chars.len()).find(|&j| chars[j..].starts_with(delim))
}

/// The closing single `*`/`_` of an emphasis: not doubled, after a non-space, and for `_` not
/// inside a word.
fn find_single(chars: &[char], from: usize, c: char) -> Option<usize> {
    (from..chars.len()).find(|&j| {
        chars[j] == c
            && chars.get(j + 1) != Some(&c)
            && chars[j - 1] != c
            && !chars[j - 1].is_whitespace()
            && (c != '_' || !chars.get(j + 1).is_some_and(|n| n.is_alphanumeric()))
    })
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
