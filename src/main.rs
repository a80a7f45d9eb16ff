//! The `butler` binary: makes everything it creates private to its user, installs the TLS
//! crypto provider, then hands over to `butler::cli`.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    // Files and folders Butler (and anything it starts) creates are its user's alone: the data
    // folder, the database, workspaces, uploads, backups, logs (0700 folders, 0600 files).
    butler::cli::private_files();
    // Nothing Butler starts may read its environment or memory through /proc.
    butler::cli::private_process();
    // With this crate mix, rustls needs its provider chosen before any TLS client is built.
    let _ = rustls::crypto::ring::default_provider().install_default();
    butler::cli::main().await
}
