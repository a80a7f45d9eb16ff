//! The names Butler gives its own channels and event sources: the `channel` of identities and
//! conversations that no platform owns (`system`, `hook`, `web`) and the `source` of scheduled
//! and background-task trigger events. One home, so that the scheduler, triage, ingress and the web chat agree.
//!
//! This module sits at the bottom of the crate: it must never import anything of Butler, and a
//! name here must never change (names are stored in identities, conversations and event ids).

/// The identity channel of Butler's own events (approval expiry).
pub const SYSTEM_CHANNEL: &str = "system";
/// The channel name of signed webhook triggers.
pub const HOOK_CHANNEL: &str = "hook";
/// The web channel's name in identities and conversations.
pub const WEB_CHANNEL: &str = "web";
/// The source name of scheduled events.
pub const SCHEDULE_SOURCE: &str = "schedule";
/// The source name of the events that carry a background task's result (`task:<id>`).
pub const TASK_SOURCE: &str = "task";
