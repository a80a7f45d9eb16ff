//! Placeholder: replaced by validation.
