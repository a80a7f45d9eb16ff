//! What the model is told about skills: a section of the system prompt with each skill's name
//! and description (never a body: bodies are loaded by the `skill` tool when needed), and the
//! tool narrowing of a skill's `allowed-tools`.
//!
//! The section must be byte-stable for the same catalog (sorted by name, one line per skill),
//! so a session's system prompt stays cacheable; it is empty when there are no skills.

use super::catalog::{Catalog, Skill};

/// The name of the tool that loads skills; always usable, whatever a skill allows.
pub const SKILL_TOOL: &str = "skill";

/// The system prompt section for `catalog`: names and descriptions in name order, or `""`.
pub fn prompt_section(catalog: &Catalog) -> String {
    if catalog.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "## Skills\n\
         Skills are instructions for particular tasks. When a request matches a skill below, first call the \
         `skill` tool with its name and follow what it returns; it may list more files of the skill, each \
         readable with `skill` and `file`.\n",
    );
    for skill in catalog.iter() {
        let description = skill.description.split_whitespace().collect::<Vec<_>>().join(" ");
        out.push_str(&format!("- `{}`: {}\n", skill.name, description));
    }
    out
}

/// The tools `skill` narrows to while it is in use (its `allowed-tools`), or `None` for no
/// narrowing. The `skill` tool itself is always included.
pub fn allowed_tools(skill: &Skill) -> Option<Vec<String>> {
    let mut list = skill.allowed_tools.clone()?;
    if !list.iter().any(|t| t == SKILL_TOOL) {
        list.push(SKILL_TOOL.to_string());
    }
    Some(list)
}

/// Whether tool `name` is usable under `allowed` (names, or globs where `*` matches any run of
/// characters). `skill` always is.
pub fn permits(allowed: &[String], name: &str) -> bool {
    name == SKILL_TOOL || allowed.iter().any(|pattern| glob(pattern.as_bytes(), name.as_bytes()))
}

/// `*`-only glob match, iterative (no backtracking blow-up).
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        let cases = [
            ("now", "now", true),
            ("now", "nowhere", false),
            ("files__*", "files__read", true),
            ("files__*", "file_read", false),
            ("*", "anything", true),
            ("*_read", "file_read", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("", "x", false),
        ];
        for (pattern, name, want) in cases {
            assert_eq!(permits(&[pattern.to_string()], name), want, "{pattern} {name}");
        }
        assert!(permits(&[], "skill"), "the skill tool stays usable");
        assert!(!permits(&[], "now"));
    }
}
