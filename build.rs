//! How the `butler` binary is linked: where its code lies in the file, so that an idle process
//! keeps few of its pages. It must never change what the program does, and never fail a build
//! on a toolchain that cannot do it (it then links as Cargo would).
//!
//! - Relative relocations packed (`-z pack-relative-relocs`): the table the loader reads once
//!   at start shrinks from about 3 MiB to 50 KiB. The binary then needs glibc 2.36 or later
//!   where it runs (Debian 12, Ubuntu 22.10, RHEL 10).
//! - The functions that run at start-up, in the idle timers and in a turn placed together
//!   (`--symbol-ordering-file`, written by `cargo bench --bench gate` with
//!   BENCH_GATE_ORDER=benches/hot.order): what runs lies in about 5 MiB instead of being spread
//!   over the 80 MiB of code, so an idle process maps far fewer of its pages.
//!
//! Both are asked of the LLVM linker Rust uses by default on x86-64 Linux since 1.90, release
//! builds only. With an older Rust, another target, a linker of one's own (`RUSTFLAGS` or
//! `CARGO_TARGET_<triple>_LINKER`) or `BUTLER_PLAIN_LINK=1` the binary links as Cargo would. A
//! symbol the file names that the build does not have (after a change of code, features or
//! compiler) is skipped: only where that function lies changes.

use std::process::Command;

fn main() {
    // Only an optimised build reads the order file: a debug build must not rebuild the crate
    // when it changes (cargo reruns a build script on the files it names, in every profile).
    if var("PROFILE") == "release" {
        println!("cargo:rerun-if-changed=benches/hot.order");
    }
    println!("cargo:rerun-if-env-changed=BUTLER_PLAIN_LINK");
    // sqlx's `migrate!` embeds the migrations: a changed one rebuilds the crate.
    println!("cargo:rerun-if-changed=migrations");
    if default_lld() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
        let order = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("benches/hot.order");
        if order.exists() {
            println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}", order.display());
            println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
        }
    }
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}

/// Whether this is a release build for x86-64 Linux (glibc) that Rust links with its own LLVM
/// linker, as it does by default from 1.90 on, and nobody asked for another linker.
fn default_lld() -> bool {
    let target = var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu"
        && var("CARGO_CFG_TARGET_ARCH") == "x86_64";
    let own_linker = var("CARGO_ENCODED_RUSTFLAGS").contains("link")
        || std::env::vars().any(|(k, _)| k.starts_with("CARGO_TARGET_") && k.ends_with("_LINKER"))
        || var("BUTLER_PLAIN_LINK") == "1";
    target && !own_linker && var("PROFILE") == "release" && rustc_minor() >= 90
}

/// The minor version of the compiler Cargo runs (`1.95.0` -> 95); 0 when it cannot be read.
fn rustc_minor() -> u32 {
    let out = Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into())).arg("-V").output();
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    text.split_whitespace().nth(1).and_then(|v| v.split('.').nth(1)).and_then(|m| m.parse().ok()).unwrap_or(0)
}
