//! The gate's link order: writing `benches/hot.order` from callgrind dumps (BENCH_GATE_ORDER)
//! and checking where its functions lie in a binary (`bench=hot_code`).
//!
//! It must never let a spread-out placement pass, and never write names of another binary.

use super::dump::Dump;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The link order `build.rs` gives the linker (see `write_order`).
pub const HOT_ORDER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/hot.order");

/// Where BENCH_GATE_ORDER asks the link order to be written.
pub fn order_file() -> Option<PathBuf> {
    std::env::var_os("BENCH_GATE_ORDER").map(PathBuf::from)
}

/// The line in the link order after the functions an idle process runs (a start on an
/// existing database, then the idle timers), before those of turns and of a first start.
const TURNS_MARK: &str = "# -- the functions of turns and of a first start, after those of an idle process";

/// The names a link order lists: its idle part (before [`TURNS_MARK`]) and the rest.
fn order_parts(text: &str) -> (Vec<&str>, Vec<&str>) {
    let (head, tail) = text.split_once(TURNS_MARK).unwrap_or((text, ""));
    (symbols(head), symbols(tail))
}

/// The symbol lines of part of a link order (no empty lines, no comments).
fn symbols(part: &str) -> Vec<&str> {
    part.lines().filter(|l| !l.is_empty() && !l.starts_with('#')).collect()
}

/// Adds to `file` the symbols of `butler`'s functions that ran and that it does not list yet,
/// in the order of the dumps: with `idle`, at the end of the idle part (moving any the file
/// had after [`TURNS_MARK`]); else at the end. This is the symbol ordering file `build.rs`
/// gives the linker. A release build and this bench's build of the same sources differ in
/// their dependencies' features (the bench's dev-dependencies add some), so their symbols
/// differ: the file lists both builds' functions, profiled one after the other, each build's
/// idle functions in the first part.
pub fn write_order(binary: &str, dumps: &[PathBuf], file: &Path, idle: bool) {
    let ours = std::fs::canonicalize(binary).unwrap();
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let (mut head, mut tail) = order_parts(&text);
    let listed = head.len() + tail.len();
    let mut seen: std::collections::HashSet<&str> = head.iter().copied().collect();
    let later: std::collections::HashSet<&str> = tail.iter().copied().collect();
    let mut ran = Vec::new();
    for dump in dumps {
        let text = std::fs::read_to_string(dump).unwrap();
        let (mut names, mut objects) = (BTreeMap::new(), BTreeMap::new());
        let mut in_butler = false;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("ob=") {
                in_butler = Path::new(&Dump::name(&mut objects, rest)) == ours;
            } else if let Some(rest) = line.strip_prefix("cob=") {
                Dump::name(&mut objects, rest);
            } else if let Some(rest) = line.strip_prefix("cfn=") {
                // Defines a name for later `fn=` lines; the callee is in its own `fn=` block.
                Dump::name(&mut names, rest);
            } else if let Some(rest) = line.strip_prefix("fn=") {
                let name = Dump::name(&mut names, rest);
                if in_butler && !name.starts_with("0x") {
                    ran.push(name);
                }
            }
        }
    }
    let mut moved = std::collections::HashSet::new();
    for name in &ran {
        if seen.contains(name.as_str()) || (!idle && later.contains(name.as_str())) {
            continue;
        }
        seen.insert(name);
        if idle {
            head.push(name);
            moved.insert(name.as_str());
        } else {
            tail.push(name);
        }
    }
    tail.retain(|name| !moved.contains(name));
    let out: String = head.iter().chain([&TURNS_MARK]).chain(&tail).map(|l| format!("{l}\n")).collect();
    std::fs::write(file, out).unwrap();
    println!(
        "bench=gate_order listed={listed} now={} idle_part={} file={}",
        head.len() + tail.len(),
        head.len(),
        file.display()
    );
}

