//! Placeholder: replaced by the config loader.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Invalid(String),
}
pub struct Loaded;
