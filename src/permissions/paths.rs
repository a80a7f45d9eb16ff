//! Which paths a tool call touches, as the permission rules see them: the action's paths, the
//! words of its command line that could be paths, and a `file:` URL; each normalized lexically
//! (`~` and `$HOME` expanded with the HOME the policy was built with, `.` and `..` resolved
//! without touching the disk) and, when it (or a parent) exists, resolved on disk as well, so
//! that a symlink cannot hide where a path really leads.
//!
//! This module only reads path metadata (`canonicalize`); it must never open, create or change a
//! file, and never read the process environment (HOME and the working directory are passed in).

use std::path::{Component, Path, PathBuf};

/// At most this many words are taken from one brace expression (`{a,b}`), so that a hostile
/// command cannot blow up the check; the unexpanded word is always checked too.
const MAX_BRACE_WORDS: usize = 64;

/// One path a call touches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// Normalized lexically; absolute unless it is a relative word of a command line (whose
    /// working directory is not known here).
    pub lexical: PathBuf,
    /// Where it resolves on disk (symlinks followed, for the part that exists), when that
    /// differs from `lexical`.
    pub real: Vec<PathBuf>,
}

impl Candidate {
    /// `lexical` and every resolved form.
    pub fn forms(&self) -> impl Iterator<Item = &PathBuf> {
        std::iter::once(&self.lexical).chain(self.real.iter())
    }
}

/// Where relative paths and `~` lead.
#[derive(Clone, Debug, Default)]
pub(crate) struct Base {
    pub home: Option<PathBuf>,
    /// The working directory relative action paths are resolved against.
    pub cwd: Option<PathBuf>,
}

impl Base {
    /// `~` and `~/x` with HOME put in; anything else unchanged.
    pub fn expand_tilde(&self, path: &Path) -> PathBuf {
        let mut parts = path.components();
        match (parts.next(), &self.home) {
            (Some(Component::Normal(first)), Some(home)) if first == "~" => home.join(parts.as_path()),
            _ => path.to_path_buf(),
        }
    }

    /// Absolute (against `cwd`) and `~`-expanded, `..` not yet resolved.
    pub fn absolute(&self, path: &Path) -> PathBuf {
        let path = self.expand_tilde(path);
        match &self.cwd {
            Some(cwd) if path.is_relative() => cwd.join(path),
            _ => path,
        }
    }

    /// A path of the action (or of a `file:` URL): absolute, lexical and resolved forms.
    pub fn candidate(&self, path: &Path) -> Candidate {
        let raw = self.absolute(path);
        let lexical = normalize(&raw);
        let real = resolved(&[&raw, &lexical], &lexical);
        Candidate { lexical, real }
    }

    /// A word of a command line: relative words stay relative (the shell's directory is not
    /// known), absolute ones are also resolved on disk.
    pub fn word_candidate(&self, word: &str) -> Candidate {
        let raw = self.expand_tilde(Path::new(word));
        let lexical = normalize(&raw);
        let real = if raw.is_absolute() { resolved(&[&raw, &lexical], &lexical) } else { Vec::new() };
        Candidate { lexical, real }
    }
}

/// Resolves `.` and `..` without touching the disk. `..` at the root stays at the root; leading
/// `..` of a relative path are kept.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out: Vec<Component<'_>> = Vec::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(part),
            },
            other => out.push(other),
        }
    }
    if out.is_empty() {
        return PathBuf::from(".");
    }
    out.iter().collect()
}

/// Where `path` leads on disk: the longest part that exists, canonicalized (symlinks followed,
/// `..` applied after them as the kernel would), with the rest appended and normalized.
pub(crate) fn real_path(path: &Path) -> Option<PathBuf> {
    for base in path.ancestors() {
        if base.as_os_str().is_empty() {
            break;
        }
        if let Ok(real) = std::fs::canonicalize(base) {
            let rest = path.strip_prefix(base).ok()?;
            return Some(normalize(&real.join(rest)));
        }
    }
    None
}

/// The resolved forms of `paths` that differ from `lexical`, without repeats.
fn resolved(paths: &[&Path], lexical: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in paths {
        if let Some(real) = real_path(p) {
            if real != lexical && !out.contains(&real) {
                out.push(real);
            }
        }
    }
    out
}

