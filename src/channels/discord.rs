//! Placeholder: the discord glue (replaced by the discord channel work).
use super::{BuildError, Built, Check};
use crate::config::DiscordConfig;
use butler_channel::Ingress;
use std::sync::Arc;

pub async fn build(_cfg: &DiscordConfig, _ingress: Arc<dyn Ingress>, _built: &mut Built) -> Result<(), BuildError> {
    Ok(())
}

pub async fn doctor(_cfg: &DiscordConfig) -> Check {
    ("discord".into(), Err(("not built yet".into(), "".into())))
}