/// Where the functions `benches/hot.order` names lie in the profiled binary (`nm`): how many
/// exist, their total size and the span of addresses they cover, for the whole file and for
/// its idle part. Fails when either is spread out (the link order was not applied); says so
/// when most are gone (the file is stale).
pub fn hot_code(binary: &str) -> bool {
    let Ok(listed) = std::fs::read_to_string(HOT_ORDER) else {
        eprintln!("gate: {HOT_ORDER} is missing: write it with BENCH_GATE_ORDER");
        return false;
    };
    let Ok(out) = Command::new("nm").args(["-S", "--defined-only"]).arg(binary).output() else {
        println!("bench=hot_code skipped=no_nm");
        return true;
    };
    let (head, tail) = order_parts(&listed);
    let idle: std::collections::HashSet<&str> = head.iter().copied().collect();
    let listed: std::collections::HashSet<&str> = head.into_iter().chain(tail).collect();
    let text = String::from_utf8_lossy(&out.stdout);
    // A local symbol's name can be several functions' (`.part.0`, `.cold`): each counts once.
    let (mut all, mut idle_only) = (Placed::default(), Placed::default());
    // A function LLVM made visible across code units is named with a suffix `.llvm.<its unit>`
    // (`.cargo/config.toml`; without that option, a hash of the unit's code): one that moved to
    // another unit is listed under its old name and not placed ("renamed"; a file just written
    // counts some too: functions the other build ran that this one has under another suffix).
    fn stem(name: &str) -> Option<&str> {
        name.split_once(".llvm.").map(|(stem, _)| stem)
    }
    let listed_stems: std::collections::HashSet<&str> = listed.iter().filter_map(|n| stem(n)).collect();
    let mut renamed = std::collections::HashSet::new();
    for line in text.lines() {
        let [addr, size, kind, name] = line.split_whitespace().collect::<Vec<_>>()[..] else { continue };
        if !matches!(kind, "t" | "T") {
            continue;
        }
        if !listed.contains(name) {
            if stem(name).is_some_and(|s| listed_stems.contains(s)) {
                renamed.insert(name);
            }
            continue;
        }
        let (addr, size) = (u64::from_str_radix(addr, 16).unwrap_or(0), u64::from_str_radix(size, 16).unwrap_or(0));
        all.add(name, addr, size);
        if idle.contains(name) {
            idle_only.add(name, addr, size);
        }
    }
    let matched = all.found.len() as f64 * 100.0 / listed.len().max(1) as f64;
    println!(
        "bench=hot_code listed={} found={} matched_pct={matched:.1} size_mib={:.2} span_mib={:.2} \
         idle_found={} idle_size_mib={:.2} idle_span_mib={:.2} renamed={}",
        listed.len(),
        all.found.len(),
        mib(all.bytes),
        mib(all.span()),
        idle_only.found.len(),
        mib(idle_only.bytes),
        mib(idle_only.span()),
        renamed.len(),
    );
    // The file lists two builds' functions (see `write_order`): each build has about half. A
    // stale file costs memory, not correctness: said, not failed.
    if matched < 40.0 {
        eprintln!("gate: most of benches/hot.order is stale: write it again with BENCH_GATE_ORDER");
    }
    if all.spread() || idle_only.spread() {
        eprintln!("gate: the functions of benches/hot.order are spread over the binary: is build.rs linking with it?");
        return false;
    }
    true
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Functions found in the binary: their count, total size and the addresses they cover.
#[derive(Default)]
struct Placed<'a> {
    found: std::collections::HashSet<&'a str>,
    bytes: u64,
    low: Option<u64>,
    high: u64,
}

impl<'a> Placed<'a> {
    fn add(&mut self, name: &'a str, addr: u64, size: u64) {
        self.found.insert(name);
        self.bytes += size;
        self.low = Some(self.low.map_or(addr, |low| low.min(addr)));
        self.high = self.high.max(addr + size);
    }

    fn span(&self) -> u64 {
        self.low.map_or(0, |low| self.high - low)
    }

    /// Whether they lie over more than twice their size plus 1 MiB (100 of them at least).
    fn spread(&self) -> bool {
        self.found.len() >= 100 && self.span() > 2 * self.bytes + (1 << 20)
    }
}
