//! The rules of `[log]`: each problem names its key and what to do. Reads the config only.

use crate::config::{Config, Problems};

pub fn check_config(cfg: &Config, p: &mut Problems) {
    let log = &cfg.log;
    if let Some(url) = log.otlp_endpoint.as_deref() {
        let url = url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            p.add(
                "log.otlp_endpoint",
                "must be the http(s) base URL of an OTLP/HTTP collector, e.g. http://127.0.0.1:4318",
            );
        } else if !cfg!(feature = "otel") {
            p.add(
                "log.otlp_endpoint",
                "this butler was built without traces: build it with `cargo build --release --features otel`, or remove the key",
            );
        }
    }
    if log.service_name.trim().is_empty() {
        p.add("log.service_name", "must not be empty (the default is \"butler\")");
    }
}
