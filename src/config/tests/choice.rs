//! Which config file is read and why, and which other candidate is then ignored: `--config`,
//! `BUTLER_CONFIG`, the working directory's `config/butler.toml`, the user's config file, none.

use crate::config::{load_from, Chosen, Env};
use std::path::{Path, PathBuf};

/// Files present: (in the working dir, the user's, one named elsewhere).
fn setup(here: bool, user: bool) -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let (cwd, home) = (root.path().join("cwd"), root.path().join("home"));
    let local = cwd.join("config/butler.toml");
    let mine = home.join(".config/butler/butler.toml");
    let named = root.path().join("named.toml");
    for (path, on) in [(&local, here), (&mine, user), (&named, true)] {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        if on {
            std::fs::write(path, "").unwrap();
        }
    }
    (root, cwd, home, named)
}

#[test]
fn the_chosen_file_says_why_and_names_the_one_it_ignores() {
    // (--config, BUTLER_CONFIG, working-dir file, user file) -> (read, why, ignored)
    type Given = (bool, bool, bool, bool);
    type Want = (Option<&'static str>, Chosen, Option<&'static str>);
    let cases: &[(Given, Want)] = &[
        ((true, false, true, true), (Some("named"), Chosen::Flag, Some("local"))),
        ((false, true, false, true), (Some("named"), Chosen::EnvVar, Some("mine"))),
        ((false, false, true, true), (Some("local"), Chosen::WorkingDir, Some("mine"))),
        ((false, false, true, false), (Some("local"), Chosen::WorkingDir, None)),
        ((false, false, false, true), (Some("mine"), Chosen::UserFile, None)),
        ((false, false, false, false), (None, Chosen::NoFile, None)),
    ];
    for ((flag, var, here, user), (read, why, ignored)) in cases {
        let (_root, cwd, home, named) = setup(*here, *user);
        let name = |p: &Option<PathBuf>| -> Option<&'static str> {
            let p = p.as_deref()?;
            Some(if p.ends_with("named.toml") {
                "named"
            } else if p.starts_with(&home) {
                "mine"
            } else {
                "local"
            })
        };
        let mut vars = vec![("HOME".to_string(), home.display().to_string())];
        if *var {
            vars.push(("BUTLER_CONFIG".into(), named.display().to_string()));
        }
        let env = Env::from_pairs(vars);
        let explicit: Option<&Path> = flag.then_some(named.as_path());
        let loaded = load_from(explicit, &env, &cwd).expect("loads");
        let case = (flag, var, here, user);
        assert_eq!(name(&loaded.source), *read, "{case:?}");
        assert_eq!(loaded.chosen, *why, "{case:?}");
        assert_eq!(name(&loaded.ignored), *ignored, "{case:?}");
        assert!(!why.describe().is_empty());
    }
}
