//! The agent's Markdown as Slack mrkdwn.
//!
//! Slack needs `&`, `<` and `>` escaped everywhere (also inside code), writes bold as `*b*`,
//! italics as `_i_`, strikethrough as `~s~` and links as `<url|label>`, has no headings, list
//! syntax, tables or language tags on code fences. So: headings become bold lines, list items
//! get bullets (nesting kept by indentation), tables become an aligned code block, fences lose
//! their language, links are rewritten, everything else is escaped.
//!
//! This module must never let the agent's text produce Slack control sequences (`<!channel>`,
//! `<@U123>` mentions): every `<` the agent wrote is escaped, only links Butler builds use it.

/// Renders `md` for Slack.
pub fn to_mrkdwn(md: &str) -> String {
    let lines: Vec<&str> = md.lines().collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some((marker, run)) = fence_open(line) {
            out.push("```".into());
            i += 1;
            while i < lines.len() && !fence_closes(lines[i], marker, run) {
                out.push(escape(lines[i]));
                i += 1;
            }
            out.push("```".into());
            i += 1; // the closing fence (or past the end)
            continue;
        }
        if is_table_start(&lines, i) {
            let mut rows = Vec::new();
            while i < lines.len() && lines[i].trim_start().starts_with('|') {
                rows.push(lines[i]);
                i += 1;
            }
            out.extend(table(&rows));
            continue;
        }
        out.push(block_line(line));
        i += 1;
    }
    out.join("\n")
}

/// `&`, `<`, `>` as Slack's entities.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// A fence opening line: its marker character and run length.
fn fence_open(line: &str) -> Option<(char, usize)> {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return None;
    }
    let marker = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = t.chars().take_while(|c| *c == marker).count();
    let info = &t[run..];
    (run >= 3 && !(marker == '`' && info.contains('`'))).then_some((marker, run))
}

fn fence_closes(line: &str, marker: char, run: usize) -> bool {
    let t = line.trim();
    t.len() >= run && t.chars().all(|c| c == marker)
}

fn is_table_start(lines: &[&str], i: usize) -> bool {
    let delimiter = |l: &str| {
        let t = l.trim();
        t.starts_with('|') && t.contains('-') && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
    };
    lines[i].trim_start().starts_with('|') && lines.get(i + 1).is_some_and(|l| delimiter(l))
}

fn cells(row: &str) -> Vec<String> {
    let t = row.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split('|').map(|c| c.trim().replace("**", "").replace('`', "")).collect()
}

/// A Markdown table as an aligned code block (Slack has no tables).
fn table(rows: &[&str]) -> Vec<String> {
    let mut grid: Vec<Vec<String>> = Vec::new();
    for (n, row) in rows.iter().enumerate() {
        if n != 1 {
            grid.push(cells(row));
        }
    }
    let cols = grid.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; cols];
    for row in &grid {
        for (c, cell) in row.iter().enumerate() {
            widths[c] = widths[c].max(cell.chars().count());
        }
    }
    let fmt = |row: &Vec<String>| {
        let padded: Vec<String> = (0..cols)
            .map(|c| {
                let cell = row.get(c).map_or("", String::as_str);
                format!("{cell}{}", " ".repeat(widths[c] - cell.chars().count()))
            })
            .collect();
        escape(padded.join(" | ").trim_end())
    };
    let mut out = vec!["```".to_string()];
    for (n, row) in grid.iter().enumerate() {
        out.push(fmt(row));
        if n == 0 {
            out.push(widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("-+-"));
        }
    }
    out.push("```".into());
    out
}

