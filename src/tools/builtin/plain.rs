//! Helpers for the plain-words [`Action`](crate::tools::Action) of the acting tools: absolute
//! paths resolved lexically, string arguments, short previews, and best-effort masking of secrets in free text
//! (shell commands, request bodies, URLs).
//!
//! They only describe; they must never touch the file system, and a summary must never show a
//! credential the masking can recognise (`Authorization`/`Bearer` values, `token=`, `password=`,
//! URL passwords).

use crate::config::is_secret_name;
use std::path::{Component, Path, PathBuf};

/// `rel` resolved against `workspace` without touching the disk: absolute (relative
/// workspaces are taken from the current directory), `.` and `..` applied. An absolute `rel`
/// stays itself, so that the permission engine sees `/etc/passwd` as `/etc/passwd`.
pub fn lexical_path(workspace: &Path, rel: &str) -> PathBuf {
    let base = std::path::absolute(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let mut out = PathBuf::new();
    for comp in base.join(rel).components() {
        match comp {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The workspace itself, absolute.
pub fn workspace_abs(workspace: &Path) -> PathBuf {
    lexical_path(workspace, ".")
}

/// A string argument of a tool call as the model sent it (empty when missing or not a string).
pub fn str_arg<'a>(args: &'a serde_json::Value, key: &str) -> &'a str {
    args.get(key).and_then(serde_json::Value::as_str).unwrap_or("")
}

/// At most `max` characters of `s` on one line, with `…` when cut.
pub fn preview(s: &str, max: usize) -> String {
    let one_line: String = s.chars().map(|c| if c == '\n' || c == '\r' { ' ' } else { c }).collect();
    if one_line.chars().count() > max {
        format!("{}…", one_line.chars().take(max).collect::<String>())
    } else {
        one_line
    }
}

/// `s` with recognisable secrets replaced by `***`: the word after `Bearer`/`Basic`/an
/// `Authorization:` header, values of `key=value` / `key: value` pairs whose key looks secret
/// (also inside query strings), the value after a `--password`-like flag, and URL passwords.
/// Best effort: it cannot know every secret.
pub fn mask_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut mask_next = false;
    let mut rest = s;
    while !rest.is_empty() {
        let ws_start = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..ws_start];
        let after_word = &rest[ws_start..];
        let ws_len = after_word.find(|c: char| !c.is_whitespace()).unwrap_or(after_word.len());
        let ws = &after_word[..ws_len];
        rest = &after_word[ws_len..];
        let bare = word.trim_matches(|c| c == '"' || c == '\'').to_ascii_lowercase();
        if bare == "bearer" || bare == "basic" || bare == "token" {
            out.push_str(word);
            mask_next = true;
        } else if mask_next && !word.is_empty() {
            out.push_str(&keep_quotes(word));
            mask_next = false;
        } else {
            let (masked, dangling) = mask_word(word);
            out.push_str(&masked);
            mask_next = dangling;
        }
        out.push_str(ws);
    }
    out
}

/// `s` masked line by line ([`mask_text`] on each line, line endings kept): a secret word at the
/// end of one line never masks the start of the next, so diff and list markers stay.
pub fn mask_lines(s: &str) -> String {
    s.split_inclusive('\n')
        .map(|line| match line.strip_suffix('\n') {
            Some(body) => format!("{}\n", mask_text(body)),
            None => mask_text(line),
        })
        .collect()
}

/// `***` keeping the quote characters around `word` (so a shell line still reads right).
fn keep_quotes(word: &str) -> String {
    let lead: String = word.chars().take_while(|c| *c == '"' || *c == '\'').collect();
    let trail: String = word.chars().rev().take_while(|c| *c == '"' || *c == '\'').collect();
    if lead.len() >= word.len() {
        return word.to_string();
    }
    format!("{lead}***{trail}")
}

/// One whitespace-free word masked; `true` when it ends in a secret key with no value (so the
/// next word is the value).
fn mask_word(word: &str) -> (String, bool) {
    let mut word = word.to_string();
    // scheme://user:password@host
    if let Some(scheme_end) = word.find("://") {
        let auth_start = scheme_end + 3;
        let auth_end = word[auth_start..].find(['/', '?', '#']).map_or(word.len(), |i| auth_start + i);
        if let Some(at) = word[auth_start..auth_end].rfind('@') {
            if let Some(colon) = word[auth_start..auth_start + at].find(':') {
                word.replace_range(auth_start + colon + 1..auth_start + at, "***");
            }
        }
    }
    let bare = word.trim_start_matches(['-', '"', '\'']);
    if word.starts_with('-') && !bare.contains(['=', ':']) && is_secret_name(bare) {
        return (word, true);
    }
    let mut out = String::with_capacity(word.len());
    let mut dangling = false;
    for piece in word.split_inclusive(['&', '?', ';', ',']) {
        let (body, delim) = match piece.char_indices().last() {
            Some((i, c)) if "&?;,".contains(c) => (&piece[..i], &piece[i..]),
            _ => (piece, ""),
        };
        let sep = body.find(['=', ':']);
        match sep {
            Some(i) if is_secret_name(body[..i].trim_start_matches(['-', '"', '\''])) => {
                let value = &body[i + 1..];
                out.push_str(&body[..=i]);
                if value.trim_matches(['"', '\'']).is_empty() {
                    out.push_str(value);
                    dangling = delim.is_empty();
                } else {
                    out.push_str(&keep_quotes(value));
                }
            }
            _ => out.push_str(body),
        }
        out.push_str(delim);
    }
    (out, dangling)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks() {
        let cases = [
            ("ls -la", "ls -la"),
            ("curl -H 'Authorization: Bearer abc123' https://x", "curl -H 'Authorization: Bearer ***' https://x"),
            ("curl -H \"Authorization: token abc\" x", "curl -H \"Authorization: token ***\" x"),
            ("API_KEY=sk-1 ./run", "API_KEY=*** ./run"),
            ("mysql --password=hunter2 db", "mysql --password=*** db"),
            ("mysql --password hunter2 db", "mysql --password *** db"),
            ("https://x.com/a?api_key=zzz&q=1", "https://x.com/a?api_key=***&q=1"),
            ("https://bob:pw@x.com/a", "https://bob:***@x.com/a"),
            ("hello world", "hello world"),
        ];
        for (input, want) in cases {
            assert_eq!(mask_text(input), want, "{input}");
        }
    }

    #[test]
    fn lexical() {
        let ws = Path::new("/srv/ws/u1");
        assert_eq!(lexical_path(ws, "notes/todo.md"), Path::new("/srv/ws/u1/notes/todo.md"));
        assert_eq!(lexical_path(ws, "./a/./b"), Path::new("/srv/ws/u1/a/b"));
        assert_eq!(lexical_path(ws, "../x"), Path::new("/srv/ws/x"));
        assert_eq!(lexical_path(ws, "/etc/passwd"), Path::new("/etc/passwd"));
        assert!(lexical_path(Path::new("rel/ws"), "a").is_absolute());
    }
}
