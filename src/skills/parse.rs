//! One SKILL.md of the open Agent Skills format: YAML front matter between two `---` lines
//! (`name`, `description`, optional `allowed-tools`), then a Markdown body.
//!
//! The text may come from anyone who can write into a skills folder, so this must never panic
//! and never spend unbounded memory or time: the file and its front matter are capped before
//! the YAML parser sees them, and the parser runs with a small budget (depth, aliases, nodes).

use serde::Deserialize;

/// Longest `name`, in characters.
pub const MAX_NAME: usize = 64;
/// Longest `description`, in characters.
pub const MAX_DESCRIPTION: usize = 1024;
/// Largest SKILL.md read, in bytes.
pub const MAX_SKILL_BYTES: usize = 256 * 1024;
/// Largest front matter handed to the YAML parser, in bytes.
pub const MAX_FRONT_MATTER_BYTES: usize = 16 * 1024;
/// Most entries of `allowed-tools`.
pub const MAX_ALLOWED_TOOLS: usize = 128;

/// A valid SKILL.md.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    pub name: String,
    pub description: String,
    /// `allowed-tools`, when present: the tool names (or `*` globs) the skill may use.
    pub allowed_tools: Option<Vec<String>>,
    /// The Markdown after the front matter, trimmed.
    pub body: String,
}

/// Why a SKILL.md is not a valid skill; each says what to change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("the file is {bytes} bytes; a SKILL.md may have at most {max}")]
    TooLarge { bytes: usize, max: usize },
    #[error("the file is not UTF-8 text")]
    NotUtf8,
    #[error("no front matter: the file must start with a line `---`, then YAML with `name` and `description`, then a line `---`")]
    NoFrontMatter,
    #[error("the front matter is not closed: add a line `---` after the YAML")]
    Unclosed,
    #[error("the front matter is {bytes} bytes; at most {max} are allowed")]
    FrontMatterTooLarge { bytes: usize, max: usize },
    #[error("the front matter is not valid YAML: {0}")]
    Yaml(String),
    #[error("`name` is missing: add `name: <the folder's name>`")]
    MissingName,
    #[error("`name` {name:?} {why}")]
    BadName { name: String, why: &'static str },
    #[error("`name` {name:?} differs from its folder {folder:?}: rename one so they are equal")]
    NameMismatch { name: String, folder: String },
    #[error("`description` is missing: say in a sentence or two what the skill does and when to use it")]
    MissingDescription,
    #[error("`description` is {chars} characters long; at most {max} are allowed")]
    DescriptionTooLong { chars: usize, max: usize },
    #[error("`allowed-tools`: {0}")]
    BadAllowedTools(String),
}

/// The front matter keys Butler reads. Other keys of the format (`license`, `compatibility`,
/// `metadata`, ...) are accepted and ignored.
#[derive(Deserialize)]
struct Front {
    name: Option<String>,
    description: Option<String>,
    #[serde(rename = "allowed-tools")]
    allowed_tools: Option<AllowedTools>,
}

/// `allowed-tools: now recall` (space- or comma-separated) or a YAML list.
#[derive(Deserialize)]
#[serde(untagged)]
enum AllowedTools {
    Line(String),
    List(Vec<String>),
}

/// Parses the bytes of a SKILL.md found in folder `folder` (the name must equal it).
pub fn parse_bytes(bytes: &[u8], folder: &str) -> Result<Parsed, ParseError> {
    if bytes.len() > MAX_SKILL_BYTES {
        return Err(ParseError::TooLarge { bytes: bytes.len(), max: MAX_SKILL_BYTES });
    }
    let text = std::str::from_utf8(bytes).map_err(|_| ParseError::NotUtf8)?;
    parse_skill(text, folder)
}

