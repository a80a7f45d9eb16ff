//! The permission engine: whether a tool call may run ([`Permission::Allow`]), must be approved
//! first ([`Permission::Ask`]) or may not run ([`Permission::Deny`]), with a short reason naming
//! the rule, and who may approve it.
//!
//! [`Policy::decide`] tries, in order, and the first rule that applies answers:
//! 1. the built-in hard deny list ([`hardlist`]) on every path the call touches: its paths, the
//!    words of its command line, a `file:` URL; lexically normalized and resolved on disk;
//! 2. `denied_tools` globs on the tool name -> Deny;
//! 3. `deny_paths` globs on those paths (and their parents) -> Deny;
//! 4. `denied_commands` globs on the command line and each of its sub-commands -> Deny;
//! 5. a URL in the arguments that would hand a secret-looking value to a host that is not
//!    trusted ([`exfil`]) -> Ask, in every mode and whatever allows the tool below;
//! 6. a session grant ("always for this session") -> Allow;
//! 7. `allowed_tools` globs -> Allow;
//! 8. `allow_paths`: a mutating file call (paths, no command, no URL) whose every path matches
//!    -> Allow;
//! 9. the mode of the context (channel, DM or group, role): `default` runs read-only tools and
//!    asks for the rest, `plan` runs read-only tools and denies the rest, `full_auto` runs all.
//!
//! Nothing may ever get past step 1: no config key, mode, context, grant or argument reaches it.
//! Deny rules ignore ASCII case and allow rules do not, so case tricks only ever deny more.
//! The engine must never run, open or change anything; it only reads path metadata.

pub mod approval;
mod check;
mod context;
pub mod exfil;
mod glob;
mod hardlist;
pub mod notice;
mod paths;

pub use check::check_config;
pub use glob::glob_match;
#[cfg(test)]
mod tests;

use crate::config::{Mode, PermissionsConfig};
use crate::store::UserRole;
use crate::tools::{Action, ToolSpec};
use butler_channel::ConversationKind;
use context::{mode_name, Contexts};
use glob::Glob;
use hardlist::HardList;
use paths::{Base, Candidate};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The engine's answer, with the reason recorded in the audit trail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Permission {
    Allow(String),
    Deny(String),
    Ask(String),
}

impl Permission {
    /// The reason, naming the rule that decided.
    pub fn reason(&self) -> &str {
        match self {
            Permission::Allow(r) | Permission::Deny(r) | Permission::Ask(r) => r,
        }
    }
}

/// One tool call to decide, in its context.
pub struct Request<'a> {
    pub tool: &'a ToolSpec,
    pub action: &'a Action,
    pub channel: &'a str,
    pub kind: ConversationKind,
    pub role: UserRole,
    /// The tool was approved "always for this session".
    pub granted: bool,
    /// The call's arguments, read for URLs that would leak ([`exfil::leak`]).
    pub args: &'a serde_json::Value,
}

/// A configured glob with the text it came from, for reasons.
#[derive(Clone, Debug)]
struct Rule {
    pattern: String,
    glob: Glob,
}

/// The compiled `[permissions]` section plus the built-in hard list.
#[derive(Clone, Debug)]
pub struct Policy {
    base: Base,
    hard: HardList,
    denied_tools: Vec<Rule>,
    allowed_tools: Vec<Rule>,
    deny_paths: Vec<Rule>,
    /// The `allow_paths` patterns as written; compiled into `allow_paths` (relative ones need
    /// the workspace root).
    allow_patterns: Vec<String>,
    /// The workspace root, as given (made absolute) and as resolved on disk.
    workspace_roots: Vec<PathBuf>,
    allow_paths: Vec<Rule>,
    denied_commands: Vec<Rule>,
    contexts: Contexts,
    timeout: Duration,
    trusted: exfil::Trusted,
    trusted_patterns: Vec<String>,
}

impl Policy {
    /// The policy for `cfg`, with HOME and the working directory of this process. `protected`
    /// are Butler's own files (config, database): hard-denied like credentials.
    pub fn new(cfg: &PermissionsConfig, protected: Vec<PathBuf>) -> Self {
        let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
        Self::build(cfg, &protected, home)
    }

    /// As [`Policy::new`] with an explicit HOME (for `~`, `$HOME` and showing paths as `~/...`).
    pub fn with_home(cfg: &PermissionsConfig, protected: Vec<PathBuf>, home: PathBuf) -> Self {
        Self::build(cfg, &protected, Some(home))
    }

    /// Relative `allow_paths` patterns are relative to each user's workspace, which is
    /// `<root>/<user id>`; without a root they match nothing.
    pub fn with_workspace_root(mut self, root: impl AsRef<Path>) -> Self {
        self.workspace_roots = self.base.candidate(root.as_ref()).forms().cloned().collect();
        self.allow_paths = self.compile_allow();
        self
    }

