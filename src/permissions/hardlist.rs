//! The built-in hard deny list: credential paths, private keys, system secrets and Butler's own
//! configuration and database. It is checked first, on every path a call touches (and every
//! parent of it, and where it really leads on disk), and no configuration, mode, grant, hook or
//! tool argument can switch it off: there is deliberately no setting that reaches this file.
//!
//! What counts as a hit (names compare ignoring ASCII case, so case tricks only make it
//! stricter):
//! - a component sequence anywhere in the path: `.ssh`, `.aws`, `.gnupg`, `.netrc`,
//!   `.git-credentials`, `.kube/config`, `.docker/config.json`, `.config/gh`, the cloud CLIs'
//!   `.config/gcloud`, `.azure`, `.oci`, `.config/doctl` and `.terraform.d/credentials.tfrc.json`
//!   (so `~/.ssh`, another user's `/home/bob/.ssh` and a relative `../.ssh` alike);
//! - an absolute system path or anything below it: `/etc/shadow`, `/etc/gshadow`, `/etc/sudoers`,
//!   `/etc/sudoers.d`, `/proc/*/environ` (the service's own environment holds its API keys);
//! - a component named like a private key: `id_rsa*`, `id_dsa*`, `id_ecdsa*`, `id_ed25519*`,
//!   `*.pem`, `*.key`, `*.p12`, `*.pfx`, `*.kdbx`;
//! - a protected path given to the policy (Butler's config file and database, with the
//!   `-wal`, `-shm` and `-journal` files beside it) or anything below it; a relative command word
//!   (whose directory is unknown) hits when any component has a protected file's name.
//!
//! A command word with wildcards (`~/.ss?/id_*`) hits when its pattern could name a listed
//! component; a wildcard component without any letter or digit (`*`, `.*`, `*.*`) is not taken
//! as naming anything, so ordinary `ls *` or `sed 's/.*//'` are not blocked. Shell commands stay
//! best effort (a program can build a path at run time); that is why shell asks by default.
//!
//! This module must never be made configurable, and never touch the disk beyond the
//! `canonicalize` calls of [`super::paths`].

use super::glob::{has_wildcard, Glob};
use super::paths::{real_path, Base, Candidate};
use std::path::{Component, Path, PathBuf};

/// Credential files and directories, matched as consecutive components anywhere in a path.
const CREDENTIALS: &[&[&str]] = &[
    &[".ssh"],
    &[".aws"],
    &[".gnupg"],
    &[".netrc"],
    &[".git-credentials"],
    &[".kube", "config"],
    &[".docker", "config.json"],
    &[".config", "gh"],
    &[".config", "gcloud"],
    &[".azure"],
    &[".oci"],
    &[".config", "doctl"],
    &[".terraform.d", "credentials.tfrc.json"],
];

/// System secrets: the path and everything below it (components may be globs).
const SYSTEM: &[&str] = &["/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/sudoers.d", "/proc/*/environ"];

/// File names of private keys and key stores.
const KEY_NAMES: &[&str] =
    &["id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.pem", "*.key", "*.p12", "*.pfx", "*.kdbx"];

/// Files beside a protected file that hold the same data (SQLite's write-ahead log and journal).
const SIBLINGS: &[&str] = &["-wal", "-shm", "-journal"];

/// What a hit is, for the reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hit {
    Credential,
    System,
    PrivateKey,
    Butler,
}

