//! Unit tests of configuration loading, validation and masked printing: tables of input ->
//! expected result. They must never read or change the process environment or working
//! directory (tests run in parallel): the environment is an [`Env`] built per case and files live
//! in temporary directories.

mod channels;
mod choice;
mod example;
mod parse;
mod tiers;
mod validate;

use super::{load_from, parse_str, select_file, Config, ConfigError, Env, FileFrom};
use std::path::{Path, PathBuf};

const FILE: &str = "config/butler.toml";

/// An environment written in a test table.
type Vars = &'static [(&'static str, &'static str)];

fn env(pairs: &[(&str, &str)]) -> Env {
    Env::from_pairs(pairs.iter().copied())
}

fn parse(text: &str, pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
    parse_str(text, FILE, &env(pairs))
}

/// The error message of a case that must fail.
fn parse_err(text: &str, pairs: &[(&str, &str)]) -> String {
    match parse(text, pairs) {
        Ok(_) => panic!("expected an error for {text:?} with {pairs:?}"),
        Err(e) => e.to_string(),
    }
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn file_selection_order() {
    // (--config, BUTLER_CONFIG, config/butler.toml exists, expected file or error fragments)
    type Expect = Result<Option<&'static str>, &'static [&'static str]>;
    let cases: &[(Option<&str>, Option<&str>, bool, Expect)] = &[
        (Some("a.toml"), Some("b.toml"), true, Ok(Some("a.toml"))),
        (None, Some("b.toml"), true, Ok(Some("b.toml"))),
        (None, None, true, Ok(Some("config/butler.toml"))),
        (None, Some(""), true, Ok(Some("config/butler.toml"))),
        (None, None, false, Ok(None)),
        (Some("missing.toml"), Some("b.toml"), true, Err(&["missing.toml", "--config", "does not exist"])),
        (None, Some("gone.toml"), true, Err(&["gone.toml", "BUTLER_CONFIG", "does not exist"])),
    ];
    for (explicit, var, default_exists, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.toml", "[agent]\nname = \"A\"\n");
        write(dir.path(), "b.toml", "[agent]\nname = \"B\"\n");
        if *default_exists {
            write(dir.path(), "config/butler.toml", "[agent]\nname = \"Default\"\n");
        }
        let vars: Vec<(&str, &str)> = var.iter().map(|v| ("BUTLER_CONFIG", *v)).collect();
        let got = select_file(explicit.map(Path::new), &env(&vars), dir.path());
        let case = format!("--config {explicit:?}, BUTLER_CONFIG {var:?}, default {default_exists}");
        match (got, expected) {
            (Ok(got), Ok(want)) => assert_eq!(got, want.map(|w| dir.path().join(w)), "{case}"),
            (Err(e), Err(fragments)) => {
                let msg = e.to_string();
                for f in *fragments {
                    assert!(msg.contains(f), "{case}: {msg:?} lacks {f:?}");
                }
            }
            (got, want) => panic!("{case}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn load_from_reads_the_selected_file_and_reports_its_source() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "config/butler.toml", "[agent]\nname = \"Default\"\n");
    write(dir.path(), "other.toml", "[agent]\nname = \"Other\"\n");
    let cases: &[(Option<&str>, Vars, &str, Option<&str>)] = &[
        (None, &[], "Default", Some("config/butler.toml")),
        (Some("other.toml"), &[], "Other", Some("other.toml")),
        (None, &[("BUTLER_CONFIG", "other.toml")], "Other", Some("other.toml")),
        (None, &[("BUTLER_AGENT__NAME", "Env")], "Env", Some("config/butler.toml")),
    ];
    for (explicit, vars, name, source) in cases {
        let loaded = load_from(explicit.map(Path::new), &env(vars), dir.path()).unwrap();
        assert_eq!(loaded.config.agent.name, *name);
        assert_eq!(loaded.source, source.map(|s| dir.path().join(s)));
    }
}

#[test]
fn load_from_without_a_file_uses_the_embedded_default_and_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load_from(None, &env(&[("OPENAI_API_KEY", "sk-test")]), dir.path()).unwrap();
    assert_eq!(loaded.source, None);
    assert_eq!(loaded.config.server.listen, "127.0.0.1:8080");
    assert_eq!(loaded.config.database.url.expose(), "sqlite://data/butler.db");
    assert_eq!(loaded.config.llm.model, "gpt-4o-mini");
}

#[test]
fn load_from_validates_and_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "config/butler.toml", "[server]\nlisten = \"0.0.0.0:8080\"\n");
    let err = load_from(None, &env(&[]), dir.path()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ConfigError::Invalid { .. }), "{msg}");
    assert!(msg.contains(&dir.path().join(FILE).display().to_string()), "{msg}");
    assert!(msg.contains("channels.web.token"), "{msg}");

    let err = load_from(None, &env(&[("BUTLER_SERVER__LISTEN", "0.0.0.0:8080")]), &dir.path().join("none"))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with(super::NO_FILE), "{err}");
}

#[test]
fn unreadable_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("adir")).unwrap();
    let err = load_from(Some(Path::new("adir")), &env(&[]), dir.path()).unwrap_err();
    assert!(matches!(err, ConfigError::Read { .. }));
    assert!(err.to_string().contains("adir"), "{err}");
}

#[test]
fn not_found_error_says_where_the_path_came_from() {
    let err = ConfigError::NotFound { path: PathBuf::from("x.toml"), from: FileFrom::EnvVar };
    assert_eq!(
        err.to_string(),
        "config file x.toml (from BUTLER_CONFIG) does not exist; fix the path, or unset BUTLER_CONFIG \
         to use config/butler.toml or the built-in defaults"
    );
}

#[test]
fn env_debug_shows_names_but_never_values() {
    let e = env(&[("OPENAI_API_KEY", "sk-very-secret")]);
    let shown = format!("{e:?}");
    assert!(shown.contains("OPENAI_API_KEY") && !shown.contains("sk-very-secret"), "{shown}");
}