/// Parses the text of a SKILL.md found in folder `folder` (the name must equal it).
pub fn parse_skill(text: &str, folder: &str) -> Result<Parsed, ParseError> {
    if text.len() > MAX_SKILL_BYTES {
        return Err(ParseError::TooLarge { bytes: text.len(), max: MAX_SKILL_BYTES });
    }
    let (yaml, body) = split(text)?;
    if yaml.len() > MAX_FRONT_MATTER_BYTES {
        return Err(ParseError::FrontMatterTooLarge { bytes: yaml.len(), max: MAX_FRONT_MATTER_BYTES });
    }
    if yaml.trim().is_empty() {
        return Err(ParseError::MissingName);
    }
    let front: Front = serde_saphyr::from_str_with_options(yaml, options()).map_err(|e| yaml_error(&e))?;
    let name = front.name.map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).ok_or(ParseError::MissingName)?;
    check_name(&name)?;
    if name != folder {
        return Err(ParseError::NameMismatch { name, folder: shorten(folder, 80) });
    }
    let description = front
        .description
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .ok_or(ParseError::MissingDescription)?;
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION {
        return Err(ParseError::DescriptionTooLong { chars, max: MAX_DESCRIPTION });
    }
    let allowed_tools = front.allowed_tools.map(allowed_list).transpose()?;
    Ok(Parsed { name, description, allowed_tools, body: body.trim().to_string() })
}

/// Why `name` is not a valid skill name, if it is not: 1 to 64 of a-z, 0-9 and `-`, not at
/// either end and never two in a row.
pub fn check_name(name: &str) -> Result<(), ParseError> {
    let bad = |why| Err(ParseError::BadName { name: shorten(name, 80), why });
    if name.is_empty() {
        return Err(ParseError::MissingName);
    }
    if name.chars().count() > MAX_NAME {
        return bad("is longer than 64 characters");
    }
    if !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
        return bad("may hold only a-z, 0-9 and `-`");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return bad("must not start or end with `-`");
    }
    if name.contains("--") {
        return bad("must not contain `--`");
    }
    Ok(())
}

/// The front matter (between the opening and the closing `---` line) and the body after it.
fn split(text: &str) -> Result<(&str, &str), ParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err(ParseError::NoFrontMatter);
    }
    let start = first.len();
    let mut at = start;
    for line in lines {
        let bare = line.trim_end();
        if bare == "---" || bare == "..." {
            return Ok((&text[start..at], &text[at + line.len()..]));
        }
        at += line.len();
    }
    Err(ParseError::Unclosed)
}

/// A small budget: a skill's front matter is a handful of short keys, so anything deep, wide or
/// full of aliases is refused long before it could cost real memory or time.
fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_events: 20_000,
            max_aliases: 100,
            max_anchors: 100,
            max_depth: 16,
            max_nodes: 10_000,
            max_documents: 1,
            max_total_scalar_bytes: MAX_FRONT_MATTER_BYTES,
            max_merge_keys: 16,
            max_inclusion_depth: 0,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: 1_000,
            max_replay_stack_depth: 8,
            max_alias_expansions_per_anchor: 20,
        },
    }
}

/// The parser's message on one line and cut short (it may quote the input).
fn yaml_error(e: &serde_saphyr::Error) -> ParseError {
    let one_line: String = e.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
    ParseError::Yaml(shorten(&one_line, 300))
}

fn allowed_list(v: AllowedTools) -> Result<Vec<String>, ParseError> {
    let items: Vec<String> = match v {
        AllowedTools::Line(s) => s.split(|c: char| c.is_whitespace() || c == ',').map(str::to_string).collect(),
        AllowedTools::List(v) => v.into_iter().map(|s| s.trim().to_string()).collect(),
    };
    let items: Vec<String> = items.into_iter().filter(|s| !s.is_empty()).collect();
    if items.len() > MAX_ALLOWED_TOOLS {
        return Err(ParseError::BadAllowedTools(format!("{} entries; at most {MAX_ALLOWED_TOOLS}", items.len())));
    }
    for item in &items {
        let ok = item.chars().count() <= 64
            && item.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '*');
        if !ok {
            return Err(ParseError::BadAllowedTools(format!(
                "{:?} is not a tool name (letters, digits, `_`, `-`, at most 64, `*` as a wildcard)",
                shorten(item, 80)
            )));
        }
    }
    Ok(items)
}

/// At most `max` characters of `s`, with `…` when cut.
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() > max {
        format!("{}…", s.chars().take(max).collect::<String>())
    } else {
        s.to_string()
    }
}

#[cfg(test)]
#[path = "tests/parse.rs"]
mod tests;
