//! Markdown as the agent writes it (CommonMark with GitHub tables) turned into Discord's
//! dialect: `__x__` means underline on Discord, so CommonMark's strong `__x__` becomes `**x**`;
//! `####`-and-deeper headings, images, `+` lists, `~~~` fences and thematic breaks (which Discord
//! does not know) get the closest equivalent; tables go into a code block so their columns line
//! up. Everything else passes through. Pings are not escaped here: every message is sent with
//! `allowed_mentions` that parse nothing, so `@everyone` or `<@id>` in a reply pings nobody.
//!
//! Rendering must never grow a chunk past what the deliverer measured, except by wrapping a
//! table; [`render`] drops the wrapping when that would cross Discord's 2,000 characters. It
//! must never touch the inside of code.

/// Discord's limit for a message's content, in characters.
pub const MAX_LEN: usize = 2000;

/// Renders one chunk (at most [`MAX_LEN`] UTF-16 units in) for Discord; the result is never
/// longer than [`MAX_LEN`] either.
pub fn render(markdown: &str) -> String {
    let wrapped = render_with(markdown, true);
    // Measured in UTF-16 units, as the deliverer measures chunks: never fewer than characters.
    if wrapped.encode_utf16().count() <= MAX_LEN {
        return wrapped;
    }
    render_with(markdown, false)
}

/// The fence that opens a code block on `line`, if it is one: (marker char, run length).
fn fence(line: &str) -> Option<(char, usize)> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let c = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = trimmed.chars().take_while(|x| *x == c).count();
    (run >= 3).then_some((c, run))
}

fn is_table_delimiter(line: &str) -> bool {
    let t = line.trim();
    if !t.contains('|') || !t.contains('-') {
        return false;
    }
    t.trim_matches('|').split('|').all(|c| {
        let c = c.trim();
        c.contains('-') && c.trim_matches(':').chars().all(|x| x == '-')
    })
}

fn is_table_row(line: &str) -> bool {
    line.contains('|') && !line.trim().is_empty()
}

fn is_thematic_break(line: &str) -> bool {
    let t = line.trim();
    let Some(c) = t.chars().next().filter(|c| matches!(c, '-' | '*' | '_')) else { return false };
    line.len() - line.trim_start().len() <= 3
        && t.chars().all(|x| x == c || x == ' ')
        && t.chars().filter(|x| *x == c).count() >= 3
}

fn render_with(markdown: &str, wrap_tables: bool) -> String {
    let lines: Vec<&str> = markdown.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    // The fence we are inside: (marker, run, converted from tildes).
    let mut code: Option<(char, usize, bool)> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some((marker, run, tilde)) = code {
            let closes =
                fence(line).is_some_and(|(c, r)| c == marker && r >= run) && line.trim().chars().all(|x| x == marker);
            if closes {
                code = None;
                out.push(if tilde { line.replacen(&"~".repeat(run), "```", 1) } else { line.to_string() });
            } else {
                out.push(line.to_string());
            }
            i += 1;
            continue;
        }
        if let Some((marker, run)) = fence(line) {
            let tilde = marker == '~' && run == 3;
            code = Some((marker, run, tilde));
            out.push(if tilde { line.replacen("~~~", "```", 1) } else { line.to_string() });
            i += 1;
            continue;
        }
        if is_table_row(line) && lines.get(i + 1).is_some_and(|next| is_table_delimiter(next)) {
            let start = i;
            i += 2;
            while i < lines.len() && is_table_row(lines[i]) && fence(lines[i]).is_none() {
                i += 1;
            }
            if wrap_tables {
                out.push("```".into());
                out.extend(lines[start..i].iter().map(|l| l.trim().to_string()));
                out.push("```".into());
            } else {
                out.extend(lines[start..i].iter().map(|l| l.to_string()));
            }
            continue;
        }
        out.push(block_line(line));
        i += 1;
    }
    out.join("\n")
}

