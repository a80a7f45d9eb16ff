//! The decision about a scheduled event (`EventBody::Trigger` with source `schedule`, queued by
//! the scheduler's tick): an agent turn in the job's own session (`schedule:<id>`) as its
//! owner's user, or a drop with the reason recorded, also on the run. Also how access control
//! answers the scheduler's questions about people ([`Directory`] for [`Access`]).
//!
//! This must never let a job act as anyone but its owner, or deliver to a conversation that is
//! not the owner's; it never runs the turn itself (the session does).

use super::access::Access;
use super::verdict::{Decision, Verdict};
use crate::config::ScheduleMode;
use crate::ids::{SCHEDULE_SOURCE, WEB_CHANNEL};
use crate::schedule::Directory;
use crate::session::{Job, JobKind};
use crate::store::{now_ms, ConversationRow, RunStatus, ScheduleFilter, ScheduleRow, StoreError, UserRow, UserStore};
use async_trait::async_trait;
use butler_channel::{ConversationKind, ConversationRef, EventBody, Identity, InboundEvent};
use std::sync::Arc;

/// Decides about scheduled events.
pub(crate) struct ScheduledEvents {
    store: super::stores::TriageStores,
    access: Arc<Access>,
}

impl ScheduledEvents {
    pub(crate) fn new(store: super::stores::TriageStores, access: Arc<Access>) -> Self {
        Self { store, access }
    }

    /// What to do with a due job's event: an agent turn in the job's own session, as its
    /// owner's user; dropped (with the reason recorded, also on the run) when the job is gone
    /// or paused, or its owner may no longer use Butler or reach the target.
    pub(crate) async fn decide(&self, event: &InboundEvent) -> Result<Verdict, StoreError> {
        let EventBody::Trigger { payload, .. } = &event.body else {
            return Ok(Verdict::drop("a scheduled event without a job"));
        };
        let (Some(id), Some(fire_at)) = (payload["schedule"].as_i64(), payload["fire_at_ms"].as_i64()) else {
            return Ok(Verdict::drop("a scheduled event without a job id or fire time"));
        };
        let Some(row) = self.store.schedules.schedules_list(&ScheduleFilter::Id(id)).await?.into_iter().next() else {
            return Ok(Verdict::drop(format!("scheduled job #{id} no longer exists")));
        };
        let user = match self.admit(&row, event, payload["kind"] == "manual").await? {
            Ok(user) => user,
            Err(reason) => {
                self.store.schedules.schedule_run_note(id, fire_at, RunStatus::Dropped, Some(&reason)).await?;
                return Ok(Verdict::drop(reason));
            }
        };
        self.store.schedules.schedule_run_note(id, fire_at, RunStatus::Running, None).await?;
        let quiet = payload["mode"] == ScheduleMode::Heartbeat.as_str();
        let reason = format!(
            "job #{id} `{}` due {} -> turn for {} in {}",
            row.name,
            payload["fire_at"].as_str().unwrap_or_default(),
            event.actor.identity,
            event.conversation
        );
        let job = Job { event: event.clone(), user, kind: JobKind::Turn, attempt: 1, quiet };
        Ok(Verdict::recorded(
            Decision::Session { key: format!("{SCHEDULE_SOURCE}:{id}"), job: Box::new(job) },
            "schedule",
            reason,
        ))
    }

    /// The owner's user, or why the run is dropped: the job is paused (a manual run still
    /// goes), the owner may no longer use Butler, or the target is not the owner's.
    async fn admit(
        &self,
        row: &ScheduleRow,
        event: &InboundEvent,
        manual: bool,
    ) -> Result<Result<UserRow, String>, StoreError> {
        if row.paused && !manual {
            return Ok(Err(format!("scheduled job #{} `{}` is paused", row.id, row.name)));
        }
        let owner = &event.actor.identity;
        let Some(user) = self.access.user_for(&*self.store.users, owner).await? else {
            return Ok(Err(format!(
                "scheduled job #{} `{}`: its owner {owner} may no longer use Butler",
                row.id, row.name
            )));
        };
        if let Some(why) = self.target_refusal(event, &user).await? {
            return Ok(Err(format!("scheduled job #{}: {why}", row.id)));
        }
        Ok(Ok(user))
    }

    /// A web target is created for the owner if it does not exist; one that belongs to someone
    /// else is refused.
    async fn target_refusal(&self, event: &InboundEvent, user: &UserRow) -> Result<Option<String>, StoreError> {
        let conv = &event.conversation;
        if conv.channel != WEB_CHANNEL {
            return Ok(None);
        }
        let owner = event.actor.identity.to_string();
        let row = ConversationRow { id: conv.to_string(), kind: ConversationKind::Direct, owner, created_ms: now_ms() };
        let actual = self.store.users.conversation_ensure(&row).await?.owner;
        if actual == row.owner
            || self.store.users.user_identities(&user.id).await?.iter().any(|i| i.to_string() == actual)
        {
            return Ok(None);
        }
        Ok(Some(format!("{conv} belongs to {actual}, not to the job's owner")))
    }
}

#[async_trait]
impl Directory for Access {
    fn default_owner(&self) -> Option<Identity> {
        self.owners().first().cloned()
    }

    async fn user_id(&self, store: &dyn UserStore, identity: &Identity) -> Result<Option<String>, StoreError> {
        Ok(self.user_for(store, identity).await?.map(|u| u.id))
    }

    fn is_group(&self, conversation: &ConversationRef) -> bool {
        self.group(conversation).is_some()
    }
}
