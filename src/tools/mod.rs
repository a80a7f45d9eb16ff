//! Tools the agent can call: the [`Tool`] trait, the registry, argument validation and the
//! built-in tools.
//!
//! A tool declares whether it is read-only; the permission engine decides from that, the hard
//! deny list, the rules and the mode. A tool must never reach outside the user it runs for (its
//! [`ToolCtx`]), never panic on bad arguments (it returns [`ToolError::InvalidArgs`]) and never
//! block the runtime.

pub mod builtin;
mod check;
pub(crate) mod diff;
mod frame;
pub mod limits;
pub mod quota;
mod registry;
pub mod sandbox;
mod store;
mod tool;
mod validate;

pub use check::check_config;
pub use frame::{frame as frame_untrusted, OPEN as UNTRUSTED_OPEN};
pub use registry::builtin_tools;
pub use store::{ToolStore, ToolStores, TranscriptSearch};
pub use tool::{
    mask_secrets, masked_pretty, parse_args, Action, Detail, DetailKind, Tool, ToolCtx, ToolError, ToolOutput,
    ToolSource, ToolSpec, Tools,
};
pub use validate::validate_args;
