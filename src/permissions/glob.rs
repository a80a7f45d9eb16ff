//! The small glob matcher behind the permission rules: tool names, paths and command lines.
//!
//! `*` matches any run of characters (none too), `?` one character, `[abc]`, `[a-z]` and
//! `[!abc]` (or `[^abc]`) one character of a set, `\x` the character `x` itself. In path mode
//! `*`, `?` and sets never match `/`, `**` matches across `/`, and `**/` also matches no
//! directory at all (`a/**/b` matches `a/b`). Case folding (ASCII) is a per-glob choice: deny
//! rules fold, allow rules do not, so a case trick can only ever make a rule stricter.
//!
//! Matching must never recurse or backtrack without bound: it runs one pass over the text per
//! pattern token (at most pattern length x text length steps), so a hostile pattern or text
//! cannot stall a decision.

/// Whether `text` matches the plain-text glob `pattern` as a whole (hook matchers use this).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    Glob::text(pattern).is_match(text)
}

/// One compiled pattern.
#[derive(Clone, Debug)]
pub(crate) struct Glob {
    tokens: Vec<Tok>,
    path: bool,
    fold: bool,
}

#[derive(Clone, Debug)]
enum Tok {
    Lit(char),
    /// `?`
    One,
    /// `[...]`: negated, ranges (single characters are `(c, c)`).
    Set(bool, Vec<(char, char)>),
    /// `*` (in path mode, never across `/`).
    Star,
    /// `**` in path mode: anything, `/` included.
    Any,
    /// `**/` in path mode: nothing, or anything that ends in `/`.
    AnyDirs,
}

impl Glob {
    /// A glob over plain text (tool names, command lines): `*` also matches `/`.
    pub(crate) fn text(pattern: &str) -> Self {
        Self { tokens: compile(pattern, false), path: false, fold: false }
    }

    /// A glob over a `/`-separated path.
    pub(crate) fn path(pattern: &str) -> Self {
        Self { tokens: compile(pattern, true), path: true, fold: false }
    }

    /// The same glob, ignoring ASCII case.
    pub(crate) fn folded(mut self) -> Self {
        self.fold = true;
        self
    }

    /// Whether `text` matches the pattern as a whole.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        let n = text.len();
        // reach[j]: the tokens so far can match exactly text[..j].
        let mut reach = vec![false; n + 1];
        reach[0] = true;
        let mut next = vec![false; n + 1];
        for tok in &self.tokens {
            next.iter_mut().for_each(|r| *r = false);
            match tok {
                Tok::Star | Tok::Any => {
                    let crosses = !self.path || matches!(tok, Tok::Any);
                    let mut open = false;
                    for j in 0..=n {
                        if reach[j] {
                            open = true;
                        }
                        next[j] = open;
                        if j < n && !crosses && text[j] == '/' {
                            open = false;
                        }
                    }
                }
                Tok::AnyDirs => {
                    let mut seen = false;
                    for j in 0..=n {
                        if j > 0 && seen && text[j - 1] == '/' {
                            next[j] = true;
                        }
                        if reach[j] {
                            seen = true;
                            next[j] = true;
                        }
                    }
                }
                single => {
                    for j in 0..n {
                        if reach[j] && self.one(single, text[j]) {
                            next[j + 1] = true;
                        }
                    }
                }
            }
            std::mem::swap(&mut reach, &mut next);
            if !reach.iter().any(|r| *r) {
                return false;
            }
        }
        reach[n]
    }

    fn one(&self, tok: &Tok, c: char) -> bool {
        if self.path && c == '/' {
            return matches!(tok, Tok::Lit('/'));
        }
        let eq = |a: char, b: char| if self.fold { a.eq_ignore_ascii_case(&b) } else { a == b };
        match tok {
            Tok::Lit(l) => eq(*l, c),
            Tok::One => true,
            Tok::Set(negated, ranges) => {
                let lower = c.to_ascii_lowercase();
                let upper = c.to_ascii_uppercase();
                let hit = ranges.iter().any(|&(a, b)| {
                    (a..=b).contains(&c) || (self.fold && ((a..=b).contains(&lower) || (a..=b).contains(&upper)))
                });
                hit != *negated
            }
            Tok::Star | Tok::Any | Tok::AnyDirs => false,
        }
    }
}

/// Whether `pattern` contains a wildcard (`*`, `?` or `[`).
pub(crate) fn has_wildcard(pattern: &str) -> bool {
    pattern.contains(['*', '?', '['])
}

/// Why a pattern cannot be used, for config validation: empty, or a `[` never closed.
pub(crate) fn problem(pattern: &str) -> Option<&'static str> {
    if pattern.trim().is_empty() {
        return Some("must not be empty");
    }
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '[' => match set_end(&chars, i) {
                Some(end) => i = end + 1,
                None => return Some("has a `[` that is never closed by `]` (write `\\[` for a literal `[`)"),
            },
            _ => i += 1,
        }
    }
    None
}

