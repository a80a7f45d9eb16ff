//! Placeholder: the slack glue (replaced by the slack channel work).
use super::{BuildError, Built, Check};
use crate::config::SlackConfig;
use butler_channel::Ingress;
use std::sync::Arc;

pub async fn build(
    _cfg: &SlackConfig,
    _root: &crate::config::Config,
    _ingress: Arc<dyn Ingress>,
    _built: &mut Built,
) -> Result<(), BuildError> {
    Ok(())
}

pub async fn doctor(_cfg: &SlackConfig) -> Check {
    ("slack".into(), Err(("not built yet".into(), "".into())))
}