impl Hit {
    fn words(self) -> &'static str {
        match self {
            Hit::Credential => "a credential path",
            Hit::System => "a system secret",
            Hit::PrivateKey => "named like a private key",
            Hit::Butler => "Butler's own configuration or database",
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct HardList {
    /// HOME as given and as resolved on disk, to show paths as `~/...`.
    homes: Vec<PathBuf>,
    /// Protected paths (lexical and resolved forms), as components.
    protected: Vec<Vec<String>>,
    /// File names of the protected paths, for relative command words.
    protected_names: Vec<String>,
}

impl HardList {
    pub(crate) fn new(base: &Base, protected: &[PathBuf]) -> Self {
        let mut homes: Vec<PathBuf> = base.home.iter().map(|h| super::paths::normalize(h)).collect();
        if let Some(real) = base.home.as_deref().and_then(real_path) {
            if !homes.contains(&real) {
                homes.push(real);
            }
        }
        let mut list = Self { homes, protected: Vec::new(), protected_names: Vec::new() };
        for path in protected {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            let mut paths = vec![path.clone()];
            if let Some(name) = &name {
                paths.extend(SIBLINGS.iter().map(|s| path.with_file_name(format!("{name}{s}"))));
            }
            for p in paths {
                let candidate = base.candidate(&p);
                for form in candidate.forms() {
                    let comps = components(form);
                    if !list.protected.contains(&comps) {
                        list.protected.push(comps);
                    }
                }
                if let Some(n) = p.file_name().map(|n| n.to_string_lossy().into_owned()) {
                    if !list.protected_names.contains(&n) {
                        list.protected_names.push(n);
                    }
                }
            }
        }
        list
    }

    /// The reason `candidate` is denied, if it is on the list (in any of its forms).
    pub(crate) fn check(&self, candidate: &Candidate) -> Option<String> {
        let shown = self.show(&candidate.lexical);
        candidate.forms().find_map(|form| {
            let hit = self.hit(form)?;
            Some(if *form == candidate.lexical {
                format!("hard deny: {shown} is {}", hit.words())
            } else {
                format!("hard deny: {shown} leads to {}, {}", self.show(form), hit.words())
            })
        })
    }

    fn hit(&self, path: &Path) -> Option<Hit> {
        let comps = components(path);
        let absolute = path.is_absolute();
        let anywhere = |seq: &[&str]| {
            (0..comps.len())
                .any(|i| comps.len() - i >= seq.len() && seq.iter().enumerate().all(|(k, s)| names(&comps[i + k], s)))
        };
        if CREDENTIALS.iter().any(|seq| anywhere(seq)) {
            return Some(Hit::Credential);
        }
        let system = SYSTEM.iter().any(|s| {
            let target = components(Path::new(s));
            if absolute {
                starts_with(&comps, &target)
            } else {
                let rel: Vec<&str> = target[1..].iter().map(String::as_str).collect();
                anywhere(&rel)
            }
        });
        if system {
            return Some(Hit::System);
        }
        if comps.iter().any(|c| c != "/" && c != ".." && KEY_NAMES.iter().any(|k| names(c, k))) {
            return Some(Hit::PrivateKey);
        }
        let butler = if absolute {
            self.protected.iter().any(|p| starts_with(&comps, p))
        } else {
            comps.iter().any(|c| self.protected_names.iter().any(|n| names(c, n)))
        };
        butler.then_some(Hit::Butler)
    }

    /// `path` with HOME shown as `~`.
    pub(crate) fn show(&self, path: &Path) -> String {
        for home in &self.homes {
            if let Ok(rest) = path.strip_prefix(home) {
                return if rest.as_os_str().is_empty() { "~".into() } else { format!("~/{}", rest.display()) };
            }
        }
        path.display().to_string()
    }
}

/// `/`, then each named component (`..` kept for relative paths).
fn components(path: &Path) -> Vec<String> {
    path.components()
        .filter_map(|c| match c {
            Component::RootDir => Some("/".to_string()),
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            Component::ParentDir => Some("..".to_string()),
            Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// Whether `path` is `prefix` or below it, component by component.
fn starts_with(path: &[String], prefix: &[String]) -> bool {
    path.len() >= prefix.len() && path.iter().zip(prefix).all(|(c, p)| names(c, p))
}

/// Whether the path component `comp` could name `target` (both may be globs): the target's
/// pattern matches the component, or the component, when it is a wildcard with at least one
/// letter or digit, matches the target's text.
fn names(comp: &str, target: &str) -> bool {
    if Glob::text(target).folded().is_match(comp) {
        return true;
    }
    let literal_alnum = {
        let mut escaped = false;
        let mut in_set = false;
        comp.chars().any(|c| {
            let literal = !escaped && !in_set && c.is_ascii_alphanumeric();
            match c {
                '[' if !escaped => in_set = true,
                ']' if in_set => in_set = false,
                _ => {}
            }
            escaped = c == '\\' && !escaped;
            literal
        })
    };
    has_wildcard(comp) && literal_alnum && Glob::text(comp).folded().is_match(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_patterns_both_ways() {
        let cases: &[(&str, &str, bool)] = &[
            (".ssh", ".ssh", true),
            (".SSH", ".ssh", true),
            (".ss?", ".ssh", true),
            (".s*", ".ssh", true),
            (".*", ".ssh", false),
            ("*", ".ssh", false),
            ("server.pem", "*.pem", true),
            ("*.pem", "*.pem", true),
            ("id_*", "id_rsa*", true),
            ("*.*", "*.pem", false),
            ("*", "id_rsa*", false),
            ("notes.md", "*.pem", false),
            ("[.]ssh", ".ssh", true),
            ("[.]s?h", ".ssh", true),
        ];
        for (comp, target, want) in cases {
            assert_eq!(names(comp, target), *want, "{comp:?} vs {target:?}");
        }
    }
}
