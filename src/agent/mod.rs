//! The agent turn: from one inbound message to one final reply, through the LLM and tools.
//!
//! A turn appends the user message to the transcript, streams the model, runs tool calls
//! concurrently (each gets a result, whatever the others do), loops until the model answers
//! without tools or a limit stops it, and commits the reply, the transcript, the usage and the
//! inbox status in one transaction. Progress is persisted after every tool round, so a turn cut
//! off by a crash resumes from the transcript instead of repeating tools. The agent must never
//! wait for a person (approvals park the turn) and never send anything to a channel itself:
//! replies go through the outbox.

mod approve;
mod context;
mod exec;
mod prompt;
mod turn;
mod window;

pub use approve::{approval_id, approval_key, args_hash, decision_audit, may_decide, outcome_text};
pub use context::{build_messages, dangling_results};
pub use exec::{prepare, run_calls, truncate_result, Ready, ToolResult};
pub use prompt::system_prompt;
pub use turn::{
    explain, reply_key, Agent, NullObserver, Prices, Start, TurnError, TurnInput, TurnObserver, TurnOutcome, QUIET,
};
pub use window::{estimate, shrink, SessionState};