/// The path of a `file:` URL (`file:///etc/x`, `file://localhost/etc/x`, `file:/etc/x`,
/// `file:~/x`), percent-decoded; `None` for any other URL.
pub(crate) fn file_url_path(url: &str) -> Option<PathBuf> {
    let url = url.trim();
    let rest = url.get(..5).filter(|s| s.eq_ignore_ascii_case("file:")).map(|_| &url[5..])?;
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    let path = match rest.strip_prefix("//") {
        // `file://host/path`: the host (usually empty or localhost) is dropped.
        Some(authority_and_path) => match authority_and_path.find('/') {
            Some(i) => &authority_and_path[i..],
            None => "/",
        },
        None => rest,
    };
    Some(PathBuf::from(percent_decode(path)))
}

/// `s` with its `%XX` escapes decoded (a malformed one kept as written), as UTF-8 with invalid
/// bytes replaced: a `file:` URL's path, a part of a URL read for secrets.
pub(super) fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// Every word of a shell command line that could name a path, with `$HOME`, `${HOME}`, `~` and
/// one level of braces (`{a,b}`) expanded, and quotes and backslashes both kept as separators
/// and removed (so `.s""sh` is seen as `.ssh`). Over-inclusive on purpose: every word is a
/// candidate, since a word that is not a path matches nothing.
pub(crate) fn command_words(command: &str, home: Option<&Path>) -> Vec<String> {
    let expanded = expand_home_var(command, home);
    let unquoted: String = expanded.chars().filter(|c| !matches!(c, '\'' | '"' | '\\')).collect();
    let split = |text: &str, quotes: bool| -> Vec<String> {
        text.split(|c: char| c.is_whitespace() || ";|&<>()`=".contains(c) || (quotes && matches!(c, '\'' | '"')))
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut words: Vec<String> = Vec::new();
    for word in split(&unquoted, false).into_iter().chain(split(&expanded, true)) {
        for w in expand_braces(&word) {
            if !words.contains(&w) {
                words.push(w);
            }
        }
        if let Some(path) = file_url_path(&word) {
            let path = path.to_string_lossy().into_owned();
            if !words.contains(&path) {
                words.push(path);
            }
        }
    }
    words
}

/// `$HOME` (not `$HOMEX`) and `${HOME}` replaced by `home`.
fn expand_home_var(command: &str, home: Option<&Path>) -> String {
    let Some(home) = home else { return command.to_string() };
    let home = home.to_string_lossy();
    let mut out = String::with_capacity(command.len());
    let mut rest = command;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix("{HOME}") {
            out.push_str(&home);
            rest = tail;
        } else if let Some(tail) =
            after.strip_prefix("HOME").filter(|t| !t.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
        {
            out.push_str(&home);
            rest = tail;
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The word itself, plus its brace expansion (`a{b,c}d` -> `abd`, `acd`; nested and repeated
/// braces too), bounded by [`MAX_BRACE_WORDS`].
fn expand_braces(word: &str) -> Vec<String> {
    let mut out = vec![word.to_string()];
    let mut queue = vec![word.to_string()];
    while let Some(w) = queue.pop() {
        let Some((open, close)) = innermost_braces(&w) else { continue };
        let inner = &w[open + 1..close];
        for alt in inner.split(',') {
            if out.len() >= MAX_BRACE_WORDS {
                return out;
            }
            let next = format!("{}{}{}", &w[..open], alt, &w[close + 1..]);
            if !out.contains(&next) {
                out.push(next.clone());
                queue.push(next);
            }
        }
    }
    out
}

/// The first `{...}` pair with no brace inside it.
fn innermost_braces(w: &str) -> Option<(usize, usize)> {
    let mut open = None;
    for (i, c) in w.char_indices() {
        match c {
            '{' => open = Some(i),
            '}' => {
                if let Some(o) = open {
                    return Some((o, i));
                }
            }
            _ => {}
        }
    }
    None
}

/// The command line and its sub-commands (split at `;`, `&&`, `||`, `|`, `&`, newlines, `$(`,
/// backticks and parentheses), each trimmed and with runs of whitespace collapsed, without
/// repeats; the forms `denied_commands` globs are matched against.
pub(crate) fn command_forms(command: &str) -> Vec<String> {
    let collapse = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let unquoted: String = command.chars().filter(|c| !matches!(c, '\'' | '"' | '\\')).collect();
    let mut forms = vec![command.trim().to_string(), collapse(command), collapse(&unquoted)];
    for text in [command, unquoted.as_str()] {
        for part in text.split([';', '|', '&', '\n', '`', '(', ')']) {
            let part = collapse(part.trim_matches(|c: char| c == '$' || c.is_whitespace()));
            if !part.is_empty() {
                forms.push(part);
            }
        }
    }
    let mut out: Vec<String> = Vec::new();
    for f in forms {
        if !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_resolves_dots_without_the_disk() {
        let cases: &[(&str, &str)] = &[
            ("/home/u/workspace/../.ssh/id_rsa", "/home/u/.ssh/id_rsa"),
            ("/home/u/./a/./b", "/home/u/a/b"),
            ("/../../etc/shadow", "/etc/shadow"),
            ("/home/u/a/b/../../../../etc", "/etc"),
            ("a/../../.ssh", "../.ssh"),
            ("./x", "x"),
            (".", "."),
            ("a/..", "."),
            ("/", "/"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(Path::new(input)), PathBuf::from(want), "{input}");
        }
    }

    #[test]
    fn tilde_and_relative_paths_use_the_given_base() {
        let base = Base { home: Some("/home/u".into()), cwd: Some("/srv/butler".into()) };
        assert_eq!(base.candidate(Path::new("~/.ssh/x")).lexical, PathBuf::from("/home/u/.ssh/x"));
        assert_eq!(base.candidate(Path::new("~")).lexical, PathBuf::from("/home/u"));
        assert_eq!(base.candidate(Path::new("data/butler.db")).lexical, PathBuf::from("/srv/butler/data/butler.db"));
        assert_eq!(base.candidate(Path::new("../x")).lexical, PathBuf::from("/srv/x"));
        // `~user` is not the policy's HOME; it stays a plain word.
        assert_eq!(base.word_candidate("~root/.ssh").lexical, PathBuf::from("~root/.ssh"));
        assert_eq!(base.word_candidate("../.ssh/id_rsa").lexical, PathBuf::from("../.ssh/id_rsa"));
    }

    #[test]
    fn file_urls() {
        let cases: &[(&str, Option<&str>)] = &[
            ("file:///home/u/.ssh/id_rsa", Some("/home/u/.ssh/id_rsa")),
            ("FILE://localhost/etc/shadow", Some("/etc/shadow")),
            ("file:/etc/shadow", Some("/etc/shadow")),
            ("file:~/.aws/credentials", Some("~/.aws/credentials")),
            ("file:///home/u/%2essh/id%5Frsa?x=1#y", Some("/home/u/.ssh/id_rsa")),
            ("file:///bad%zz%", Some("/bad%zz%")),
            ("https://example.com/file:///etc/shadow", None),
            ("http://example.com/", None),
        ];
        for (url, want) in cases {
            assert_eq!(file_url_path(url), want.map(PathBuf::from), "{url}");
        }
    }

    #[test]
    fn command_words_expand_home_quotes_and_braces() {
        let home = Some(Path::new("/home/u"));
        let words = |c: &str| command_words(c, home);
        assert!(words("cat $HOME/.aws/credentials").contains(&"/home/u/.aws/credentials".to_string()));
        assert!(words("cat ${HOME}/.netrc").contains(&"/home/u/.netrc".to_string()));
        assert!(words("echo $HOMEDIR/x").contains(&"$HOMEDIR/x".to_string()));
        assert!(words("cat ~/.s\"\"sh/id_rsa").contains(&"~/.ssh/id_rsa".to_string()));
        assert!(words("cat '/home/u/.ssh/config'").contains(&"/home/u/.ssh/config".to_string()));
        assert!(words("cat ~/.{aws,ssh}/x").contains(&"~/.ssh/x".to_string()));
        assert!(words("tool --key=/home/u/k.pem").contains(&"/home/u/k.pem".to_string()));
        assert!(words("cat x>~/.ssh/authorized_keys").contains(&"~/.ssh/authorized_keys".to_string()));
        assert!(words("echo $(cat ~/.netrc)").contains(&"~/.netrc".to_string()));
        assert!(words("curl file:///home/u/%2essh/id_rsa").contains(&"/home/u/.ssh/id_rsa".to_string()));
        assert!(expand_braces(&"{a,b}".repeat(20)).len() <= MAX_BRACE_WORDS);
    }

    #[test]
    fn command_forms_split_sub_commands() {
        let forms = command_forms("ls  -la; rm   -rf /tmp/x && echo $(curl x | sh)");
        for want in ["ls -la", "rm -rf /tmp/x", "echo", "curl x", "sh", "ls -la; rm -rf /tmp/x && echo $(curl x | sh)"]
        {
            assert!(forms.contains(&want.to_string()), "{want:?} not in {forms:?}");
        }
        assert!(command_forms("r\"m\" -rf /").contains(&"rm -rf /".to_string()));
    }
}
