//! The fuzz corpora as regression tests: every file of `fuzz/corpus/<target>/` (the kept,
//! minimized corpus) and `fuzz/regressions/<target>/` (inputs that once failed) goes through
//! its target's body, without libFuzzer. Also checks that `fuzz/targets.txt`, the bodies, the
//! `fuzz_targets/<name>.rs` files and `fuzz/Cargo.toml`'s binaries name the same targets.
//!
//! One test for all targets, run one input at a time: the media bodies share one runtime and
//! one file source, and every failing input is named before the test fails.

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("fuzz/").to_path_buf()
}

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

#[test]
fn the_targets_are_listed_once_everywhere() {
    let fuzz = fuzz_dir();
    let manifest = std::fs::read_to_string(fuzz.join("Cargo.toml")).expect("fuzz/Cargo.toml");
    let targets = butler_fuzz_targets::targets();
    assert!(targets.len() >= 20, "{} targets", targets.len());
    for t in &targets {
        assert!(butler_fuzz_targets::body(t.name).is_some(), "{}: no body", t.name);
        let file = fuzz.join("fuzz_targets").join(format!("{}.rs", t.name));
        let text = std::fs::read_to_string(&file).unwrap_or_else(|_| panic!("{} is missing", file.display()));
        assert!(text.contains(&format!("\"{}\"", t.name)), "{} runs another target", file.display());
        assert!(manifest.contains(&format!("name = \"{}\"", t.name)), "fuzz/Cargo.toml has no binary {}", t.name);
        assert!(t.max_len > 0 && t.timeout_secs > 0 && t.rss_mb >= 256, "{}: limits", t.name);
    }
    let listed = std::fs::read_dir(fuzz.join("fuzz_targets")).expect("fuzz/fuzz_targets").count();
    assert_eq!(listed, targets.len(), "fuzz_targets/ holds a file that targets.txt does not list");
}

#[test]
fn every_kept_input_passes() {
    let fuzz = fuzz_dir();
    let mut failed = Vec::new();
    let mut count = 0;
    for t in butler_fuzz_targets::targets() {
        let body = butler_fuzz_targets::body(t.name).expect("a body");
        let files = [inputs(&fuzz.join("corpus").join(t.name)), inputs(&fuzz.join("regressions").join(t.name))];
        for file in files.iter().flatten() {
            // A file gone since it was listed (a fuzzer at work on the same folder) is skipped.
            let data = match std::fs::read(file) {
                Ok(data) => data,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => panic!("{}: {e}", file.display()),
            };
            count += 1;
            if std::panic::catch_unwind(|| body(&data)).is_err() {
                failed.push(file.strip_prefix(&fuzz).unwrap_or(file).display().to_string());
            }
        }
    }
    let _ = std::fs::remove_dir_all(butler_fuzz_targets::harness::scratch_root());
    assert!(count > 0, "no corpus under {}", fuzz.display());
    assert!(failed.is_empty(), "{} of {count} kept fuzz inputs fail:\n{}", failed.len(), failed.join("\n"));
}
