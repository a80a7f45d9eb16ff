//! Rate limits for the channels: the arithmetic ([`Rate`], [`Cell`], [`Bucket`]), the gate that
//! keeps limits which must hold across replicas ([`RateGate`], the handle [`Gate`], the
//! in-process [`LocalGate`]) and what signed endpoints do with refused requests
//! ([`Refusals`]).
//!
//! Nothing here may sleep or block: a caller over a limit gets the wait at once and decides
//! what it means (sleep, reschedule, answer 429). This module composes its children and holds
//! nothing of its own; it must never know a platform, a database or Redis.

mod gate;
mod local;
mod rate;
mod refusals;

pub use gate::{Gate, RateGate};
pub use local::LocalGate;
pub use rate::{retry_after_secs, Bucket, Cell, Rate};
pub use refusals::{source_key, Refusal, Refusals, LOG_EVERY, REFUSALS_PER_MINUTE, UNKNOWN_SOURCE};
