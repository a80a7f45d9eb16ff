//! `[skills]`: the extra folders Butler looks in for skills, after the built-in skills and the
//! data dir's `skills/`. Plain data: discovery, `~` expansion and the checks live in
//! `crate::skills`; this file must never touch the disk.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SkillsConfig {
    /// Folders of skills (each skill a subfolder with a `SKILL.md`), in priority order: a skill
    /// in a later folder replaces one of the same name from an earlier source. `~` is the home
    /// directory.
    pub dirs: Vec<String>,
}