    fn build(cfg: &PermissionsConfig, protected: &[PathBuf], home: Option<PathBuf>) -> Self {
        let base = Base { home, cwd: std::env::current_dir().ok() };
        let text = |patterns: &[String], fold: bool| -> Vec<Rule> {
            patterns
                .iter()
                .map(|p| {
                    let glob = Glob::text(p);
                    Rule { pattern: p.clone(), glob: if fold { glob.folded() } else { glob } }
                })
                .collect()
        };
        // Relative patterns (and `~` ones without a HOME) deny at any depth.
        let deny_paths = cfg
            .deny_paths
            .iter()
            .flat_map(|p| {
                let globs = path_globs(&base, p, Relative::AnyDepth);
                globs.into_iter().map(|g| Rule { pattern: p.clone(), glob: Glob::path(&g).folded() })
            })
            .collect();
        let mut policy = Self {
            hard: HardList::new(&base, protected),
            base,
            denied_tools: text(&cfg.denied_tools, true),
            allowed_tools: text(&cfg.allowed_tools, false),
            deny_paths,
            allow_patterns: cfg.allow_paths.clone(),
            workspace_roots: Vec::new(),
            allow_paths: Vec::new(),
            denied_commands: text(&cfg.denied_commands, true),
            contexts: Contexts::new(cfg),
            timeout: Duration::from_secs(cfg.approval_timeout_secs),
            trusted: exfil::Trusted::new(&cfg.trusted_hosts),
            trusted_patterns: cfg.trusted_hosts.clone(),
        };
        policy.allow_paths = policy.compile_allow();
        policy
    }

    /// Hosts listed elsewhere (the http tool's `allowed_hosts`, each secret's `hosts`) that a
    /// URL may carry anything to, on top of `trusted_hosts`.
    pub fn trust_hosts(mut self, hosts: impl IntoIterator<Item = String>) -> Self {
        self.trusted_patterns.extend(hosts);
        self.trusted = exfil::Trusted::new(&self.trusted_patterns);
        self
    }

    /// A reply as it may go out: every link or image URL in it that would hand a
    /// secret-looking value to an untrusted host is replaced by a note naming the host, so no
    /// click, preview or image load sends it (an injected "show this image" is not obeyed).
    pub fn defuse_reply(&self, text: String) -> String {
        match exfil::defuse(&text, &self.trusted) {
            Some(safe) => {
                tracing::warn!("a link in the reply would have carried a secret-looking value: removed");
                safe
            }
            None => text,
        }
    }

    fn compile_allow(&self) -> Vec<Rule> {
        self.allow_patterns
            .iter()
            .flat_map(|p| {
                let globs = path_globs(&self.base, p, Relative::Under(&self.workspace_roots));
                globs.into_iter().map(|g| Rule { pattern: p.clone(), glob: Glob::path(&g) })
            })
            .collect()
    }

    pub fn decide(&self, req: &Request<'_>) -> Permission {
        let tool = &req.tool.name;
        let candidates = self.candidates(req.action);
        // 1. The hard list: nothing below may run before it.
        if let Some(reason) = candidates.iter().find_map(|c| self.hard.check(c)) {
            return Permission::Deny(reason);
        }
        // 2. denied_tools
        if let Some(rule) = self.denied_tools.iter().find(|r| r.glob.is_match(tool)) {
            return Permission::Deny(format!("denied_tools: {}", rule.pattern));
        }
        // 3. deny_paths, on every form of every path and their parents
        for c in &candidates {
            for form in c.forms() {
                if let Some(rule) = self.deny_paths.iter().find(|r| covers(&r.glob, form)) {
                    return Permission::Deny(format!(
                        "deny_paths: {} matches {}",
                        rule.pattern,
                        self.hard.show(&c.lexical)
                    ));
                }
            }
        }
        // 4. denied_commands, on the line and each sub-command
        if let Some(command) = &req.action.command {
            let forms = paths::command_forms(command);
            if let Some(rule) = self.denied_commands.iter().find(|r| forms.iter().any(|f| r.glob.is_match(f))) {
                return Permission::Deny(format!("denied_commands: {}", rule.pattern));
            }
        }
        // 5. a leak by URL asks, whatever would allow the call below
        if let Some(reason) = exfil::leak(req.args, &self.trusted) {
            return Permission::Ask(reason);
        }
        // 6. a session grant
        if req.granted {
            return Permission::Allow(format!("granted: `{tool}` was approved for this session"));
        }
        // 7. allowed_tools
        if let Some(rule) = self.allowed_tools.iter().find(|r| r.glob.is_match(tool)) {
            return Permission::Allow(format!("allowed_tools: {}", rule.pattern));
        }
        // 8. allow_paths, for a mutating file call whose every path (in every form) matches
        let a = req.action;
        if !req.tool.read_only && !a.paths.is_empty() && a.command.is_none() && a.url.is_none() {
            let mut used: Vec<&str> = Vec::new();
            let all = candidates.iter().all(|c| {
                c.forms().all(|form| match self.allow_paths.iter().find(|r| covers(&r.glob, form)) {
                    Some(rule) => {
                        if !used.contains(&rule.pattern.as_str()) {
                            used.push(&rule.pattern);
                        }
                        true
                    }
                    None => false,
                })
            });
            if all {
                return Permission::Allow(format!(
                    "allow_paths: every path `{tool}` touches matches {}",
                    used.join(", ")
                ));
            }
        }
        // 9. the mode of the context
        let chosen = self.contexts.mode(req.channel, req.kind, req.role);
        let name = mode_name(chosen.mode);
        let from = chosen.entry.map(|i| format!(" (permissions.contexts[{i}])")).unwrap_or_default();
        match (chosen.mode, req.tool.read_only) {
            (Mode::FullAuto, _) => Permission::Allow(format!("{name} mode: `{tool}` runs without asking{from}")),
            (_, true) => Permission::Allow(format!("{name} mode: `{tool}` changes nothing outside Butler{from}")),
            (Mode::Default, false) => Permission::Ask(format!("{name} mode: `{tool}` changes things{from}")),
            (Mode::Plan, false) => Permission::Deny(format!("{name} mode: `{tool}` changes things{from}")),
        }
    }

