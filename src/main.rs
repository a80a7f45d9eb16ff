//! The `butler` binary: installs the TLS crypto provider, then hands over to `butler::cli`.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    // With this crate mix, rustls needs its provider chosen before any TLS client is built.
    let _ = rustls::crypto::ring::default_provider().install_default();
    butler::cli::main().await
}
