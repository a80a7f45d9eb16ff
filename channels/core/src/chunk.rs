//! Splitting long Markdown into messages a platform accepts, without breaking code blocks.
//!
//! A chunk that has to end inside a fenced code block closes the fence, and the next chunk
//! reopens it with the same info string, so every chunk renders on its own. Splits prefer
//! paragraph breaks, then line breaks, then spaces, and only then a hard cut on a character
//! boundary (never inside a UTF-16 surrogate pair, since cuts are made on `char`s).

/// A platform's length limit and the unit it counts in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkLimit {
    /// Unicode scalar values (Slack, Discord, web).
    Chars(usize),
    /// UTF-16 code units (Telegram counts message length this way).
    Utf16(usize),
}

impl ChunkLimit {
    fn max(self) -> usize {
        match self {
            Self::Chars(n) | Self::Utf16(n) => n,
        }
    }

    fn len(self, s: &str) -> usize {
        match self {
            Self::Chars(_) => s.chars().count(),
            Self::Utf16(_) => s.encode_utf16().count(),
        }
    }

    fn char_len(self, c: char) -> usize {
        match self {
            Self::Chars(_) => 1,
            Self::Utf16(_) => c.len_utf16(),
        }
    }
}

/// The opening line of a fenced code block, if `line` is one (``` or ~~~, up to 3 spaces indent).
fn fence_of(line: &str) -> Option<&str> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = trimmed.chars().take_while(|c| *c == marker).count();
    (run >= 3).then_some(trimmed)
}

fn fence_marker(open: &str) -> &str {
    let marker = open.chars().next().unwrap_or('`');
    let run = open.chars().take_while(|c| *c == marker).count();
    &open[..run]
}

struct Splitter {
    limit: ChunkLimit,
    chunks: Vec<String>,
    cur: String,
    cur_len: usize,
    /// The fence line that opened the code block we are inside, if any.
    open_fence: Option<String>,
}

impl Splitter {
    /// Room left in the current chunk, keeping space for a closing fence when inside code.
    fn room(&self) -> usize {
        let reserve = self.open_fence.as_deref().map_or(0, |f| 1 + self.limit.len(fence_marker(f)));
        self.limit.max().saturating_sub(self.cur_len + reserve)
    }

    fn push_str(&mut self, s: &str) {
        self.cur.push_str(s);
        self.cur_len += self.limit.len(s);
    }

    fn flush(&mut self) {
        if let Some(f) = self.open_fence.clone() {
            if !self.cur.ends_with('\n') {
                self.push_str("\n");
            }
            self.push_str(fence_marker(&f));
        }
        let done = std::mem::take(&mut self.cur);
        let trimmed = done.trim_end_matches('\n');
        if !trimmed.trim().is_empty() {
            self.chunks.push(trimmed.to_string());
        }
        self.cur_len = 0;
        if let Some(f) = self.open_fence.clone() {
            self.push_str(&f);
            self.push_str("\n");
        }
    }

    /// Adds one line (with its newline) to the output, splitting it if it cannot fit anywhere.
    fn add_line(&mut self, line: &str) {
        let need = self.limit.len(line);
        if need <= self.room() {
            self.push_str(line);
            return;
        }
        // Start a fresh chunk unless this one holds nothing but a reopened fence.
        let fresh_len = self.open_fence.as_deref().map_or(0, |f| self.limit.len(f) + 1);
        if self.cur_len > fresh_len {
            self.flush();
            if need <= self.room() {
                self.push_str(line);
                return;
            }
        }
        // The line alone is too long: cut it at spaces, else on character boundaries.
        let mut rest = line;
        while !rest.is_empty() {
            let room = self.room().max(1);
            if self.limit.len(rest) <= room {
                self.push_str(rest);
                break;
            }
            let mut cut = 0;
            let mut used = 0;
            let mut last_space = None;
            for (i, c) in rest.char_indices() {
                let w = self.limit.char_len(c);
                if used + w > room {
                    break;
                }
                used += w;
                cut = i + c.len_utf8();
                if c == ' ' {
                    last_space = Some(cut);
                }
            }
            if cut == 0 {
                // Not even one character fits beside the fence: flush and retry.
                self.flush();
                continue;
            }
            let cut = last_space.filter(|s| *s > cut / 2).unwrap_or(cut);
            self.push_str(&rest[..cut]);
            rest = &rest[cut..];
            self.flush();
        }
    }
}

