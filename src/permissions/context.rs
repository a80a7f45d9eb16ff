//! Choosing the mode and the approvers for a call from its context: the channel, DM or group, and
//! the user's role. `[[permissions.contexts]]` entries are tried in order; for each of `mode`
//! and `approvers`, the first matching entry that sets it wins, else `[permissions]` decides.
//! An entry's absent fields match anything; an entry whose `role` is not a known role (which
//! validation rejects) matches nothing.
//!
//! Contexts only pick a mode and approvers: they must never reach the hard deny list or the
//! deny rules, which are decided before any mode.

use crate::config::{ContextKind, Mode, PermissionsConfig};
use crate::store::UserRole;
use butler_channel::ConversationKind;

#[derive(Clone, Debug)]
pub(crate) struct Contexts {
    mode: Mode,
    approvers: Vec<String>,
    entries: Vec<Entry>,
}

#[derive(Clone, Debug)]
struct Entry {
    channel: Option<String>,
    kind: Option<ConversationKind>,
    /// `Some(None)`: a role that does not exist, so the entry never matches.
    role: Option<Option<UserRole>>,
    mode: Option<Mode>,
    approvers: Option<Vec<String>>,
}

impl Entry {
    fn matches(&self, channel: &str, kind: ConversationKind, role: UserRole) -> bool {
        self.channel.as_deref().is_none_or(|c| c == channel)
            && self.kind.is_none_or(|k| k == kind)
            && self.role.is_none_or(|r| r == Some(role))
    }
}

/// The mode that applies to a call, and which context entry chose it (`None`: `[permissions]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chosen {
    pub mode: Mode,
    pub entry: Option<usize>,
}

impl Contexts {
    pub(crate) fn new(cfg: &PermissionsConfig) -> Self {
        let entries = cfg
            .contexts
            .iter()
            .map(|c| Entry {
                channel: c.channel.clone(),
                kind: c.kind.map(|k| match k {
                    ContextKind::Dm => ConversationKind::Direct,
                    ContextKind::Group => ConversationKind::Group,
                }),
                role: c.role.as_deref().map(UserRole::parse),
                mode: c.mode,
                approvers: c.approvers.clone(),
            })
            .collect();
        Self { mode: cfg.mode, approvers: cfg.approvers.clone(), entries }
    }

    pub(crate) fn mode(&self, channel: &str, kind: ConversationKind, role: UserRole) -> Chosen {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.matches(channel, kind, role))
            .find_map(|(i, e)| e.mode.map(|mode| Chosen { mode, entry: Some(i) }))
            .unwrap_or(Chosen { mode: self.mode, entry: None })
    }

    /// Who may approve; an empty list (which validation rejects) falls back to the requester.
    pub(crate) fn approvers(&self, channel: &str, kind: ConversationKind, role: UserRole) -> Vec<String> {
        let chosen = self
            .entries
            .iter()
            .filter(|e| e.matches(channel, kind, role))
            .find_map(|e| e.approvers.as_ref())
            .unwrap_or(&self.approvers);
        if chosen.is_empty() {
            vec!["requester".into()]
        } else {
            chosen.clone()
        }
    }
}

/// The mode's name as written in the config.
pub(crate) fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Default => "default",
        Mode::Plan => "plan",
        Mode::FullAuto => "full_auto",
    }
}
