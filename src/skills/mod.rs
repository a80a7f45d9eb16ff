//! Skills in the open Agent Skills format: a folder with a `SKILL.md` (YAML front matter with
//! `name`, `description` and optional `allowed-tools`, then Markdown instructions).
//!
//! Sources, lowest priority first: the built-in skills embedded in the binary
//! (`builtin/<name>/SKILL.md`), `<data dir>/skills`, then `[skills] dirs` in order; a later
//! source replaces a skill of the same name. Only names and descriptions go into the system
//! prompt ([`prompt_section`]); the `skill` tool ([`SkillTool`]) loads a body when the model
//! needs it. This module must never run anything from a skill folder, never write to one, and
//! never let a hostile SKILL.md crash or stall Butler: a bad file is skipped with a warning.

pub mod catalog;
pub mod config;
pub mod parse;
pub mod prompt;
pub mod tool;

pub use catalog::{Catalog, DirReport, DirState, Root, Skill, Skills, Skipped, Source};
pub use config::{check_config, data_dir, expand_home, roots, skills, SkillsConfig};
pub use parse::{check_name, parse_skill, ParseError, Parsed};
pub use prompt::{allowed_tools, permits, prompt_section, SKILL_TOOL};
pub use tool::SkillTool;