/// One line outside code: block-level markers first, then inline spans.
fn block_line(line: &str) -> String {
    if is_thematic_break(line) {
        return "───".into();
    }
    let indent = line.len() - line.trim_start().len();
    let (lead, rest) = line.split_at(indent);
    let hashes = rest.chars().take_while(|c| *c == '#').count();
    if (4..=6).contains(&hashes) && rest[hashes..].starts_with(' ') {
        let title = rest[hashes..].trim().trim_end_matches('#').trim_end();
        return format!("{lead}**{}**", inline(title));
    }
    if let Some(item) = rest.strip_prefix("+ ") {
        return format!("{lead}- {}", inline(item));
    }
    inline(line)
}

/// Inline transforms outside code spans.
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        let run = rest[start..].chars().take_while(|c| *c == '`').count();
        let ticks = "`".repeat(run);
        let after = &rest[start + run..];
        // A code span closes with a run of exactly the same length.
        let close = find_run(after, &ticks);
        out.push_str(&prose(&rest[..start]));
        match close {
            Some(end) => {
                out.push_str(&rest[start..start + run + end + run]);
                rest = &after[end + run..];
            }
            None => {
                out.push_str(&ticks);
                rest = after;
            }
        }
    }
    out.push_str(&prose(rest));
    out
}

/// Byte offset of a backtick run of exactly `ticks` in `s`.
fn find_run(s: &str, ticks: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(p) = s[from..].find(ticks) {
        let at = from + p;
        let run = s[at..].chars().take_while(|c| *c == '`').count();
        if run == ticks.len() {
            return Some(at);
        }
        from = at + run;
    }
    None
}

/// Text without code: images become links, CommonMark's `__strong__` becomes `**strong**`.
fn prose(text: &str) -> String {
    strong_underscores(&images(text))
}