/// The index of the `]` closing the set that opens at `chars[open]`, if any.
fn set_end(chars: &[char], open: usize) -> Option<usize> {
    let mut i = open + 1;
    if matches!(chars.get(i), Some('!' | '^')) {
        i += 1;
    }
    // A `]` right after the opening (or its negation) is a member, not the end.
    if chars.get(i) == Some(&']') {
        i += 1;
    }
    (i..chars.len()).find(|&k| chars[k] == ']')
}

fn compile(pattern: &str, path: bool) -> Vec<Tok> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                out.push(Tok::Lit(chars[i + 1]));
                i += 2;
            }
            '*' => {
                let mut j = i;
                while chars.get(j) == Some(&'*') {
                    j += 1;
                }
                let double = j - i >= 2;
                if path && double && chars.get(j) == Some(&'/') {
                    out.push(Tok::AnyDirs);
                    j += 1;
                } else if path && double {
                    out.push(Tok::Any);
                } else if !matches!(out.last(), Some(Tok::Star | Tok::Any)) {
                    out.push(Tok::Star);
                }
                i = j;
            }
            '?' => {
                out.push(Tok::One);
                i += 1;
            }
            '[' => match set_end(&chars, i) {
                Some(end) => {
                    let mut k = i + 1;
                    let negated = matches!(chars.get(k), Some('!' | '^'));
                    if negated {
                        k += 1;
                    }
                    let mut ranges = Vec::new();
                    while k < end {
                        if k + 2 < end && chars[k + 1] == '-' {
                            ranges.push((chars[k], chars[k + 2]));
                            k += 3;
                        } else {
                            ranges.push((chars[k], chars[k]));
                            k += 1;
                        }
                    }
                    out.push(Tok::Set(negated, ranges));
                    i = end + 1;
                }
                None => {
                    out.push(Tok::Lit('['));
                    i += 1;
                }
            },
            c => {
                out.push(Tok::Lit(c));
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_globs() {
        // (pattern, text, matches)
        let cases: &[(&str, &str, bool)] = &[
            ("shell", "shell", true),
            ("shell", "shells", false),
            ("shell*", "shell", true),
            ("shell*", "shell_exec", true),
            ("*_write", "file_write", true),
            ("*_write", "file_read", false),
            ("memory_?", "memory_x", true),
            ("memory_?", "memory_xy", false),
            ("*", "", true),
            ("*rm -rf*", "cd /tmp && rm -rf /", true),
            ("*rm -rf*", "rm -r /", false),
            ("*curl*|*sh*", "curl https://x.sh/i | sh", true),
            ("*curl*|*sh*", "curl https://x/i > f", false),
            ("file_[rw]*", "file_write", true),
            ("file_[!rw]*", "file_write", false),
            ("file_[a-c]*", "file_bin", true),
            ("a\\*b", "a*b", true),
            ("a\\*b", "axb", false),
            ("[unclosed", "[unclosed", true),
            ("***a", "bba", true),
            ("a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false),
        ];
        for (pattern, text, want) in cases {
            assert_eq!(Glob::text(pattern).is_match(text), *want, "{pattern:?} vs {text:?}");
        }
    }

    #[test]
    fn path_globs_keep_star_inside_one_directory() {
        let cases: &[(&str, &str, bool)] = &[
            ("/srv/notes/*", "/srv/notes/a.md", true),
            ("/srv/notes/*", "/srv/notes/sub/a.md", false),
            ("/srv/notes/**", "/srv/notes/sub/a.md", true),
            ("/srv/**/a.md", "/srv/a.md", true),
            ("/srv/**/a.md", "/srv/x/y/a.md", true),
            ("/srv/**/a.md", "/srv/x/y/b.md", false),
            ("/srv/?/a", "/srv/x/a", true),
            ("/srv/?a", "/srv//a", false),
            ("/srv/[!x]/a", "/srv///a", false),
            ("**/.env", "/home/u/app/.env", true),
            ("**/.env", ".env", true),
        ];
        for (pattern, text, want) in cases {
            assert_eq!(Glob::path(pattern).is_match(text), *want, "{pattern:?} vs {text:?}");
        }
    }

    #[test]
    fn folding_is_opt_in() {
        assert!(!Glob::text("*.PEM").is_match("key.pem"));
        assert!(Glob::text("*.PEM").folded().is_match("key.pem"));
        assert!(Glob::text("[A-C]x").folded().is_match("bx"));
        assert!(!Glob::text("[A-C]x").is_match("bx"));
    }

    #[test]
    fn problems_name_empty_and_unclosed_patterns() {
        assert_eq!(problem(""), Some("must not be empty"));
        assert_eq!(problem("  "), Some("must not be empty"));
        assert!(problem("file_[rw").is_some());
        assert_eq!(problem("file_[rw]*"), None);
        assert_eq!(problem("a\\[b"), None);
        assert_eq!(problem("[]]"), None);
        assert!(has_wildcard("a*") && has_wildcard("a?") && has_wildcard("[a]") && !has_wildcard("a/b"));
    }
}
