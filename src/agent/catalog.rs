//! Many tools kept cheap: when the schemas of a turn's tools would exceed `[mcp]
//! max_schema_tokens`, the turn offers the built-in tools in full plus a small `tool_search`
//! tool; the other tools (the MCP servers') are sent in full only once the model has found them
//! with `tool_search`, or has called one by name, and then for the rest of the turn.
//!
//! This must never make a tool callable that the turn does not have, nor bypass the permission
//! policy or a skill's narrowing: it only decides which schemas a request carries. It never
//! touches the system prompt. A turn resumed after an approval or a crash unlocks the same
//! tools again from its own transcript.

use super::narrow::Narrowing;
use crate::llm::{ToolCall, ToolDef};
use crate::store::{NewMessage, Role};
use crate::tools::{parse_args, Tool, ToolCtx, ToolError, ToolSource, ToolSpec, Tools};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// The name of the search tool.
pub(super) const SEARCH_TOOL: &str = "tool_search";
/// At most this many tools per search.
const MAX_HITS: usize = 10;
/// A description in a search result is cut to this many characters.
const LINE_CHARS: usize = 120;

/// Estimated tokens of tool definitions (about four characters a token, as the request estimate).
pub(super) fn schema_tokens(defs: &[ToolDef]) -> usize {
    defs.iter().map(ToolDef::chars).sum::<usize>() / 4
}

/// A tool the model can find: its name and its description's first line.
#[derive(Clone, Debug)]
struct Entry {
    name: String,
    line: String,
}

/// The lowercase words of `text` (letters and digits; `_`, `-` and the rest separate).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// The entries matching `query`, best first (ties in name order): a query word (a number, or two
/// letters or more) equal to a word of the name scores 3, of the description 2, a prefix (three letters
/// or more) of either 1.
fn search<'a>(entries: &'a [Entry], query: &str) -> Vec<&'a Entry> {
    let mut wanted: Vec<String> =
        words(query).into_iter().filter(|w| w.chars().count() >= 2 || w.chars().all(|c| c.is_ascii_digit())).collect();
    wanted.sort();
    wanted.dedup();
    let mut scored: Vec<(usize, &Entry)> = entries
        .iter()
        .map(|e| {
            let (name, line) = (words(&e.name), words(&e.line));
            let score = wanted
                .iter()
                .map(|w| {
                    let prefix =
                        |v: &Vec<String>| w.chars().count() >= 3 && v.iter().any(|x| x.starts_with(w.as_str()));
                    if name.contains(w) {
                        3
                    } else if line.contains(w) {
                        2
                    } else if prefix(&name) || prefix(&line) {
                        1
                    } else {
                        0
                    }
                })
                .sum::<usize>();
            (score, e)
        })
        .filter(|(score, _)| *score > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    scored.into_iter().take(MAX_HITS).map(|(_, e)| e).collect()
}

/// The names of the tools a turn may share with a helper: all but its `tool_search`.
pub(super) fn shareable(tools: &Tools) -> Vec<String> {
    tools.names().into_iter().filter(|n| *n != SEARCH_TOOL).map(String::from).collect()
}

/// A helper's share of its parent's tools, split as a turn's are: the parent agent's own tools
/// (`builtin`) are always offered; the rest (the MCP servers') become the helper's tool source,
/// so a helper given many of them gets a `tool_search` of its own. The parent's `tool_search` is
/// never passed on: it searches and unlocks in the parent's catalog.
pub(super) fn child_tools(builtin: &Tools, share: &Tools) -> (Tools, Option<Arc<dyn ToolSource>>) {
    let names: Vec<&str> = share.names().into_iter().filter(|n| *n != SEARCH_TOOL).collect();
    let own: Vec<String> = names.iter().filter(|n| builtin.get(n).is_some()).map(|n| n.to_string()).collect();
    let found: Vec<Arc<dyn Tool>> =
        names.iter().filter(|n| builtin.get(n).is_none()).filter_map(|n| share.get(n).cloned()).collect();
    let source = (!found.is_empty()).then(|| Arc::new(Found(found)) as Arc<dyn ToolSource>);
    (share.only(&own), source)
}

