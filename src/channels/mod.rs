//! The glue between Butler's config and the platform channel crates (`channels/*`): builds
//! each configured adapter, mounts its HTTP routes (webhooks, interactivity endpoints) and
//! checks its credentials for `butler doctor`. This is the only module besides `app` that
//! names a channel crate, each behind the cargo feature of the same name.
//!
//! It must never hold platform logic: mapping config to the crate's settings is all it does.

mod built;
#[cfg(feature = "discord")]
mod discord;
#[cfg(feature = "slack")]
mod slack;
#[cfg(feature = "telegram")]
mod telegram;

pub use built::{BuildError, Built, Check};

use crate::config::Config;
use butler_channel::limit::Gate;
use butler_channel::Ingress;
use std::sync::Arc;

/// Builds every configured platform channel, their rate limits kept in `gate` (this process's,
/// or the replicas' shared one). `http` is false for `butler chat`, which runs no server and
/// no platform channels.
pub async fn build(cfg: &Config, ingress: Arc<dyn Ingress>, http: bool, gate: &Gate) -> Result<Built, BuildError> {
    #[allow(unused_mut)]
    let mut built = Built::default();
    if !http {
        return Ok(built);
    }
    #[cfg(feature = "telegram")]
    if let Some(t) = &cfg.channels.telegram {
        telegram::build(t, ingress.clone(), gate, &mut built).await?;
    }
    #[cfg(feature = "slack")]
    if let Some(s) = &cfg.channels.slack {
        slack::build(s, cfg, ingress.clone(), gate, &mut built).await?;
    }
    #[cfg(feature = "discord")]
    if let Some(d) = &cfg.channels.discord {
        discord::build(d, ingress.clone(), gate, &mut built).await?;
    }
    let _ = (cfg, &ingress, gate);
    Ok(built)
}

/// Checks the credentials of every configured platform channel.
pub async fn doctor(cfg: &Config) -> Vec<Check> {
    #[allow(unused_mut)]
    let mut checks = Vec::new();
    #[cfg(feature = "telegram")]
    if let Some(t) = &cfg.channels.telegram {
        checks.push(telegram::doctor(t).await);
    }
    #[cfg(feature = "slack")]
    if let Some(s) = &cfg.channels.slack {
        checks.push(slack::doctor(s).await);
    }
    #[cfg(feature = "discord")]
    if let Some(d) = &cfg.channels.discord {
        checks.push(discord::doctor(d).await);
    }
    let _ = cfg;
    checks
}
