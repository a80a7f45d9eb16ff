//! The file-level import graph of `src/`: maps each file to its module path, resolves the paths
//! `parse.rs` found (`crate::`, `$crate::`, `super::`, `self::`, a declared child module, a
//! `use`d module alias) to the file that defines the item, following `pub use` re-exports to
//! the item's real home, and finds the strongly connected components (import circles).
//!
//! It must never link or run the butler crate, and never count test code: files under
//! `src/**/tests/` are not nodes and `#[cfg(test)]` items are dropped by the parser.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::parse::{self, Parsed};

/// How an edge was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A `use` leaf.
    Use,
    /// A path in code (`crate::store::now_ms()`, `tick::run`).
    Path,
    /// A `pub use` leaf that re-exports an item of one of the file's own submodules.
    Reexport,
}

/// One import: `from` names `item`, which lives in `to`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    pub item: String,
    pub line: usize,
    pub kind: Kind,
}

/// One file of `src/` and what it says.
pub struct File {
    /// Relative to the crate root, e.g. `src/store/mod.rs`.
    pub rel: String,
    /// Module path from the crate root (`["store"]`); `src/main.rs` is its own crate: `["main"]`.
    pub module: Vec<String>,
    pub parsed: Parsed,
}

pub struct Graph {
    pub files: Vec<File>,
    pub modules: BTreeMap<Vec<String>, usize>,
    pub edges: Vec<Edge>,
}