/// The fixed tools a helper was given beyond its parent agent's own.
struct Found(Vec<Arc<dyn Tool>>);

impl ToolSource for Found {
    fn tools(&self, reserved: &BTreeSet<String>) -> Vec<Arc<dyn Tool>> {
        self.0.iter().filter(|t| !reserved.contains(&t.spec().name)).cloned().collect()
    }
}

/// The searchable tools of one turn and the ones unlocked so far.
#[derive(Clone)]
pub(super) struct Catalog {
    /// Always sent in full: the built-ins and `tool_search`.
    always: Arc<BTreeSet<String>>,
    entries: Arc<[Entry]>,
    unlocked: Arc<Mutex<BTreeSet<String>>>,
}

impl Catalog {
    /// When the schemas of `tools` exceed `budget` tokens: adds `tool_search` to `tools` and
    /// returns the catalog of the tools not in `builtin`. `None` (and `tools` unchanged) when
    /// everything fits or nothing is searchable.
    pub(super) fn install(builtin: &Tools, tools: &mut Tools, budget: usize) -> Option<Catalog> {
        let defs = tools.defs();
        // Cheap checks first: this runs at the start of every turn.
        if defs.len() == builtin.names().len() || tools.get(SEARCH_TOOL).is_some() {
            return None;
        }
        let tokens = schema_tokens(&defs);
        if tokens <= budget {
            return None;
        }
        let always: BTreeSet<String> =
            builtin.names().into_iter().map(String::from).chain([SEARCH_TOOL.to_string()]).collect();
        let entries: Arc<[Entry]> = defs
            .iter()
            .filter(|d| !always.contains(&d.name))
            .map(|d| {
                let first = d.description.lines().next().unwrap_or("").trim();
                let mut line: String = first.chars().take(LINE_CHARS).collect();
                if first.chars().count() > LINE_CHARS {
                    line.push('…');
                }
                Entry { name: d.name.clone(), line }
            })
            .collect();
        if entries.is_empty() {
            return None;
        }
        tracing::info!(tokens, budget, searchable = entries.len(), "tool schemas over budget: offering tool_search");
        let catalog = Catalog { always: Arc::new(always), entries, unlocked: Arc::default() };
        tools.add(Arc::new(ToolSearch::new(catalog.clone())));
        Some(catalog)
    }

    fn unlock<'a>(&self, names: impl IntoIterator<Item = &'a str>) {
        let mut unlocked = self.unlocked.lock().unwrap_or_else(|e| e.into_inner());
        for name in names {
            if self.entries.iter().any(|e| e.name == name) {
                unlocked.insert(name.to_string());
            }
        }
    }

    /// Takes in calls the model made: a searchable tool called by name is unlocked directly.
    fn called(&self, calls: &[ToolCall]) {
        self.unlock(calls.iter().map(|c| c.name.as_str()));
    }

    /// Unlocks again what the turn in `history` (from its last user message) unlocked before.
    pub(super) fn resume(&self, history: &[NewMessage]) {
        let start = history.iter().rposition(|m| m.role() == Role::User).unwrap_or(history.len());
        for m in history[start..].iter().filter(|m| m.role() == Role::Assistant) {
            self.called(&m.tool_calls);
            for call in m.tool_calls.iter().filter(|c| c.name == SEARCH_TOOL) {
                let args: Value = serde_json::from_str(&call.arguments).unwrap_or_default();
                let query = args.get("query").and_then(Value::as_str).unwrap_or("");
                let hits: Vec<String> = search(&self.entries, query).into_iter().map(|e| e.name.clone()).collect();
                self.unlock(hits.iter().map(String::as_str));
            }
        }
    }

    /// After a tool round (or with no calls at a turn's start): unlocks the searchable tools
    /// called by name and returns what the rest of the turn offers (this catalog's choice,
    /// narrowed by the skills in use).
    pub(super) fn offer(&self, narrowing: &Narrowing, tools: &Tools, calls: &[ToolCall]) -> Arc<[ToolDef]> {
        self.called(calls);
        narrowing.offered(&self.offered(&tools.defs()))
    }

    /// `defs` without the searchable tools not unlocked yet.
    fn offered(&self, defs: &[ToolDef]) -> Arc<[ToolDef]> {
        let unlocked = self.unlocked.lock().unwrap_or_else(|e| e.into_inner());
        defs.iter().filter(|d| self.always.contains(&d.name) || unlocked.contains(&d.name)).cloned().collect()
    }
}

