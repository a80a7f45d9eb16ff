//! Reads one Rust source file as text and lists what it imports: the leaves of its `use`
//! trees, the module-qualified paths in its code (`crate::store::now_ms()`, `super::X`,
//! `child::f()`), its `mod` declarations and the items it defines at module level.
//!
//! It is a tokenizer plus a few patterns, not a Rust parser: comments, strings and `#[cfg(test)]`
//! items are dropped before anything is looked at. It must never depend on the butler crate
//! (the house test reads the source, it does not link it) and never resolve paths: that is
//! `graph.rs`'s job.

use std::collections::BTreeSet;

/// One token of the source; comments and literal contents are already gone.
#[derive(Debug, Clone, PartialEq)]
pub struct Tok {
    pub text: String,
    pub line: usize,
    pub ident: bool,
}

/// One leaf of a `use` tree: `use crate::a::{b as c, d::*}` gives `crate::a::b` (binding `c`)
/// and `crate::a::d` (glob).
#[derive(Debug, Clone, PartialEq)]
pub struct UseLeaf {
    pub path: Vec<String>,
    /// The name the leaf binds in this module (`as` name, else its last segment); `None` for a glob.
    pub binding: Option<String>,
    pub glob: bool,
    /// `pub use` / `pub(crate) use` / `pub(super) use`: the leaf is re-exported.
    pub public: bool,
    pub line: usize,
    /// Inline `mod x { .. }` names the leaf sits in (empty for the file's own module).
    pub inner: Vec<String>,
}

/// A path in code that starts with a name and `::` (`crate::x::y`, `tick::run`).
#[derive(Debug, Clone, PartialEq)]
pub struct CodePath {
    pub path: Vec<String>,
    pub line: usize,
    pub inner: Vec<String>,
}

/// What one file says about its imports.
#[derive(Debug, Default)]
pub struct Parsed {
    pub uses: Vec<UseLeaf>,
    pub paths: Vec<CodePath>,
    /// `mod x;` declarations (non-test).
    pub mods: BTreeSet<String>,
    /// Names of items defined at module level: structs, enums, fns, traits, types, consts,
    /// statics, unions, `macro_rules!`.
    pub defs: BTreeSet<String>,
    /// Every name that occurs in the file's (non-test) code outside `use` items: a name a
    /// `pub use` brings in and the file's own code then uses is a real import, not a facade.
    pub idents: BTreeSet<String>,
    /// Types this file has an inherent `impl Type { .. }` block for (not `impl Trait for Type`).
    pub inherent_impls: BTreeSet<String>,
}

/// Splits source text into tokens, dropping comments and the contents of literals.
pub fn tokenize(src: &str) -> Vec<Tok> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0usize, 1usize);
    let lit = |line| Tok { text: "\"\"".into(), line, ident: false };
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if ch == '"' {
            let start = line;
            i += 1;
            while i < c.len() && c[i] != '"' {
                line += usize::from(c[i] == '\n');
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(lit(start));
        } else if ch == '\'' {
            if c.get(i + 1) == Some(&'\\') {
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push(lit(line));
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push(lit(line));
            } else {
                // A lifetime or label: drop the quote, keep the name out of path scanning.
                i += 1;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
            }
        } else if ch.is_alphabetic() || ch == '_' || ch == '$' {
            let s = i;
            i += 1;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[s..i].iter().collect();
            let raw_prefix = matches!(word.as_str(), "r" | "br" | "cr");
            if raw_prefix && matches!(c.get(i), Some('"') | Some('#')) {
                let mut hashes = 0;
                while c.get(i + hashes) == Some(&'#') {
                    hashes += 1;
                }
                if c.get(i + hashes) == Some(&'"') {
                    // A raw string: ends at `"` followed by the same number of `#`.
                    let start = line;
                    i += hashes + 1;
                    while i < c.len() {
                        if c[i] == '"' && (0..hashes).all(|k| c.get(i + 1 + k) == Some(&'#')) {
                            i += 1 + hashes;
                            break;
                        }
                        line += usize::from(c[i] == '\n');
                        i += 1;
                    }
                    out.push(lit(start));
                    continue;
                }
                if word == "r" && hashes == 1 {
                    // A raw identifier `r#type`.
                    let s = i + 1;
                    i = s;
                    while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                        i += 1;
                    }
                    out.push(Tok { text: c[s..i].iter().collect(), line, ident: true });
                    continue;
                }
            }
            if matches!(word.as_str(), "b" | "c") && c.get(i) == Some(&'"') {
                continue; // byte / C string: the `"` branch takes it next
            }
            if word == "b" && c.get(i) == Some(&'\'') {
                continue; // byte char: the `'` branch takes it next
            }
            out.push(Tok { text: word, line, ident: true });
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(lit(line));
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push(Tok { text: "::".into(), line, ident: false });
            i += 2;
        } else {
            out.push(Tok { text: ch.to_string(), line, ident: false });
            i += 1;
        }
    }
    out
}

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false", "fn", "for", "if",
    "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "static", "struct", "trait",
    "true", "type", "unsafe", "use", "where", "while", "union",
];