/// The module path of a file below `src/`, `None` for test code.
pub fn module_of(rel: &str) -> Option<Vec<String>> {
    let inner = rel.strip_prefix("src/")?.strip_suffix(".rs")?;
    let mut segs: Vec<String> = inner.split('/').map(str::to_string).collect();
    if segs.iter().any(|s| s == "tests") {
        return None;
    }
    match segs.last().map(String::as_str) {
        Some("lib") if segs.len() == 1 => segs.clear(),
        Some("main") if segs.len() == 1 => {}
        Some("mod") => {
            segs.pop();
        }
        _ => {}
    }
    Some(segs)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Turns a path as written in `module` into a path from the crate root; `None` when it leaves
/// the crate (std, other crates) or is not a module-qualified path at all.
pub fn absolutize(
    path: &[String],
    module: &[String],
    is_module: &dyn Fn(&[String]) -> bool,
    aliases: &BTreeMap<String, Vec<String>>,
    bin: bool,
) -> Option<Vec<String>> {
    let first = path.first()?.as_str();
    let (mut base, rest): (Vec<String>, &[String]) = match first {
        "crate" | "$crate" if !bin => (Vec::new(), &path[1..]),
        "butler" if bin => (Vec::new(), &path[1..]),
        "self" | "super" if !bin => (module.to_vec(), &path[usize::from(first == "self")..]),
        "::" => return None,
        _ => {
            let mut child = module.to_vec();
            child.push(first.to_string());
            if !bin && is_module(&child) {
                (module.to_vec(), path)
            } else if let Some(target) = aliases.get(first) {
                (target.clone(), &path[1..])
            } else {
                return None;
            }
        }
    };
    let mut rest = rest.iter().peekable();
    while rest.peek().is_some_and(|s| *s == "super") {
        base.pop()?;
        rest.next();
    }
    base.extend(rest.cloned());
    Some(base)
}

impl Graph {
    /// Reads every `.rs` file below `root/src`.
    pub fn load(root: &Path) -> Graph {
        let mut paths = Vec::new();
        walk(&root.join("src"), &mut paths);
        let mut files = Vec::new();
        for p in paths {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            let Some(module) = module_of(&rel) else { continue };
            let src = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {rel}: {e}"));
            files.push(File { rel, module, parsed: parse::parse(&src) });
        }
        Self::build(files)
    }

    /// Builds the graph from already parsed files (the parser tests use this with made-up files).
    pub fn build(files: Vec<File>) -> Graph {
        let modules: BTreeMap<Vec<String>, usize> = files
            .iter()
            .enumerate()
            .filter(|(_, f)| f.rel != "src/main.rs")
            .map(|(i, f)| (f.module.clone(), i))
            .collect();
        let mut g = Graph { files, modules, edges: Vec::new() };
        g.edges = g.collect_edges();
        g
    }

    fn is_bin(&self, file: usize) -> bool {
        self.files[file].rel == "src/main.rs"
    }

    fn scope(&self, file: usize, inner: &[String]) -> Vec<String> {
        let mut m = if self.is_bin(file) { Vec::new() } else { self.files[file].module.clone() };
        m.extend(inner.iter().cloned());
        m
    }

    /// Module aliases of a file: `use crate::store;` binds `store` to `["store"]`.
    fn aliases(&self, file: usize) -> BTreeMap<String, Vec<String>> {
        let is_module = |p: &[String]| self.modules.contains_key(p);
        let none = BTreeMap::new();
        let mut out = BTreeMap::new();
        for leaf in self.files[file].parsed.uses.iter().filter(|l| !l.glob) {
            let scope = self.scope(file, &leaf.inner);
            let abs = absolutize(&leaf.path, &scope, &is_module, &none, self.is_bin(file));
            if let (Some(abs), Some(b)) = (abs, &leaf.binding) {
                if self.modules.contains_key(&abs) {
                    out.insert(b.clone(), abs);
                }
            }
        }
        out
    }

    /// Absolute paths a file re-exports by name, and the modules it glob re-exports.
    fn reexports(&self, file: usize) -> (BTreeMap<String, Vec<String>>, Vec<Vec<String>>) {
        let is_module = |p: &[String]| self.modules.contains_key(p);
        let none = BTreeMap::new();
        let (mut named, mut globs) = (BTreeMap::new(), Vec::new());
        for leaf in self.files[file].parsed.uses.iter().filter(|l| l.public && l.inner.is_empty()) {
            let scope = self.scope(file, &[]);
            let Some(abs) = absolutize(&leaf.path, &scope, &is_module, &none, false) else {
                continue;
            };
            match (&leaf.binding, leaf.glob) {
                (_, true) => globs.push(abs),
                (Some(b), false) => {
                    named.insert(b.clone(), abs);
                }
                _ => {}
            }
        }
        (named, globs)
    }

    /// The file that defines what `abs` names, and the item's name there (`None`: a module).
    pub fn resolve(&self, abs: &[String]) -> Option<(usize, Option<String>)> {
        self.resolve_hops(abs, 0)
    }

    fn resolve_hops(&self, abs: &[String], hops: usize) -> Option<(usize, Option<String>)> {
        let mut k = abs.len();
        while k > 0 && !self.modules.contains_key(&abs[..k]) {
            k -= 1;
        }
        let file = *self.modules.get(&abs[..k])?;
        let Some(item) = abs.get(k) else { return Some((file, None)) };
        let here = Some((file, Some(item.clone())));
        if hops > 8 || self.files[file].parsed.defs.contains(item) {
            return here;
        }
        let (named, globs) = self.reexports(file);
        if let Some(target) = named.get(item) {
            let mut next = target.clone();
            next.extend(abs[k + 1..].iter().cloned());
            return self.resolve_hops(&next, hops + 1).or(here);
        }
        for g in globs {
            let mut next = g.clone();
            next.extend(abs[k..].iter().cloned());
            if let Some((f, Some(it))) = self.resolve_hops(&next, hops + 1) {
                if self.files[f].parsed.defs.contains(&it) {
                    return Some((f, Some(it)));
                }
            }
        }
        here
    }

    /// Whether the file's own code uses what a `pub use` leaf brings in (its binding, or for a
    /// glob any item the glob's module defines): then the leaf is a real import, not a facade.
    fn used_here(&self, file: usize, leaf: &crate::parse::UseLeaf, abs: &[String]) -> bool {
        let idents = &self.files[file].parsed.idents;
        if !leaf.glob {
            return leaf.binding.as_ref().is_some_and(|b| idents.contains(b));
        }
        match self.resolve(abs) {
            Some((to, None)) => self.files[to].parsed.defs.iter().any(|d| idents.contains(d)),
            _ => false,
        }
    }

    fn collect_edges(&self) -> Vec<Edge> {
        let is_module = |p: &[String]| self.modules.contains_key(p);
        let mut edges = BTreeSet::new();
        for (from, f) in self.files.iter().enumerate() {
            let aliases = self.aliases(from);
            let bin = self.is_bin(from);
            let mut add = |abs: Vec<String>, glob: bool, line, kind| {
                let Some((to, item)) = self.resolve(&abs) else { return };
                let item = match (item, glob) {
                    (Some(i), _) => i,
                    (None, true) => "*".to_string(),
                    // A bare module import binds an alias; what is used through it counts.
                    (None, false) => return,
                };
                if to != from {
                    edges.insert(Edge { from, to, item, line, kind });
                }
            };
            for leaf in &f.parsed.uses {
                let scope = self.scope(from, &leaf.inner);
                let Some(abs) = absolutize(&leaf.path, &scope, &is_module, &aliases, bin) else {
                    continue;
                };
                let own = !bin && abs.len() > scope.len() && abs[..scope.len()] == scope[..];
                let kind =
                    if leaf.public && own && !self.used_here(from, leaf, &abs) { Kind::Reexport } else { Kind::Use };
                add(abs, leaf.glob, leaf.line, kind);
            }
            for p in &f.parsed.paths {
                let scope = self.scope(from, &p.inner);
                if let Some(abs) = absolutize(&p.path, &scope, &is_module, &aliases, bin) {
                    add(abs, false, p.line, Kind::Path);
                }
            }
        }
        edges.into_iter().collect()
    }

    /// Distinct `from -> to` pairs among the edges `keep` accepts.
    pub fn pairs(&self, keep: &dyn Fn(&Edge) -> bool) -> BTreeMap<(usize, usize), Vec<&Edge>> {
        let mut out: BTreeMap<(usize, usize), Vec<&Edge>> = BTreeMap::new();
        for e in self.edges.iter().filter(|e| keep(e)) {
            out.entry((e.from, e.to)).or_default().push(e);
        }
        out
    }

    /// Strongly connected components with more than one file (Tarjan), each sorted.
    pub fn circles(&self, keep: &dyn Fn(&Edge) -> bool) -> Vec<Vec<usize>> {
        let n = self.files.len();
        let mut adj = vec![Vec::new(); n];
        for (from, to) in self.pairs(keep).keys() {
            adj[*from].push(*to);
        }
        let mut t = Tarjan {
            adj,
            index: vec![None; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            next: 0,
            out: Vec::new(),
        };
        for v in 0..n {
            if t.index[v].is_none() {
                t.visit(v);
            }
        }
        let mut out: Vec<Vec<usize>> = t.out.into_iter().filter(|c| c.len() > 1).collect();
        for c in &mut out {
            c.sort();
        }
        out.sort();
        out
    }
}

struct Tarjan {
    adj: Vec<Vec<usize>>,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next: usize,
    out: Vec<Vec<usize>>,
}

impl Tarjan {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for w in self.adj[v].clone() {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                _ => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            self.out.push(comp);
        }
    }
}