fn images(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(p) = rest.find("![") {
        out.push_str(&rest[..p]);
        let tail = &rest[p + 2..];
        let parsed = tail.find("](").and_then(|a| tail[a + 2..].find(')').map(|b| (a, a + 2 + b)));
        match parsed {
            Some((alt_end, url_end)) if !tail[..alt_end].contains('\n') => {
                let (alt, url) = (&tail[..alt_end], &tail[alt_end + 2..url_end]);
                if alt.trim().is_empty() {
                    out.push_str(&format!("<{url}>"));
                } else {
                    out.push_str(&format!("[{alt}]({url})"));
                }
                rest = &tail[url_end + 1..];
            }
            _ => {
                out.push_str("![");
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `__x__` at word boundaries (CommonMark strong) -> `**x**`; `snake__case__names` stay.
fn strong_underscores(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    let word = |i: usize| chars.get(i).is_some_and(|c| c.is_alphanumeric());
    let space = |i: usize| chars.get(i).is_none_or(|c| c.is_whitespace());
    let mut out: Vec<char> = chars.clone();
    let mut i = 0;
    while i + 1 < n {
        let opens = chars[i] == '_'
            && chars[i + 1] == '_'
            && (i == 0 || !word(i - 1) && chars[i - 1] != '_')
            && !space(i + 2)
            && chars.get(i + 2) != Some(&'_');
        if !opens {
            i += 1;
            continue;
        }
        let mut j = i + 3;
        let mut closed = None;
        while j + 1 < n {
            if chars[j] == '_' && chars[j + 1] == '_' && !space(j - 1) && !word(j + 2) && chars.get(j + 2) != Some(&'_')
            {
                closed = Some(j);
                break;
            }
            j += 1;
        }
        match closed {
            Some(j) => {
                out[i] = '*';
                out[i + 1] = '*';
                out[j] = '*';
                out[j + 1] = '*';
                i = j + 2;
            }
            None => i += 2,
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use butler_channel::{chunk_text, ChunkLimit};

    #[test]
    fn discord_markdown_table() {
        let cases: &[(&str, &str, &str)] = &[
            ("plain text", "hello *world*", "hello *world*"),
            ("bold stays", "**bold** and ~~gone~~", "**bold** and ~~gone~~"),
            ("strong underscores", "a __strong__ word", "a **strong** word"),
            ("snake case untouched", "call my__var__name now", "call my__var__name now"),
            ("dunder in code untouched", "`__init__` and __x__", "`__init__` and **x**"),
            ("code span with backticks", "``a `b` __c__`` __d__", "``a `b` __c__`` **d**"),
            ("h1-h3 pass", "# One\n## Two\n### Three", "# One\n## Two\n### Three"),
            ("deep headings bold", "#### Four\n###### Six ##", "**Four**\n**Six**"),
            ("image with alt", "see ![a cat](https://x/c.png)!", "see [a cat](https://x/c.png)!"),
            ("image without alt", "![](https://x/c.png)", "<https://x/c.png>"),
            ("plus list", "+ one\n  + two", "- one\n  - two"),
            ("thematic break", "above\n\n---\n\nbelow", "above\n\n───\n\nbelow"),
            ("star break", "***", "───"),
            ("tilde fence", "~~~rust\nlet __a__ = 1;\n~~~", "```rust\nlet __a__ = 1;\n```"),
            (
                "code untouched",
                "```\n#### not a heading\n__x__\n| a | b |\n|---|---|\n```",
                "```\n#### not a heading\n__x__\n| a | b |\n|---|---|\n```",
            ),
            (
                "table in a code block",
                "Results:\n| name | n |\n|------|---|\n| a | 1 |\n| b | 2 |\nafter",
                "Results:\n```\n| name | n |\n|------|---|\n| a | 1 |\n| b | 2 |\n```\nafter",
            ),
            ("pipe without table", "a | b", "a | b"),
            ("mentions pass (allowed_mentions mutes them)", "@everyone <@123>", "@everyone <@123>"),
            ("quote and spoiler", "> quoted ||secret||", "> quoted ||secret||"),
            ("unclosed image", "![oops", "![oops"),
        ];
        for (what, input, want) in cases {
            assert_eq!(render(input), *want, "{what}");
        }
    }

    #[test]
    fn rendering_never_grows_past_the_limit() {
        // A table right at the limit: wrapping it would cross 2,000, so it is sent unwrapped.
        let row = "| a | b |\n";
        let mut text = String::from("| h | i |\n|---|---|\n");
        while text.chars().count() + row.len() <= MAX_LEN {
            text.push_str(row);
        }
        let text = text.trim_end().to_string();
        assert!(text.chars().count() <= MAX_LEN);
        let out = render(&text);
        assert!(out.chars().count() <= MAX_LEN, "{}", out.chars().count());
        assert!(!out.starts_with("```"));
        // Everything else never gets longer.
        for sample in ["#### deep heading", "![](u)", "![alt](u)", "__a__", "~~~\nx\n~~~", "---", "+ item"] {
            assert!(render(sample).chars().count() <= sample.chars().count(), "{sample}");
        }
    }

    /// Chunks of at most 2,000 characters that never split a code block: the core chunker cuts,
    /// each chunk is rendered on its own, and every rendered chunk has balanced fences.
    #[test]
    fn chunks_fit_and_keep_code_blocks_whole() {
        let mut text = String::from("Intro paragraph.\n\n");
        text.push_str("```python\n");
        for i in 0..150 {
            text.push_str(&format!("print('line {i} of the program with __dunder__')\n"));
        }
        text.push_str("```\n\n");
        for i in 0..60 {
            text.push_str(&format!("Paragraph {i}: some __strong__ words and ünïcödé 🦀 to count.\n\n"));
        }
        text.push_str("~~~\ntilde block\n~~~\n");
        let chunks = chunk_text(&text, ChunkLimit::Utf16(MAX_LEN));
        assert!(chunks.len() >= 4, "{} chunks", chunks.len());
        for (i, chunk) in chunks.iter().enumerate() {
            let out = render(chunk);
            assert!(out.chars().count() <= MAX_LEN, "chunk {i} has {} chars", out.chars().count());
            let fences = out.lines().filter(|l| l.trim_start().starts_with("```")).count();
            assert_eq!(fences % 2, 0, "chunk {i} leaves a code block open:\n{out}");
            assert!(!out.contains("~~~"), "chunk {i} keeps a tilde fence");
            for line in out.lines().filter(|l| l.starts_with("print(")) {
                assert!(line.contains("__dunder__"), "code was rewritten: {line}");
            }
        }
        let joined: String = chunks.iter().map(|c| render(c)).collect::<Vec<_>>().join("\n");
        assert!(joined.contains("print('line 149 of the program"));
        assert!(joined.contains("Paragraph 59: some **strong** words"));
    }
}