fn is_name(t: &Tok) -> bool {
    t.ident && !KEYWORDS.contains(&t.text.as_str())
}

/// Index just past the bracket group that opens at `i` (`(`, `[` or `{`).
fn skip_group(t: &[Tok], mut i: usize) -> usize {
    let mut depth = 0i32;
    while i < t.len() {
        match t[i].text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// Index just past the item that starts at `i`: a `use` ends at `;`, anything else at a `;`
/// or the end of its first top-level `{ .. }` block.
fn skip_item(t: &[Tok], mut i: usize) -> usize {
    while i < t.len() && t[i].text == "#" {
        i = skip_group(t, i + 1 + usize::from(t.get(i + 1).is_some_and(|x| x.text == "!")));
    }
    if t.get(i).is_some_and(|x| x.text == "pub") {
        i += 1;
        if t.get(i).is_some_and(|x| x.text == "(") {
            i = skip_group(t, i);
        }
    }
    let is_use = t.get(i).is_some_and(|x| x.text == "use");
    while i < t.len() {
        match t[i].text.as_str() {
            ";" => return i + 1,
            "{" if !is_use => return skip_group(t, i),
            "(" | "[" | "{" => i = skip_group(t, i),
            _ => i += 1,
        }
    }
    i
}

fn is_cfg_test(attr: &[Tok]) -> bool {
    let words: Vec<&str> = attr.iter().map(|x| x.text.as_str()).collect();
    words == ["[", "cfg", "(", "test", ")", "]"]
}

/// Whether the tokens just before `i` make the item public in any degree.
fn visibility_before(t: &[Tok], i: usize) -> bool {
    if i >= 1 && t[i - 1].text == "pub" {
        return true;
    }
    if i >= 1 && t[i - 1].text == ")" {
        let mut j = i - 1;
        while j > 0 && t[j].text != "(" {
            j -= 1;
        }
        return j >= 1 && t[j - 1].text == "pub";
    }
    false
}

/// Parses the `use` tree that starts at `i` (just after the `use` keyword); returns the index
/// just past its `;`.
pub fn use_tree(t: &[Tok], mut i: usize, prefix: &[String], out: &mut Vec<UseLeaf>) -> usize {
    let mut path: Vec<String> = prefix.to_vec();
    if t.get(i).is_some_and(|x| x.text == "::") {
        path.push("::".into());
        i += 1;
    }
    let line = t.get(i).map_or(0, |x| x.line);
    let leaf =
        |path: Vec<String>, binding, glob| UseLeaf { path, binding, glob, public: false, line, inner: Vec::new() };
    while i < t.len() {
        match t[i].text.as_str() {
            "{" => {
                i += 1;
                while i < t.len() && t[i].text != "}" {
                    i = use_tree(t, i, &path, out);
                    if t.get(i).is_some_and(|x| x.text == ",") {
                        i += 1;
                    }
                }
                return i + 1;
            }
            "*" => {
                out.push(leaf(path, None, true));
                return i + 1;
            }
            _ if t[i].ident => {
                path.push(t[i].text.clone());
                i += 1;
                if t.get(i).is_some_and(|x| x.text == "::") {
                    i += 1;
                    continue;
                }
                let mut binding = None;
                if t.get(i).is_some_and(|x| x.text == "as") {
                    binding = t.get(i + 1).map(|x| x.text.clone());
                    i += 2;
                }
                if path.last().is_some_and(|s| s == "self") {
                    path.pop();
                }
                let binding = binding.or_else(|| path.last().cloned());
                out.push(leaf(path, binding, false));
                return i;
            }
            _ => return i,
        }
    }
    i
}

/// The type of an inherent impl whose header starts at `i` (after `impl`), `None` for a trait impl.
fn inherent_impl(t: &[Tok], mut i: usize) -> Option<String> {
    if t.get(i).is_some_and(|x| x.text == "<") {
        let mut depth = 0;
        while i < t.len() {
            match t[i].text.as_str() {
                "<" => depth += 1,
                ">" => depth -= 1,
                _ => {}
            }
            i += 1;
            if depth == 0 {
                break;
            }
        }
    }
    let mut name = None;
    let mut depth = 0;
    while i < t.len() && t[i].text != "{" {
        match t[i].text.as_str() {
            "for" if depth == 0 => return None,
            "<" => depth += 1,
            // `->` is two tokens; its `>` closes nothing.
            ">" if t[i - 1].text != "-" => depth -= 1,
            "where" if depth == 0 => break,
            _ if depth == 0 && is_name(&t[i]) => name = Some(t[i].text.clone()),
            _ => {}
        }
        i += 1;
    }
    name
}

/// Reads one file's source text.
pub fn parse(src: &str) -> Parsed {
    let t = tokenize(src);
    let mut p = Parsed::default();
    // Inline modules: (name, brace depth inside it).
    let mut inner: Vec<(String, i32)> = Vec::new();
    let mut depth = 0i32;
    let mut i = 0;
    while i < t.len() {
        let tok = &t[i];
        let at_module_level = depth == inner.last().map_or(0, |m| m.1);
        match tok.text.as_str() {
            "#" => {
                let bang = t.get(i + 1).is_some_and(|x| x.text == "!");
                let open = i + 1 + usize::from(bang);
                let end = skip_group(&t, open);
                if is_cfg_test(&t[open..end.min(t.len())]) {
                    if bang {
                        return Parsed::default(); // `#![cfg(test)]`: the whole file is test code
                    }
                    i = skip_item(&t, end);
                } else {
                    i = end;
                }
                continue;
            }
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if inner.last().is_some_and(|m| depth < m.1) {
                    inner.pop();
                }
            }
            "pub" if t.get(i + 1).is_some_and(|x| x.text == "(") => {
                i = skip_group(&t, i + 1); // `pub(in crate::x)` names a path but imports nothing
                continue;
            }
            "use" if t.get(i + 1).is_none_or(|x| x.text != "<") => {
                let public = visibility_before(&t, i);
                let from = p.uses.len();
                i = use_tree(&t, i + 1, &[], &mut p.uses);
                let names: Vec<String> = inner.iter().map(|m| m.0.clone()).collect();
                for leaf in &mut p.uses[from..] {
                    leaf.public = public;
                    leaf.inner = names.clone();
                }
                while i < t.len() && t[i].text != ";" {
                    i += 1;
                }
                continue;
            }
            "mod" if t.get(i + 1).is_some_and(is_name) => {
                let name = t[i + 1].text.clone();
                match t.get(i + 2).map(|x| x.text.as_str()) {
                    Some(";") if inner.is_empty() => {
                        p.mods.insert(name);
                    }
                    Some("{") => {
                        inner.push((name, depth + 1));
                        depth += 1;
                        i += 3;
                        continue;
                    }
                    _ => {}
                }
                i += 2;
                continue;
            }
            "struct" | "enum" | "fn" | "trait" | "type" | "const" | "static" | "union"
                if at_module_level && inner.is_empty() =>
            {
                if let Some(name) = t.get(i + 1).filter(|x| is_name(x)) {
                    p.defs.insert(name.text.clone());
                }
            }
            // An item `impl` follows the end of an item or attribute; `impl Trait` in argument
            // or return position follows `:`, `(`, `,`, `->`, `&` and is no item.
            "impl"
                if at_module_level
                    && inner.is_empty()
                    && (i == 0 || matches!(t[i - 1].text.as_str(), "}" | ";" | "]" | "unsafe" | "{")) =>
            {
                if let Some(name) = inherent_impl(&t, i + 1) {
                    p.inherent_impls.insert(name);
                }
            }
            "macro_rules" if t.get(i + 1).is_some_and(|x| x.text == "!") => {
                if let Some(name) = t.get(i + 2).filter(|x| x.ident) {
                    p.defs.insert(name.text.clone());
                }
            }
            _ if tok.ident
                && t.get(i + 1).is_some_and(|x| x.text == "::")
                && !(i > 0 && matches!(t[i - 1].text.as_str(), "::" | ".")) =>
            {
                let mut path = vec![tok.text.clone()];
                p.idents.insert(tok.text.clone());
                let mut j = i + 1;
                while j + 1 < t.len() && t[j].text == "::" && t[j + 1].ident {
                    path.push(t[j + 1].text.clone());
                    j += 2;
                }
                p.paths.push(CodePath { path, line: tok.line, inner: inner.iter().map(|m| m.0.clone()).collect() });
                i = j;
                continue;
            }
            _ if tok.ident => {
                p.idents.insert(tok.text.clone());
            }
            _ => {}
        }
        i += 1;
    }
    p
}
