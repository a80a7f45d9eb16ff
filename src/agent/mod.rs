//! The agent turn: from one inbound message to one final reply, through the LLM and tools.
//!
//! A turn appends the user message to the transcript, streams the model, runs tool calls
//! concurrently (each gets a result, whatever the others do), loops until the model answers
//! without tools or a limit stops it, and commits the reply, the transcript, the usage and the
//! inbox status in one transaction. Progress is persisted after every tool round, so a turn cut
//! off by a crash resumes from the transcript instead of repeating tools. The agent must never
//! wait for a person (approvals park the turn) and never send anything to a channel itself:
//! replies go through the outbox.

mod admit;
mod approve;
mod ask;
mod attach;
mod budget;
mod catalog;
mod child;
mod compact;
mod context;
mod delegate_tool;
mod exec;
mod host;
mod input;
mod narrow;
mod notices;
mod own;
mod progress;
mod prompt;
mod rerun;
mod state;
mod storable;
mod stores;
mod tasks;
mod turn;
mod window;

pub use ask::ASK_USER_TOOL;
pub(crate) use input::{Start, TurnError, TurnInput, TurnOutcome};
pub(crate) use own::with_agent_tools;
pub(crate) use progress::{Nudge, NullObserver, TurnObserver};
pub(crate) use prompt::{profile_section, system_prompt};
pub use stores::AgentStores;
pub(crate) use tasks::{recover_background, report_orphans};
pub use turn::Agent;
pub(crate) use turn::AgentParts;
pub(crate) use window::SessionState;
