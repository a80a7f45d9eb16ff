//! `[log]`: how Butler writes its logs (lines for people, or one JSON object per line for a log
//! shipper) and, in a build with the `otel` feature, where it sends its traces (OTLP over HTTP).
//!
//! Plain data: the subscriber, the exporter and the checks live in `crate::telemetry`; this
//! file must never touch the network.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// `text` (default) or `json`.
    pub format: LogFormat,
    /// Base URL of an OTLP/HTTP collector (e.g. `http://127.0.0.1:4318`); traces are posted to
    /// `<otlp_endpoint>/v1/traces`. Unset: no traces. Needs a build with the `otel` feature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub otlp_endpoint: Option<String>,
    /// The traces' `service.name`. Default `butler`.
    pub service_name: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self { format: LogFormat::Text, otlp_endpoint: None, service_name: "butler".into() }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines (coloured on a terminal).
    #[default]
    Text,
    /// One JSON object per line: time, level, target, message, fields and the current spans.
    Json,
}