/// Splits `text` into chunks no longer than `limit`. Short text comes back as one chunk.
pub fn chunk_text(text: &str, limit: ChunkLimit) -> Vec<String> {
    if limit.len(text) <= limit.max() {
        return vec![text.to_string()];
    }
    let mut s = Splitter { limit, chunks: Vec::new(), cur: String::new(), cur_len: 0, open_fence: None };
    // Group lines into paragraphs so that a paragraph moves to the next chunk whole if it can.
    let mut paragraph: Vec<&str> = Vec::new();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        paragraph.push(line);
        let at_break = line.trim().is_empty() || i + 1 == lines.len();
        if !at_break {
            continue;
        }
        let para_len: usize = paragraph.iter().map(|l| limit.len(l)).sum();
        if s.open_fence.is_none() && para_len > s.room() && para_len <= limit.max() && s.cur_len > 0 {
            s.flush();
        }
        for l in paragraph.drain(..) {
            let line_no_nl = l.trim_end_matches('\n');
            match (&s.open_fence, fence_of(line_no_nl)) {
                (None, Some(f)) => {
                    // Keep room for at least one line of code after the opening fence.
                    if s.room() < limit.len(l) + 8 {
                        s.flush();
                    }
                    s.add_line(l);
                    s.open_fence = Some(f.to_string());
                }
                (Some(open), Some(f))
                    if fence_marker(f) == fence_marker(open) && f.trim_end() == fence_marker(open) =>
                {
                    s.open_fence = None;
                    s.add_line(l);
                }
                _ => s.add_line(l),
            }
        }
    }
    s.open_fence = None;
    s.flush();
    s.chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fences_balanced(chunk: &str) -> bool {
        chunk.lines().filter(|l| fence_of(l).is_some()).count() % 2 == 0
    }

    #[test]
    fn table_of_splits() {
        let long_para = "word ".repeat(30);
        let code = format!("intro\n\n```rust\n{}```\nafter", "let x = 1;\n".repeat(20));
        let cases: Vec<(&str, String, ChunkLimit)> = vec![
            ("short text stays whole", "hello".into(), ChunkLimit::Chars(10)),
            ("paragraphs", format!("{long_para}\n\n{long_para}"), ChunkLimit::Chars(100)),
            ("code block split", code.clone(), ChunkLimit::Chars(80)),
            ("one huge word", "x".repeat(250), ChunkLimit::Chars(100)),
            ("emoji in utf16", "😀".repeat(100), ChunkLimit::Utf16(51)),
            ("tilde fence", format!("~~~\n{}~~~", "a\n".repeat(100)), ChunkLimit::Chars(40)),
        ];
        for (name, text, limit) in cases {
            let chunks = chunk_text(&text, limit);
            assert!(!chunks.is_empty(), "{name}");
            for c in &chunks {
                assert!(limit.len(c) <= limit.max(), "{name}: chunk of {} > {}: {c:?}", limit.len(c), limit.max());
                assert!(fences_balanced(c), "{name}: unbalanced fence in {c:?}");
            }
            // Nothing is lost: the non-fence, non-whitespace content survives in order.
            let strip = |s: &str| -> String {
                s.lines().filter(|l| fence_of(l).is_none()).collect::<String>().split_whitespace().collect()
            };
            let joined: String = chunks.iter().map(|c| strip(c)).collect();
            assert_eq!(joined, strip(&text), "{name}: content changed");
        }
    }

    #[test]
    fn reopened_fence_keeps_language() {
        let text = format!("```python\n{}```", "print(1)\n".repeat(30));
        let chunks = chunk_text(&text, ChunkLimit::Chars(60));
        assert!(chunks.len() > 1);
        for c in &chunks {
            assert!(c.starts_with("```python\n"), "{c:?}");
            assert!(c.ends_with("```"), "{c:?}");
        }
    }

    #[test]
    fn surrogate_pairs_never_split() {
        let text = "a😀".repeat(40);
        for c in chunk_text(&text, ChunkLimit::Utf16(7)) {
            assert!(c.encode_utf16().count() <= 7);
            assert!(String::from_utf16(&c.encode_utf16().collect::<Vec<_>>()).is_ok());
        }
    }
}
