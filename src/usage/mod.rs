//! What people spend on models, as they ask for it: `/usage` in every channel, the usage panel
//! of the web page and `butler usage`. The periods of a person's own calendar (today, this
//! week, this month, in their time zone), the report by model the usage ledger gives for them
//! with the budgets, and its text.
//!
//! It reads the ledger through [`crate::store::TurnStore`] only and never writes: spending is
//! recorded where model calls are made (the agent, the archivist, the classifier).

mod periods;
mod report;

pub use periods::{day_start_ms, Period};
pub use report::{render, PeriodUsage, Usage, UsageReport};
