//! Delegation: what a `delegate` call asks for and may get (the archetype, the tier, the tools
//! a child may have, how deep children may go), the checks of `[agent.delegation]` and
//! `[[agent.archetypes]]`, the totals of one message across its whole tree of helpers
//! (`Chain`), and the registry of running children and live chains that `/stop`, `/tasks` and
//! `/cancel` reach.
//!
//! Running a child is the agent's job (a child turn is an agent turn); this module only plans
//! and tracks. It must never widen a child's tools beyond its parent's, never run anything
//! itself, and never wait for a person.

mod chain;
mod chains;
mod config;
mod day;
mod plan;
mod running;
mod tree;

pub use chain::{Caps, Chain, Refusal, Ticket, Totals};
pub use chains::Chains;
pub use config::{archetype_tool_warnings, check_config};
pub use day::{DayGate, DayTicket, Days};
pub use plan::{child_prompt, plan, spec, DelegateArgs, Plan, PlanError, DELEGATE_TOOL};
pub use running::{BackgroundSlot, Registered, Running};
pub use tree::waiting_children;
