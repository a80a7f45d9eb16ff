//! The rules of the house (issue 14, point 8): reads the source of `src/` as text and fails when
//! its imports break the rules that ARCHITECTURE.md's "Rules of the house" table states. It must
//! never link or call the butler crate: it reads files below `env!("CARGO_MANIFEST_DIR")/src`.
//!
//! What counts as an import (file A imports file B):
//! - a leaf of a `use` tree in A (nested braces, `self`, `as`, globs, `pub use`, `pub(crate) use`,
//!   over several lines), or a path in A's code (`crate::store::now_ms()`, `super::X`,
//!   `$crate::store::Store` in a macro body, `child::f()` for a module A declares, `alias::X`
//!   for a module A imported with `use crate::store;`), that resolves to an item of B;
//! - resolution: `crate`/`$crate` is the crate root, `self` A's module, each `super` one module
//!   up; a module path maps to `src/a/b.rs` or `src/a/b/mod.rs` (`mod.rs`, `lib.rs` are their
//!   module's own file; `src/main.rs` is the binary, where `butler::` is the crate root); an item
//!   path names the deepest module prefix that is a file, and when that file does not define the
//!   item but re-exports it (`pub use x::Item`, `pub use x::*`), the re-export is followed to the
//!   file that does define it: `crate::store::InboxRow` is an import of `src/store/records.rs`;
//! - a bare module import (`use crate::store;`) is no edge by itself; what is used through it is;
//! - test code is not looked at: files below `src/**/tests/`, and every `#[cfg(test)]` item
//!   (`mod tests { .. }`, `mod tests;`, a test-only `use` or fn).
//!
//! THE RE-EXPORT RULE: a `pub use` / `pub(crate) use` / `pub(super) use` in file A whose path
//! points into A's own submodules (`pub use records::*;` in `src/store/mod.rs`,
//! `pub use load::{..}` in `src/config/mod.rs`) is a facade, not an import edge: it is what
//! `mod.rs` is for, and users of the re-exported item are resolved to its real home anyway.
//! Everything else a `mod.rs` does counts: a `mod.rs` that calls `child::run()` imports the child,
//! and a child that names `super::X` where X is defined in `mod.rs` imports `mod.rs`; both at
//! once is a circle. For the layer rules a facade is not an import; for circles it is, as any
//! reader of the import graph counts it: a `mod.rs` that re-exports its children and also defines
//! an item a child uses is a circle. So a `mod.rs` is a facade (module docs, `mod` lines,
//! re-exports) or a file of shared items its children use, never both.
//!
//! The rules: (a) no circle of imports among files (strongly connected components), re-exports
//! included; (b) no file of `src/triage` or `src/ingress` imports `src/agent`; (c) no file of
//! `src/config` imports a component; (d) fewer than 5 imports (distinct file pairs) run from a
//! lower layer of `LAYERS` up to a higher one; (e) no inherent `impl` of a type outside the file
//! that defines it; (f) only the composition root (`src/app`) and the store (`src/store`) name
//! the whole `Store` trait: every other component takes the narrow store traits it calls; (g) no
//! source file (src, channels, tests, benches) is over 600 lines.

mod graph;
mod parse;
mod parser_tests;

use std::collections::BTreeMap;
use std::path::Path;

use graph::{Edge, Graph, Kind};