/// `tool_search {query}`: finds tools by words and unlocks them for the rest of the turn.
struct ToolSearch {
    spec: ToolSpec,
    catalog: Catalog,
}

impl ToolSearch {
    fn new(catalog: Catalog) -> Self {
        let spec = ToolSpec {
            name: SEARCH_TOOL.into(),
            description: format!(
                "Finds more tools: {} tools are not shown to save space. Give a few words saying what you need \
                 (e.g. \"calendar events\"); it returns up to {MAX_HITS} matching tool names with a one-line \
                 description, and their full definitions are available from your next step.",
                catalog.entries.len()
            ),
            parameters: json!({
                "type": "object",
                "properties": {"query": {"type": "string", "description": "Words describing the tool you need."}},
                "required": ["query"],
                "additionalProperties": false
            }),
            read_only: true,
        };
        Self { spec, catalog }
    }
}

#[derive(serde::Deserialize)]
struct SearchArgs {
    query: String,
}

#[async_trait]
impl Tool for ToolSearch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, _ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let SearchArgs { query } = parse_args(args)?;
        let hits = search(&self.catalog.entries, &query);
        tracing::info!(query = %query, hits = hits.len(), "tool_search");
        if hits.is_empty() {
            return Ok(format!("No tool matches \"{query}\". Try other or fewer words."));
        }
        self.catalog.unlock(hits.iter().map(|e| e.name.as_str()));
        let list: Vec<String> = hits.iter().map(|e| format!("- {}: {}", e.name, e.line)).collect();
        Ok(format!(
            "{} tool(s) found; their full definitions are available from your next step:\n{}",
            hits.len(),
            list.join("\n")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries() -> Vec<Entry> {
        [
            ("cal__list_events", "Lists calendar events between two dates."),
            ("cal__create_event", "Creates a calendar event."),
            ("mail__send", "Sends an email message."),
            ("weather__forecast", "Weather forecast for a city."),
            ("files__read_file", "Reads a file."),
        ]
        .into_iter()
        .map(|(name, line)| Entry { name: name.into(), line: line.into() })
        .collect()
    }

    #[test]
    fn search_matches_words_best_first() {
        let cases: &[(&str, &[&str])] = &[
            ("calendar events", &["cal__list_events", "cal__create_event"]),
            ("EVENT", &["cal__create_event", "cal__list_events"]),
            ("send email", &["mail__send"]),
            ("weather__forecast", &["weather__forecast"]),
            ("forec", &["weather__forecast"]),
            ("fo", &[]),
            ("read a file", &["files__read_file"]),
            ("", &[]),
            ("!!!", &[]),
            ("nothing like it", &[]),
        ];
        let all = entries();
        for (query, want) in cases {
            let got: Vec<&str> = search(&all, query).into_iter().map(|e| e.name.as_str()).collect();
            assert_eq!(&got, want, "query {query:?}");
        }
    }

    #[test]
    fn search_returns_at_most_ten() {
        let many: Vec<Entry> =
            (0..30).map(|i| Entry { name: format!("s__t{i:02}"), line: "Does a thing.".into() }).collect();
        let got = search(&many, "thing");
        assert_eq!(got.len(), MAX_HITS);
        assert_eq!(got[0].name, "s__t00", "ties in name order");
    }
}
