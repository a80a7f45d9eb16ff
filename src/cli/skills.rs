//! `butler skills list` and `butler skills show NAME`: the skills the agent has, where each
//! comes from, and the files that were skipped and why; plus the `butler doctor` lines for each
//! skill source.
//!
//! It only reads the skill folders (through `crate::skills`); it must never change them.

use super::exit::fail;
use crate::config::Config;
use crate::skills::{Catalog, DirReport, DirState, Source};
use clap::Subcommand;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum SkillsCommand {
    /// Every skill (name, source, description), in name order; skipped files on stderr
    List,
    /// One skill: where it comes from, its front matter, its other files and its instructions
    Show {
        /// The skill's name
        name: String,
    },
}

pub fn run(cfg: Config, command: SkillsCommand) -> Result<ExitCode, ExitCode> {
    let skills = crate::skills::skills(&cfg);
    let catalog = skills.current();
    match command {
        SkillsCommand::List => {
            let width = catalog.iter().map(|s| s.name.len()).max().unwrap_or(4).max(4);
            println!("{:<width$}  {:<16}  DESCRIPTION", "NAME", "SOURCE");
            for s in catalog.iter() {
                let source = s.source.to_string();
                println!("{:<width$}  {:<16}  {}", s.name, source, one_line(&s.description, 100));
            }
            print_skipped(&catalog);
            Ok(ExitCode::SUCCESS)
        }
        SkillsCommand::Show { name } => {
            let Some(s) = catalog.get(&name) else {
                print_skipped(&catalog);
                return Err(fail(1, format!("no skill `{name}`; `butler skills list` shows the skills")));
            };
            println!("name: {}", s.name);
            println!("source: {} ({})", s.source, s.origin());
            println!("description: {}", one_line(&s.description, usize::MAX));
            match crate::skills::allowed_tools(s) {
                Some(list) => println!("allowed-tools: {}", list.join(" ")),
                None => println!("allowed-tools: all (no narrowing)"),
            }
            let files = s.dir.as_deref().map(crate::skills::tool::list_files).unwrap_or_default();
            println!("files: {}", if files.is_empty() { "none".to_string() } else { files.join(", ") });
            println!("---");
            println!("{}", s.body);
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn print_skipped(catalog: &Catalog) {
    for r in catalog.reports() {
        if let DirState::Scanned { skipped, .. } = &r.state {
            for s in skipped {
                eprintln!("skipped {}: {}", s.file.display(), s.problem);
            }
        }
    }
}

/// `s` on one line, at most `max` characters.
fn one_line(s: &str, max: usize) -> String {
    let line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > max {
        format!("{}…", line.chars().take(max).collect::<String>())
    } else {
        line
    }
}

/// How bad a doctor line is: skills never fail the doctor (Butler runs without them).
pub(super) enum Level {
    Ok,
    Warn,
}

/// One `butler doctor` line per skill source: what it is, the summary, and detail lines (the
/// skipped files and why).
pub(super) fn doctor_lines(cfg: &Config) -> Vec<(Level, String, String, Vec<String>)> {
    let catalog = crate::skills::skills(cfg).current();
    catalog.reports().iter().map(|r| doctor_line(&catalog, r)).collect()
}

fn doctor_line(catalog: &Catalog, r: &DirReport) -> (Level, String, String, Vec<String>) {
    let what = match r.source {
        Source::Builtin => "skills (built-in)".to_string(),
        source => format!("skills ({source} {})", r.path.display()),
    };
    match &r.state {
        DirState::Missing if r.source == Source::DataDir => {
            (Level::Ok, what, "no folder (create it to add skills)".into(), Vec::new())
        }
        DirState::Missing => {
            (Level::Warn, what, "does not exist".into(), vec!["create it, or remove it from [skills] dirs".into()])
        }
        DirState::Unusable(why) => (Level::Warn, what, why.clone(), vec!["fix the path in [skills] dirs".into()]),
        DirState::Scanned { found, skipped } => {
            let shadowed: Vec<String> = found
                .iter()
                .filter(|n| catalog.get(n).is_some_and(|s| s.source != r.source))
                .map(|n| format!("{n} (overridden)"))
                .collect();
            let names: Vec<String> = found
                .iter()
                .filter(|n| catalog.get(n).is_some_and(|s| s.source == r.source))
                .cloned()
                .chain(shadowed)
                .collect();
            let mut summary = format!("{} skill(s)", found.len());
            if !names.is_empty() {
                summary.push_str(&format!(": {}", names.join(", ")));
            }
            if skipped.is_empty() {
                return (Level::Ok, what, summary, Vec::new());
            }
            summary.push_str(&format!("; {} skipped", skipped.len()));
            let details = skipped.iter().map(|s| format!("skipped {}: {}", s.file.display(), s.problem)).collect();
            (Level::Warn, what, summary, details)
        }
    }
}
