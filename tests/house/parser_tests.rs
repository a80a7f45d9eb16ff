//! Tables for the house test's own reader: source snippets in made-up files -> the imports it
//! must resolve them to. They keep `parse.rs` and `graph.rs` honest; they must never read the
//! real `src/` (the rules test does that).

use crate::graph::{module_of, File, Graph, Kind};
use crate::parse::parse;

/// A small made-up crate every case adds its own `src/x.rs` (or another file) to.
const BASE: &[(&str, &str)] = &[
    ("src/lib.rs", "pub mod a; pub mod d; pub mod s; pub mod x;"),
    ("src/a/mod.rs", "mod b; pub use b::B; pub struct A; pub fn helper() {} pub(crate) use b::Other as Renamed;"),
    ("src/a/b.rs", "pub struct B; pub struct Other; pub fn make() {}"),
    ("src/d.rs", "pub mod e;"),
    ("src/d/e.rs", "pub struct E; pub struct F;"),
    ("src/s/mod.rs", "mod records; pub use records::*; pub trait Store {}"),
    ("src/s/records.rs", "pub struct Row; pub enum Status { Done }"),
];

/// Imports of `file` (whose source is `src`) as `to-file::item`, sorted; facade re-exports are
/// marked `(re-export)`.
fn imports(file: &str, src: &str) -> Vec<String> {
    let mut files: Vec<File> = BASE
        .iter()
        .filter(|(rel, _)| *rel != file)
        .map(|(rel, text)| File { rel: rel.to_string(), module: module_of(rel).unwrap(), parsed: parse(text) })
        .collect();
    files.push(File { rel: file.into(), module: module_of(file).unwrap(), parsed: parse(src) });
    let g = Graph::build(files);
    let me = g.files.iter().position(|f| f.rel == file).unwrap();
    let mut out: Vec<String> = g
        .edges
        .iter()
        .filter(|e| e.from == me)
        .map(|e| {
            let mark = if e.kind == Kind::Reexport { " (re-export)" } else { "" };
            format!("{}::{}{mark}", g.files[e.to].rel, e.item)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn use_trees_and_paths_resolve_to_files() {
    let cases: &[(&str, &str, &[&str])] = &[
        ("src/x.rs", "use crate::a::b::B;", &["src/a/b.rs::B"]),
        // a re-export is followed to the item's home; `self` binds an alias, not an edge
        (
            "src/x.rs",
            "use crate::a::{B, A, b::{self, Other}};",
            &["src/a/b.rs::B", "src/a/b.rs::Other", "src/a/mod.rs::A"],
        ),
        ("src/x.rs", "use crate::a::Renamed;", &["src/a/b.rs::Other"]),
        ("src/a/b.rs", "use super::A; pub struct B; pub struct Other;", &["src/a/mod.rs::A"]),
        // the facade line of a mod.rs is marked, so the rules can leave it out
        ("src/a/mod.rs", "mod b; pub use b::B; pub struct A; pub fn helper() {}", &["src/a/b.rs::B (re-export)"]),
        // ... but a re-exported name the mod.rs itself uses is a real import
        ("src/a/mod.rs", "mod b; pub use b::B; pub struct A; pub fn helper() -> B { B }", &["src/a/b.rs::B"]),
        (
            "src/s/mod.rs",
            "mod records; pub use records::*; pub trait Store { fn get(&self) -> Row; }",
            &["src/s/records.rs::*"],
        ),
        ("src/x.rs", "fn f() { crate::a::helper(); }", &["src/a/mod.rs::helper"]),
        ("src/x.rs", "use crate::a::b;\nfn f() { b::make(); }", &["src/a/b.rs::make"]),
        ("src/x.rs", "use crate::s;\nfn f(x: &dyn s::Store) {}", &["src/s/mod.rs::Store"]),
        // test code is skipped: inline, out of line, a single test-only item
        (
            "src/x.rs",
            "#[cfg(test)]\nmod tests {\n use crate::a::A;\n fn t() { crate::a::helper(); }\n}\nuse crate::a::B;",
            &["src/a/b.rs::B"],
        ),
        ("src/x.rs", "#[cfg(test)]\nmod tests;\n#[cfg(test)]\nuse crate::a::A;", &[]),
        ("src/x.rs", "#[cfg(test)]\nfn only() { crate::a::helper() }", &[]),
        // several lines, nested braces, `as`, `pub(crate)`
        (
            "src/x.rs",
            "pub(crate) use crate::{\n    a::A,\n    d::e::{E as Ee, F},\n};",
            &["src/a/mod.rs::A", "src/d/e.rs::E", "src/d/e.rs::F"],
        ),
        // comments, strings, raw strings and char literals hide nothing and invent nothing
        (
            "src/x.rs",
            "// use crate::a::A;\n/* crate::a::B */ const S: &str = \"crate::a::A\";\n\
             const R: &str = r#\"crate::a::\"B\"\"#; const Q: char = '\"'; fn f() { crate::a::helper() }",
            &["src/a/mod.rs::helper"],
        ),
        ("src/x.rs", "fn f<'a>(x: &'a str) -> crate::a::A { make(x) }", &["src/a/mod.rs::A"]),
        ("src/x.rs", "macro_rules! m { () => { impl $crate::s::Store for X {} } }", &["src/s/mod.rs::Store"]),
        // 2018-style module files: `src/d.rs` owns `src/d/e.rs`
        ("src/d.rs", "pub mod e; use e::E;", &["src/d/e.rs::E"]),
        ("src/d/e.rs", "use super::super::a::A; pub struct E;", &["src/a/mod.rs::A"]),
        // a glob re-export is followed to the file that defines the item; a variant names its enum
        (
            "src/x.rs",
            "use crate::s::Row; fn f() { crate::s::Status::Done; }",
            &["src/s/records.rs::Row", "src/s/records.rs::Status"],
        ),
        ("src/x.rs", "use crate::s::*;", &["src/s/mod.rs::*"]),
        // outside the crate: ignored; `pub(in crate::a)` is a visibility, not an import
        ("src/x.rs", "use std::sync::Arc; use ::serde::Serialize; fn f() { std::mem::take(x); }", &[]),
        ("src/x.rs", "pub(in crate::a) struct Y;", &[]),
        ("src/main.rs", "fn main() { butler::a::helper(); }", &["src/a/mod.rs::helper"]),
    ];
    for (file, src, want) in cases {
        assert_eq!(imports(file, src), *want, "imports of {file}: {src}");
    }
}

#[test]
fn inherent_impls_are_told_from_trait_impls() {
    let cases: &[(&str, &[&str])] = &[
        ("impl Agent { fn run(&self) {} }", &["Agent"]),
        ("impl<'a, T: Clone> Window<'a, T> where T: Send { }", &["Window"]),
        ("impl Tool for Now {} impl<T> From<T> for Wrap<T> {}", &[]),
        ("impl crate::config::Config { }", &["Config"]),
        ("#[cfg(test)]\nimpl Agent { }\nfn f() { impl Local {} }", &[]),
    ];
    for (src, want) in cases {
        let got: Vec<String> = parse(src).inherent_impls.into_iter().collect();
        assert_eq!(got, *want, "{src}");
    }
}

#[test]
fn files_map_to_module_paths() {
    let cases: &[(&str, Option<&[&str]>)] = &[
        ("src/lib.rs", Some(&[])),
        ("src/main.rs", Some(&["main"])),
        ("src/app.rs", Some(&["app"])),
        ("src/store/mod.rs", Some(&["store"])),
        ("src/config/load.rs", Some(&["config", "load"])),
        ("src/config/load/deser.rs", Some(&["config", "load", "deser"])),
        ("src/config/tests/mod.rs", None),
        ("src/permissions/tests/hard.rs", None),
    ];
    for (rel, want) in cases {
        let want = want.map(|w| w.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(module_of(rel), want, "{rel}");
    }
}
