//! The user roles (`owner`, `member`, `guest`): named by `[access]`, `[permissions]` contexts
//! and approvers in the config, and stored on every user row (the store re-exports it).
//!
//! Plain data: this file must never import a component of Butler.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum UserRole {
    Guest,
    Member,
    Owner,
}

impl UserRole {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Guest => "guest",
            Self::Member => "member",
            Self::Owner => "owner",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "guest" => Self::Guest,
            "member" => Self::Member,
            "owner" => Self::Owner,
            _ => return None,
        })
    }
}