    /// The hard deny list alone, for a last check right before a tool touches a path (a
    /// symlink may have changed since the decision): the reason when `action` is on it.
    pub fn hard_denied(&self, action: &Action) -> Option<String> {
        self.candidates(action).iter().find_map(|c| self.hard.check(c))
    }

    /// Who may approve a call in this context: the first matching `[[permissions.contexts]]`
    /// entry that sets `approvers`, else `[permissions] approvers`.
    pub fn approvers(&self, channel: &str, kind: ConversationKind, role: UserRole) -> Vec<String> {
        self.contexts.approvers(channel, kind, role)
    }

    /// As [`Policy::approvers`], for a call made in `conversation` (entries with a
    /// `conversation` key match it and its threads).
    pub fn approvers_in(
        &self,
        conversation: &butler_channel::ConversationRef,
        kind: ConversationKind,
        role: UserRole,
    ) -> Vec<String> {
        self.contexts.approvers_in(conversation, kind, role)
    }

    /// How long an approval may stay unanswered before it counts as denied.
    pub fn approval_timeout(&self) -> Duration {
        self.timeout
    }

    /// Every path the action touches: its paths, the words of its command, a `file:` URL.
    fn candidates(&self, action: &Action) -> Vec<Candidate> {
        let mut out: Vec<Candidate> = action.paths.iter().map(|p| self.base.candidate(p)).collect();
        if let Some(command) = &action.command {
            let words = paths::command_words(command, self.base.home.as_deref());
            out.extend(words.iter().map(|w| self.base.word_candidate(w)));
        }
        if let Some(path) = action.url.as_deref().and_then(paths::file_url_path) {
            out.push(self.base.candidate(&path));
        }
        out
    }
}

/// Whether `glob` matches `path` or one of its parents.
fn covers(glob: &Glob, path: &Path) -> bool {
    path.ancestors().filter(|p| !p.as_os_str().is_empty()).any(|p| glob.is_match(&p.to_string_lossy()))
}

/// Where a relative path pattern applies.
enum Relative<'a> {
    /// At any depth (deny rules).
    AnyDepth,
    /// Inside each user's workspace below these roots (allow rules); nowhere when empty.
    Under(&'a [PathBuf]),
}

/// The full path globs of a configured pattern, without a trailing `/`: `~` and `~/...` below
/// HOME as given and as resolved on disk, `/...` as written, anything else as `relative` says.
/// Empty when the pattern cannot apply (an allow rule from `~` without a HOME).
fn path_globs(base: &Base, pattern: &str, relative: Relative<'_>) -> Vec<String> {
    let below = |dirs: &[PathBuf], rest: &str| -> Vec<String> {
        dirs.iter().map(|d| trim(&format!("{}{rest}", escape(&d.to_string_lossy()))).to_string()).collect()
    };
    let tilde = pattern == "~" || pattern.starts_with("~/");
    match (tilde, &base.home, relative) {
        (true, Some(home), _) => below(&base.candidate(home).forms().cloned().collect::<Vec<_>>(), &pattern[1..]),
        (true, None, Relative::AnyDepth) => vec![format!("**/{}", trim(pattern[1..].trim_start_matches('/')))],
        (true, None, Relative::Under(_)) => Vec::new(),
        (false, ..) if pattern.starts_with('/') => vec![trim(pattern).to_string()],
        (false, _, Relative::AnyDepth) => vec![format!("**/{}", trim(pattern))],
        (false, _, Relative::Under(roots)) => below(roots, &format!("/*/{}", trim(pattern))),
    }
}

/// A path pattern without its trailing `/` (paths are matched without one), `/` itself kept.
fn trim(pattern: &str) -> &str {
    match pattern.trim_end_matches('/') {
        "" if pattern.starts_with('/') => "/",
        t => t,
    }
}

/// `text` with glob characters escaped, to put a real path into a pattern.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
