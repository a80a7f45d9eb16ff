//! Choosing the mode and the approvers for a call from its context: the channel, DM or group, and
//! the user's role (and, for approvers only, the conversation: an entry with `conversation`
//! matches that conversation and its threads, and never chooses a mode). `[[permissions.contexts]]` entries are tried in order; for each of `mode`
//! and `approvers`, the first matching entry that sets it wins, else `[permissions]` decides.
//! An entry's absent fields match anything; an entry whose `role` is not a known role (which
//! validation rejects) matches nothing.
//!
//! Contexts only pick a mode and approvers: they must never reach the hard deny list or the
//! deny rules, which are decided before any mode.

use crate::config::{ContextKind, Mode, PermissionsConfig};
use crate::store::UserRole;
use butler_channel::{ConversationKind, ConversationRef};

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
    conversation: Option<ConversationRef>,
}

impl Entry {
    /// `conversation` is None when unknown (choosing a mode): then entries that name one do
    /// not match.
    fn matches(
        &self,
        channel: &str,
        conversation: Option<&ConversationRef>,
        kind: ConversationKind,
        role: UserRole,
    ) -> bool {
        self.channel.as_deref().is_none_or(|c| c == channel)
            && self.conversation.as_ref().is_none_or(|want| conversation.is_some_and(|got| covers(want, got)))
            && self.kind.is_none_or(|k| k == kind)
            && self.role.is_none_or(|r| r == Some(role))
    }
}

/// `want` is `got`, or the conversation `got` is a thread of.
fn covers(want: &ConversationRef, got: &ConversationRef) -> bool {
    want.channel == got.channel
        && want.id == got.id
        && want.thread.as_ref().is_none_or(|t| got.thread.as_ref() == Some(t))
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
                conversation: c.conversation.clone(),
            })
            .collect();
        Self { mode: cfg.mode, approvers: cfg.approvers.clone(), entries }
    }

    pub(crate) fn mode(&self, channel: &str, kind: ConversationKind, role: UserRole) -> Chosen {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.matches(channel, None, kind, role))
            .find_map(|(i, e)| e.mode.map(|mode| Chosen { mode, entry: Some(i) }))
            .unwrap_or(Chosen { mode: self.mode, entry: None })
    }

    /// Who may approve; an empty list (which validation rejects) falls back to the requester.
    pub(crate) fn approvers(&self, channel: &str, kind: ConversationKind, role: UserRole) -> Vec<String> {
        self.approvers_at(channel, None, kind, role)
    }

    /// Who may approve a call made in `conversation`.
    pub(crate) fn approvers_in(
        &self,
        conversation: &ConversationRef,
        kind: ConversationKind,
        role: UserRole,
    ) -> Vec<String> {
        self.approvers_at(&conversation.channel, Some(conversation), kind, role)
    }

    fn approvers_at(
        &self,
        channel: &str,
        conversation: Option<&ConversationRef>,
        kind: ConversationKind,
        role: UserRole,
    ) -> Vec<String> {
        let chosen = self
            .entries
            .iter()
            .filter(|e| e.matches(channel, conversation, kind, role))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PermissionContext;

    fn entry(channel: Option<&str>, conversation: Option<&str>, approvers: &[&str]) -> PermissionContext {
        PermissionContext {
            channel: channel.map(Into::into),
            kind: None,
            role: None,
            mode: None,
            approvers: Some(approvers.iter().map(|a| a.to_string()).collect()),
            conversation: conversation.map(|c| c.parse().unwrap()),
        }
    }

    #[test]
    fn approvers_per_conversation_then_channel() {
        let cfg = PermissionsConfig {
            contexts: vec![
                entry(None, Some("slack:C1/1.5"), &["slack:UTHREAD"]),
                entry(Some("slack"), Some("slack:C1"), &["slack:UBOSS"]),
                entry(Some("slack"), None, &["role:owner"]),
                PermissionContext { mode: Some(Mode::Plan), ..entry(None, Some("slack:C1"), &["x:y"]) },
            ],
            ..PermissionsConfig::default()
        };
        let ctx = Contexts::new(&cfg);
        let (g, m) = (ConversationKind::Group, UserRole::Member);
        let cases = [
            ("slack:C1/1.5", "slack:UTHREAD"),
            ("slack:C1/2.5", "slack:UBOSS"),
            ("slack:C1", "slack:UBOSS"),
            ("slack:C2/1.5", "role:owner"),
            ("slack:C10", "role:owner"),
            ("web:C1", "requester"),
        ];
        for (conv, want) in cases {
            let got = ctx.approvers_in(&conv.parse().unwrap(), g, m);
            assert_eq!(got, vec![want.to_string()], "{conv}");
        }
        // Without a conversation (and for modes) entries naming one never match.
        assert_eq!(ctx.approvers("slack", g, m), vec!["role:owner".to_string()]);
        assert_eq!(ctx.mode("slack", g, m).mode, Mode::Default);
    }
}