/// The layers of the house, bottom (0) to top: a file may import its own layer and the layers
/// below; an import of a higher layer is "upward". Modules named here that do not exist yet are
/// the homes the refactor of issue 14 creates (`clock`, `ids`).
pub const LAYERS: &[(&str, u8, &str)] = &[
    ("config", 0, "plain data: parsing, defaults, env overrides, masking"),
    ("metrics", 0, "counters and histograms"),
    ("clock", 0, "now_ms, the one wall clock"),
    ("ids", 0, "channel names (system, hook, web), event id and reply key formats"),
    ("llm", 1, "model providers, chat types, prices"),
    ("cluster", 1, "leases, the bus and leader loops over Redis; one process without it"),
    ("telemetry", 1, "the tracing subscriber: text or JSON lines, OTLP traces with the otel feature"),
    ("store", 2, "the Store traits, rows, SQLite and Postgres"),
    ("media", 3, "attachments: downloads under a cap, sniffing, images, transcripts, document text"),
    ("schedule", 3, "fire times, missed-run plans, claims; hands events to the ingress"),
    ("secrets", 3, "named credentials tools use without the model seeing them; redaction of results"),
    ("usage", 3, "what people spent: periods of their calendar, the report by model, its text"),
    ("tools", 4, "the Tool trait, registry, built-in tools"),
    ("permissions", 5, "policy, hard deny list, approval rules"),
    ("hooks", 5, "command and HTTP hooks around tool calls"),
    ("mcp", 5, "MCP servers (stdio, streamable HTTP) and their tools as Tools"),
    ("skills", 5, "SKILL.md discovery, the skills prompt section and the skill tool"),
    ("delegate", 5, "delegation plans (archetypes, tiers, tools), its checks, the running children"),
    ("agent", 6, "the turn loop; owns the progress trait"),
    ("memory", 6, "the archivist, memory export/import"),
    ("outbox", 7, "delivery, streaming; implements the agent's progress trait"),
    ("session", 8, "session keys, actors, one turn at a time"),
    ("triage", 9, "who, what, where to: commands, clicks, triggers, scheduled events"),
    ("ingress", 10, "the inbox and the dispatcher"),
    ("status", 10, "the owner's status page: the running parts' facts, read only"),
    ("http", 11, "the router, health, JSON errors"),
    ("web", 11, "the web chat channel and its API"),
    ("links", 11, "answer links: signed one-time links to a request's choices, and their page"),
    ("channels", 11, "config glue to the channel crates"),
    ("app", 12, "composition root"),
    ("cli", 13, "the butler commands"),
    ("main", 13, "the binary"),
    ("lib", 13, "the crate root's module list"),
];

/// Components config must never import (rule c).
const NOT_FOR_CONFIG: &[&str] = &[
    "cluster",
    "permissions",
    "tools",
    "schedule",
    "store",
    "agent",
    "triage",
    "ingress",
    "session",
    "outbox",
    "llm",
    "hooks",
    "mcp",
    "delegate",
    "memory",
    "web",
    "http",
    "channels",
    "cli",
    "app",
];

/// The top-level module a file belongs to (`lib` for `src/lib.rs`, `main` for `src/main.rs`).
pub fn top(g: &Graph, file: usize) -> String {
    let f = &g.files[file];
    if f.rel == "src/main.rs" {
        return "main".into();
    }
    f.module.first().cloned().unwrap_or_else(|| "lib".into())
}

fn layer(name: &str) -> Option<u8> {
    LAYERS.iter().find(|l| l.0 == name).map(|l| l.1)
}

/// The edges the layer rules look at: everything but facade re-exports (see the top of this file).
fn counts(e: &Edge) -> bool {
    e.kind != Kind::Reexport
}

/// The edges circles are made of: every import, facade re-exports included.
fn any(_: &Edge) -> bool {
    true
}

/// The modules that may name the whole `Store` (rule f).
const WHOLE_STORE: &[&str] = &["store", "app"];

/// The longest a source file may be (rule g).
const MAX_LINES: usize = 600;

/// Every `.rs` file below `dir`, with its line count.
fn line_counts(dir: &Path, out: &mut Vec<(String, usize)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            line_counts(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            out.push((path.display().to_string(), text.lines().count()));
        }
    }
}
fn describe(g: &Graph, es: &[&Edge]) -> String {
    let f = &g.files[es[0].from].rel;
    let t = &g.files[es[0].to].rel;
    let items: Vec<String> = es.iter().map(|e| format!("{} (line {})", e.item, e.line)).collect();
    format!("{f} -> {t}: {}", items.join(", "))
}

