//! The `[skills]` section as Butler uses it: `~` expanded, the data dir's `skills/` folder, the
//! roots of the catalog in priority order, and the check that names the key.
//!
//! A configured folder that does not exist is a warning (it may be created later; the catalog
//! picks it up without a restart), one that is a file is an error. This must never create,
//! change or read anything inside the folders.

use super::catalog::{Root, Skills, Source};
use crate::config::{Config, Problems};
use std::path::{Path, PathBuf};

pub use crate::config::SkillsConfig;

/// `dir` with a leading `~` (alone or before `/`) replaced by `home`.
pub fn expand_home(dir: &str, home: Option<&Path>) -> PathBuf {
    match (dir, home) {
        ("~", Some(h)) => h.to_path_buf(),
        (d, Some(h)) if d.starts_with("~/") => h.join(&d[2..]),
        (d, _) => PathBuf::from(d),
    }
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from)
}

/// Butler's data dir: the folder that holds `[tools] workspace_dir` (default `data`).
pub fn data_dir(cfg: &Config) -> PathBuf {
    let ws = PathBuf::from(&cfg.tools.workspace_dir);
    match ws.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The folders skills are read from after the built-in ones: `<data dir>/skills`, then each
/// of `[skills] dirs` in order.
pub fn roots(cfg: &Config) -> Vec<Root> {
    let home = home();
    let mut out = vec![Root { source: Source::DataDir, path: data_dir(cfg).join("skills") }];
    for (i, d) in cfg.skills.dirs.iter().enumerate() {
        out.push(Root { source: Source::Dir(i), path: expand_home(d, home.as_deref()) });
    }
    out
}

/// The live catalog for `cfg`.
pub fn skills(cfg: &Config) -> Skills {
    Skills::new(roots(cfg))
}

/// The `[skills]` checks: each `dirs[i]` is a path (not empty, no `~user`), and not a file.
pub fn check_config(cfg: &Config, p: &mut Problems) {
    let home = home();
    for (i, d) in cfg.skills.dirs.iter().enumerate() {
        let key = format!("skills.dirs[{i}]");
        if d.trim().is_empty() {
            p.add(key, "is empty; give the path of a folder of skills, or remove the entry");
            continue;
        }
        if d.starts_with('~') && d != "~" && !d.starts_with("~/") {
            p.add(key, format!("`{d}`: only `~` and `~/...` (your own home) are expanded; write the full path"));
            continue;
        }
        if d.starts_with('~') && home.is_none() {
            p.add(key, format!("`{d}` starts with `~` but HOME is not set; write the full path"));
            continue;
        }
        let path = expand_home(d, home.as_deref());
        match std::fs::metadata(&path) {
            Ok(m) if !m.is_dir() => p.add(
                key,
                format!("`{}` is a file; give a folder whose subfolders each hold a SKILL.md", path.display()),
            ),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                tracing::warn!(key = %key, dir = %path.display(), "skills folder does not exist (yet); it is read once it does")
            }
            Err(e) => tracing::warn!(key = %key, dir = %path.display(), error = %e, "skills folder cannot be read"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_expansion() {
        let h = Path::new("/home/al");
        let cases = [
            ("~", Some(h), "/home/al"),
            ("~/notes/skills", Some(h), "/home/al/notes/skills"),
            ("~bob/x", Some(h), "~bob/x"),
            ("/srv/skills", Some(h), "/srv/skills"),
            ("rel/skills", Some(h), "rel/skills"),
            ("~/x", None, "~/x"),
        ];
        for (input, home, want) in cases {
            assert_eq!(expand_home(input, home), PathBuf::from(want), "{input}");
        }
    }

    #[test]
    fn data_dir_is_the_workspace_dirs_parent() {
        let cases = [("data/workspaces", "data"), ("/var/lib/butler/ws", "/var/lib/butler"), ("ws", ".")];
        for (ws, want) in cases {
            let mut cfg = Config::default();
            cfg.tools.workspace_dir = ws.into();
            assert_eq!(data_dir(&cfg), PathBuf::from(want), "{ws}");
        }
    }

    #[test]
    fn checks_name_the_key() {
        let tmp = std::env::temp_dir().join(format!("butler-skills-check-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        let file = tmp.join("file.txt");
        std::fs::write(&file, "x").unwrap();
        let dir = tmp.display().to_string();
        let missing = tmp.join("missing").display().to_string();
        let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
            (vec![dir.clone(), missing.clone()], vec![]),
            (vec![dir.clone(), file.display().to_string()], vec!["`skills.dirs[1]`", "is a file; give a folder"]),
            (vec!["".into()], vec!["`skills.dirs[0]`", "is empty"]),
            (vec!["~bob/skills".into()], vec!["`skills.dirs[0]`", "only `~` and `~/...`"]),
        ];
        let owners = crate::config::OwnerChecks { skills: check_config, ..crate::config::OwnerChecks::NONE };
        for (dirs, want) in cases {
            let mut cfg = Config::default();
            cfg.skills.dirs = dirs.clone();
            match (cfg.validate_with(&owners), want.is_empty()) {
                (Ok(()), true) => {}
                (Err(e), false) => {
                    let text = e.to_string();
                    for w in &want {
                        assert!(text.contains(w), "{dirs:?}: {text}");
                    }
                }
                (got, _) => panic!("{dirs:?}: got {got:?}, want {want:?}"),
            }
        }
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