/// One line outside code and tables: headings, rules, quotes, list items, paragraphs.
fn block_line(line: &str) -> String {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let t = line.trim();
    if t.is_empty() {
        return String::new();
    }
    let hashes = t.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&hashes) && t[hashes..].starts_with(' ') {
        let title = t[hashes..].trim().trim_end_matches('#').trim_end();
        return format!("*{}*", inline(title));
    }
    let rule = t.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    if rule.len() >= 3 && (rule.chars().all(|c| c == '-') || rule.chars().all(|c| c == '*') || rule == "___") {
        return "──────────".into();
    }
    if let Some(rest) = t.strip_prefix('>') {
        let rest = rest.trim_start_matches(['>', ' ']);
        return format!("> {}", inline(rest));
    }
    let pad = "    ".repeat(indent / 2);
    for bullet in ["- ", "* ", "+ "] {
        if let Some(item) = t.strip_prefix(bullet) {
            let (mark, item) =
                match (item.strip_prefix("[ ] "), item.strip_prefix("[x] ").or(item.strip_prefix("[X] "))) {
                    (Some(rest), _) => ("☐", rest),
                    (_, Some(rest)) => ("☑", rest),
                    _ => (if indent >= 2 { "◦" } else { "•" }, item),
                };
            return format!("{pad}{mark} {}", inline(item.trim_start()));
        }
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if (1..=9).contains(&digits) {
        let rest = &t[digits..];
        if let Some(item) = rest.strip_prefix(". ").or(rest.strip_prefix(") ")) {
            return format!("{pad}{}. {}", &t[..digits], inline(item.trim_start()));
        }
    }
    format!("{}{}", " ".repeat(indent.min(3)), inline(t))
}

fn is_word(c: Option<char>) -> bool {
    c.is_some_and(char::is_alphanumeric)
}

