//! What model calls cost: the configured prices per million tokens, by kind of token, and the
//! cost of one call's usage. Shared by the agent, the archivist and the usage ledger.
//!
//! This must never read the store or the network: it is arithmetic over [`Usage`].

use super::Usage;

/// USD per million tokens, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Prices {
    pub fn from_config(cfg: &crate::config::LlmConfig) -> Self {
        Self {
            input: cfg.input_price_per_mtok,
            output: cfg.output_price_per_mtok,
            cache_read: cfg.cache_read_price_per_mtok,
            cache_write: cfg.cache_write_price_per_mtok,
        }
    }

    /// The cost of `u` in USD. Providers report cached input separately from `input_tokens`.
    pub fn cost(&self, u: &Usage) -> f64 {
        (u.input_tokens as f64 * self.input
            + u.output_tokens as f64 * self.output
            + u.cache_read_tokens as f64 * self.cache_read
            + u.cache_write_tokens as f64 * self.cache_write)
            / 1e6
    }
}