#[test]
fn rules_of_the_house() {
    let g = Graph::load(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(g.files.len() > 20, "found only {} files below src/", g.files.len());
    let pairs = g.pairs(&counts);
    let mut problems = Vec::new();

    let unknown: Vec<String> = (0..g.files.len())
        .filter(|f| layer(&top(&g, *f)).is_none())
        .map(|f| format!("{} (module `{}`)", g.files[f].rel, top(&g, f)))
        .collect();
    if !unknown.is_empty() {
        problems.push(format!("modules missing from LAYERS: {}", unknown.join(", ")));
    }

    // (a) circles, through re-exports too
    let circles = g.circles(&any);
    let all_pairs = g.pairs(&any);
    for (n, c) in circles.iter().enumerate() {
        let names: Vec<&str> = c.iter().map(|f| g.files[*f].rel.as_str()).collect();
        let mut msg = format!("circle {}: {} files: {}", n + 1, c.len(), names.join(" "));
        for ((from, to), es) in &all_pairs {
            if c.contains(from) && c.contains(to) {
                msg.push_str(&format!("\n      {}", describe(&g, es)));
            }
        }
        problems.push(msg);
    }

    // (b) triage and ingress never import the agent; (c) config imports no component
    for ((from, to), es) in &pairs {
        let (ft, tt) = (top(&g, *from), top(&g, *to));
        if (ft == "triage" || ft == "ingress") && tt == "agent" {
            problems.push(format!("{ft} imports the agent: {}", describe(&g, es)));
        }
        if ft == "config" && NOT_FOR_CONFIG.contains(&tt.as_str()) {
            problems.push(format!("config imports {tt}: {}", describe(&g, es)));
        }
    }

    // (d) upward imports
    let mut upward = Vec::new();
    for ((from, to), es) in &pairs {
        let (ft, tt) = (top(&g, *from), top(&g, *to));
        if let (Some(lf), Some(lt)) = (layer(&ft), layer(&tt)) {
            if lf < lt {
                upward.push(format!("{ft}({lf}) -> {tt}({lt}): {}", describe(&g, es)));
            }
        }
    }
    for u in &upward {
        println!("house: upward {u}");
    }
    if upward.len() >= 5 {
        problems.push(format!(
            "{} upward imports (the house allows fewer than 5):\n      {}",
            upward.len(),
            upward.join("\n      ")
        ));
    }

    // (e) a type and its inherent impl live in one file (method calls are invisible to this
    // reader, so a split impl could hide a circle).
    let mut spread = Vec::new();
    for (f, file) in g.files.iter().enumerate() {
        for ty in &file.parsed.inherent_impls {
            if file.parsed.defs.contains(ty) {
                continue;
            }
            let homes: Vec<&str> = (0..g.files.len())
                .filter(|h| *h != f && top(&g, *h) == top(&g, f) && g.files[*h].parsed.defs.contains(ty))
                .map(|h| g.files[h].rel.as_str())
                .collect();
            if !homes.is_empty() {
                spread.push(format!("impl {ty} in {} (defined in {})", file.rel, homes.join(", ")));
            }
        }
    }
    for s in &spread {
        println!("house: spread {s}");
    }
    if !spread.is_empty() {
        problems.push(format!("a type's impl lives in another file than the type:\n      {}", spread.join("\n      ")));
    }
    // (f) the whole store, named only by the composition root and the store itself
    let store_home: Vec<usize> = (0..g.files.len())
        .filter(|f| top(&g, *f) == "store" && g.files[*f].parsed.defs.iter().any(|d| d == "Store"))
        .collect();
    let mut whole_store: Vec<String> = all_pairs
        .iter()
        .filter(|((from, to), es)| {
            store_home.contains(to)
                && !WHOLE_STORE.contains(&top(&g, *from).as_str())
                && es.iter().any(|e| e.item == "Store")
        })
        .map(|((from, _), _)| g.files[*from].rel.clone())
        .collect();
    whole_store.dedup();
    if !whole_store.is_empty() {
        problems.push(format!(
            "{} files outside src/app and src/store take the whole Store (take the narrow traits they call):\n      {}",
            whole_store.len(),
            whole_store.join("\n      ")
        ));
    }

    // (g) no file over MAX_LINES lines
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sizes = Vec::new();
    for dir in ["src", "channels", "tests", "benches"] {
        line_counts(&root.join(dir), &mut sizes);
    }
    let long: Vec<String> =
        sizes.iter().filter(|(_, n)| *n > MAX_LINES).map(|(f, n)| format!("{f} ({n} lines)")).collect();
    if !long.is_empty() {
        problems.push(format!("files over {MAX_LINES} lines:\n      {}", long.join("\n      ")));
    }

    let whole_store_files = all_pairs
        .iter()
        .filter(|((_, to), es)| store_home.contains(to) && es.iter().any(|e| e.item == "Store"))
        .map(|((from, _), _)| *from)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let mutual = pairs.keys().filter(|(a, b)| a < b && pairs.contains_key(&(*b, *a))).count();
    let mut by_top: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (from, to) in pairs.keys() {
        *by_top.entry((top(&g, *from), top(&g, *to))).or_default() += 1;
    }
    println!(
        "house: files={} edges={} cycles={} upward={} (files_in_cycles={}, mutual_pairs={mutual}, \
         whole_store_files={whole_store_files}, module_pairs={}, spread_impls={}, longest_file={})",
        g.files.len(),
        pairs.len(),
        circles.len(),
        upward.len(),
        circles.iter().map(Vec::len).sum::<usize>(),
        by_top.keys().filter(|(a, b)| a != b).count(),
        spread.len(),
        sizes.iter().map(|(_, n)| *n).max().unwrap_or(0),
    );
    assert!(problems.is_empty(), "the rules of the house are broken:\n  - {}", problems.join("\n  - "));
}
