//! Placeholder contract for the scheduler (replaced by its implementation).
//!
//! Scheduled jobs enter Butler like everything else: the scheduler turns a due (schedule, fire
//! time) into an `InboundEvent` (body `EventBody::Trigger { source: "schedule", .. }`) through the
//! ingress; triage hands such events to [`Schedules::decide`].

use crate::config::ScheduleConfig;
use crate::store::{Store, StoreError, UserRow};
use crate::triage::{Access, Verdict};
use butler_channel::{InboundEvent, Ingress};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The source name of scheduled events.
pub const SOURCE: &str = "schedule";

pub struct Schedules;

impl Schedules {
    pub fn new(_cfg: &[ScheduleConfig], _store: Arc<dyn Store>, _access: Arc<Access>) -> Self {
        Self
    }

    /// What to do with a due job's event (an agent turn in the job's own session).
    pub async fn decide(&self, _event: &InboundEvent) -> Result<Verdict, StoreError> {
        Ok(Verdict::drop("the scheduler is not built yet"))
    }

    /// `/schedules`: the user's jobs with their last run.
    pub async fn describe_for(&self, _user: &UserRow) -> Result<String, StoreError> {
        Ok("No schedules.".into())
    }

    /// Fires due jobs into `ingress` until `cancel` fires.
    pub async fn run(self: Arc<Self>, _ingress: Arc<dyn Ingress>, cancel: CancellationToken) {
        cancel.cancelled().await;
    }
}
