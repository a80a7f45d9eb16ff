//! The owner's status page, live: the model and its tiers with their prices, each channel and
//! its deliveries, the MCP servers and their tools, the skills, the schedules with their next
//! run, today's usage against the budgets, the data folder and the database: the facts
//! `butler doctor` checks, read from the running process instead of probed anew.
//!
//! Read only, and for the owner only (the web API checks the role before asking). It must never
//! show a secret: URLs are shown without credentials, keys not at all.

mod report;

pub use report::{Status, StatusParts, StatusReport};
