//! Placeholder: the telegram glue (replaced by the telegram channel work).
use super::{BuildError, Built, Check};
use crate::config::TelegramConfig;
use butler_channel::Ingress;
use std::sync::Arc;

pub async fn build(_cfg: &TelegramConfig, _ingress: Arc<dyn Ingress>, _built: &mut Built) -> Result<(), BuildError> {
    Ok(())
}

pub async fn doctor(_cfg: &TelegramConfig) -> Check {
    ("telegram".into(), Err(("not built yet".into(), "".into())))
}
