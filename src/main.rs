//! The `butler` binary: sets glibc's allocator up for `serve` (before any thread exists), makes
//! everything it creates private to its user, installs the TLS crypto provider, then hands over
//! to `butler::cli` on a multi-threaded runtime.

use std::process::ExitCode;

fn main() -> ExitCode {
    // First, while this is the only thread: `serve` may start itself again with the allocator
    // settings that let memory go back after busy times (`cli::allocator`).
    butler::cli::allocator::tune();
    match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime.block_on(run()),
        Err(e) => {
            eprintln!("butler: could not start the async runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> ExitCode {
    // Files and folders Butler (and anything it starts) creates are its user's alone: the data
    // folder, the database, workspaces, uploads, backups, logs (0700 folders, 0600 files).
    butler::cli::private_files();
    // Nothing Butler starts may read its environment or memory through /proc.
    butler::cli::private_process();
    // With this crate mix, rustls needs its provider chosen before any TLS client is built.
    let _ = rustls::crypto::ring::default_provider().install_default();
    butler::cli::main().await
}