/// Inline Markdown on one line: code spans, links, emphasis, escaping.
fn inline(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let prev = i.checked_sub(1).map(|p| chars[p]);
        match c {
            '\\' if chars.get(i + 1).is_some_and(char::is_ascii_punctuation) => {
                out.push_str(&escape(&chars[i + 1].to_string()));
                i += 2;
            }
            '`' => {
                let run = chars[i..].iter().take_while(|c| **c == '`').count();
                match find_run(&chars, i + run, '`', run) {
                    Some(end) => {
                        let code: String = chars[i + run..end].iter().collect();
                        out.push('`');
                        out.push_str(&escape(code.trim()));
                        out.push('`');
                        i = end + run;
                    }
                    None => {
                        out.extend(std::iter::repeat_n('`', run));
                        i += run;
                    }
                }
            }
            '!' if chars.get(i + 1) == Some(&'[') => match link(&chars, i + 1) {
                Some((label, url, end)) => {
                    out.push_str(&slack_link(&url, &label));
                    i = end;
                }
                None => {
                    out.push('!');
                    i += 1;
                }
            },
            '[' => match link(&chars, i) {
                Some((label, url, end)) => {
                    out.push_str(&slack_link(&url, &label));
                    i = end;
                }
                None => {
                    out.push('[');
                    i += 1;
                }
            },
            '<' => match autolink(&chars, i) {
                Some((url, end)) => {
                    out.push_str(&slack_link(&url, ""));
                    i = end;
                }
                None => {
                    out.push_str("&lt;");
                    i += 1;
                }
            },
            '*' | '_' | '~' if chars.get(i + 1) == Some(&c) => {
                let opens = chars.get(i + 2).is_some_and(|n| !n.is_whitespace()) && (c == '*' || !is_word(prev));
                match find_closing(&chars, i + 2, c, 2).filter(|_| opens) {
                    Some(end) => {
                        let inner: String = chars[i + 2..end].iter().collect();
                        let mark = if c == '~' { '~' } else { '*' };
                        out.push(mark);
                        out.push_str(&inline(&inner));
                        out.push(mark);
                        i = end + 2;
                    }
                    None => {
                        out.push(c);
                        out.push(c);
                        i += 2;
                    }
                }
            }
            '*' | '_' => {
                let opens = chars.get(i + 1).is_some_and(|n| !n.is_whitespace()) && !is_word(prev);
                match find_closing(&chars, i + 1, c, 1).filter(|_| opens) {
                    Some(end) => {
                        let inner: String = chars[i + 1..end].iter().collect();
                        out.push('_');
                        out.push_str(&inline(&inner));
                        out.push('_');
                        i = end + 1;
                    }
                    None => {
                        out.push(c);
                        i += 1;
                    }
                }
            }
            '&' => {
                out.push_str("&amp;");
                i += 1;
            }
            '>' => {
                out.push_str("&gt;");
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The start of the next run of exactly `run` `c`s at or after `from`.
fn find_run(chars: &[char], from: usize, c: char, run: usize) -> Option<usize> {
    let mut j = from;
    while j < chars.len() {
        if chars[j] == c {
            let n = chars[j..].iter().take_while(|x| **x == c).count();
            if n == run {
                return Some(j);
            }
            j += n;
        } else {
            j += 1;
        }
    }
    None
}

/// A closing emphasis delimiter (`len` times `c`) after `from`: preceded by a non-space, and
/// for single delimiters not followed by a word character.
fn find_closing(chars: &[char], from: usize, c: char, len: usize) -> Option<usize> {
    let mut j = from + 1;
    while j + len <= chars.len() {
        let here = chars[j..j + len].iter().all(|x| *x == c);
        let before = chars[j - 1];
        let after = chars.get(j + len).copied();
        if chars[j] == '`' {
            // Skip code spans: emphasis never closes inside one.
            let run = chars[j..].iter().take_while(|x| **x == '`').count();
            j = find_run(chars, j + run, '`', run).map_or(j + run, |e| e + run);
            continue;
        }
        if here && !before.is_whitespace() && after != Some(c) && (len == 2 || !is_word(after)) {
            return Some(j);
        }
        j += 1;
    }
    None
}

/// `[label](url)` starting at `open` (the `[`): the label, the URL, and the index after `)`.
fn link(chars: &[char], open: usize) -> Option<(String, String, usize)> {
    let mut depth = 0;
    let mut close = None;
    for (j, c) in chars.iter().enumerate().skip(open) {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(j);
                    break;
                }
            }
            _ => {}
        }
    }
    let close = close?;
    if chars.get(close + 1) != Some(&'(') {
        return None;
    }
    let mut parens = 0;
    let mut end = None;
    for (j, c) in chars.iter().enumerate().skip(close + 1) {
        match c {
            '(' => parens += 1,
            ')' => {
                parens -= 1;
                if parens == 0 {
                    end = Some(j);
                    break;
                }
            }
            _ => {}
        }
    }
    let end = end?;
    let target: String = chars[close + 2..end].iter().collect();
    // `(url "title")`: the title is dropped.
    let url = target.split_whitespace().next()?.trim_start_matches('<').trim_end_matches('>').to_string();
    let label: String = chars[open + 1..close].iter().collect();
    Some((label, url, end + 1))
}

/// `<scheme:...>` at `open`: the URL and the index after `>`.
fn autolink(chars: &[char], open: usize) -> Option<(String, usize)> {
    let close = chars[open..].iter().position(|c| *c == '>')? + open;
    let url: String = chars[open + 1..close].iter().collect();
    let scheme_ok = ["http://", "https://", "mailto:"].iter().any(|s| url.starts_with(s));
    (scheme_ok && !url.contains(char::is_whitespace)).then_some((url, close + 1))
}

/// `<url|label>` (or `<url>`), with the URL made safe inside Slack's angle brackets.
fn slack_link(url: &str, label: &str) -> String {
    let safe_url = url.replace('|', "%7C").replace('<', "%3C").replace('>', "%3E").replace('&', "&amp;");
    let scheme_ok = ["http://", "https://", "mailto:"].iter().any(|s| url.starts_with(s));
    if !scheme_ok {
        // Not something Slack can open: keep the words, drop the target.
        return inline(label);
    }
    let label = label.trim();
    if label.is_empty() || label == url {
        format!("<{safe_url}>")
    } else {
        format!("<{safe_url}|{}>", inline(label))
    }
}

#[cfg(test)]
mod tests;
