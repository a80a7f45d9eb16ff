//! Which skills exist: the built-in ones embedded in the binary, then `<data dir>/skills`, then
//! each of `[skills] dirs`, a later source replacing an earlier one's skill of the same name.
//!
//! [`Skills`] re-reads the folders when they change (by the modification times and sizes of the
//! folders and their SKILL.md files), so an edited or added skill is seen by the next session
//! without a restart, and an unchanged tree costs a few `stat` calls. An invalid SKILL.md is
//! skipped with a warning naming the file and the problem; a scan must never panic, never read
//! anything but directory listings and `SKILL.md` files, and never follow more than
//! [`MAX_ENTRIES`] entries of one folder.

use super::parse::{parse_bytes, parse_skill, ParseError, MAX_SKILL_BYTES};
use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Most entries of one skills folder looked at.
pub const MAX_ENTRIES: usize = 1000;

/// The built-in skills: folder name and SKILL.md text.
const BUILTIN: &[(&str, &str)] = &[
    ("morning-briefing", include_str!("builtin/morning-briefing/SKILL.md")),
    ("summarize-thread", include_str!("builtin/summarize-thread/SKILL.md")),
];

/// A changed file whose time is this close to the scan is read again next time: a file system
/// with coarse timestamps could otherwise hide a second edit in the same tick.
const SETTLE: Duration = Duration::from_secs(2);

/// Where a skill comes from, in priority order (lowest first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    Builtin,
    /// `<data dir>/skills`.
    DataDir,
    /// `[skills] dirs[i]`.
    Dir(usize),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Builtin => f.write_str("built-in"),
            Source::DataDir => f.write_str("data dir"),
            Source::Dir(i) => write!(f, "skills.dirs[{i}]"),
        }
    }
}

/// A folder skills are read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root {
    pub source: Source,
    pub path: PathBuf,
}

/// One skill of the catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// `allowed-tools`, when present: the only tools (names or `*` globs) usable with it.
    pub allowed_tools: Option<Vec<String>>,
    pub body: String,
    pub source: Source,
    /// Its folder; `None` for a built-in skill (it has no other files).
    pub dir: Option<PathBuf>,
}

impl Skill {
    /// Where it was read from, for people: the SKILL.md path, or `built-in`.
    pub fn origin(&self) -> String {
        match &self.dir {
            Some(d) => d.join("SKILL.md").display().to_string(),
            None => "built-in".into(),
        }
    }
}

/// A SKILL.md (or a folder) that was not taken, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub file: PathBuf,
    pub problem: String,
}

/// What one source held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DirState {
    /// The folder does not exist.
    Missing,
    /// The path is not a folder, or cannot be listed.
    Unusable(String),
    Scanned {
        /// Valid skills, by name.
        found: Vec<String>,
        skipped: Vec<Skipped>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirReport {
    pub source: Source,
    /// Empty for the built-in source.
    pub path: PathBuf,
    pub state: DirState,
}

/// The skills of one scan, by name (so every listing is in a stable order).
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    skills: BTreeMap<String, Arc<Skill>>,
    reports: Vec<DirReport>,
}

impl Catalog {
    /// Reads the built-in skills and then each root in order.
    pub fn scan(roots: &[Root]) -> Self {
        let mut c = Catalog::default();
        let mut found = Vec::new();
        let mut skipped = Vec::new();
        for (name, text) in BUILTIN {
            match parse_skill(text, name) {
                Ok(p) => {
                    found.push(p.name.clone());
                    c.insert(Skill {
                        name: p.name,
                        description: p.description,
                        allowed_tools: p.allowed_tools,
                        body: p.body,
                        source: Source::Builtin,
                        dir: None,
                    });
                }
                Err(e) => {
                    tracing::warn!(skill = %name, problem = %e, "built-in skill skipped");
                    skipped.push(Skipped { file: PathBuf::from(format!("built-in {name}")), problem: e.to_string() });
                }
            }
        }
        c.reports.push(DirReport {
            source: Source::Builtin,
            path: PathBuf::new(),
            state: DirState::Scanned { found, skipped },
        });
        for root in roots {
            let state = c.scan_root(root);
            c.reports.push(DirReport { source: root.source, path: root.path.clone(), state });
        }
        c
    }

    fn insert(&mut self, skill: Skill) {
        if let Some(old) = self.skills.get(&skill.name) {
            tracing::debug!(skill = %skill.name, from = %old.source, by = %skill.source, "skill overridden");
        }
        self.skills.insert(skill.name.clone(), Arc::new(skill));
    }

    fn scan_root(&mut self, root: &Root) -> DirState {
        match std::fs::metadata(&root.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return DirState::Missing,
            Err(e) => return DirState::Unusable(format!("cannot be read: {e}")),
            Ok(m) if !m.is_dir() => return DirState::Unusable("is a file, not a folder".into()),
            Ok(_) => {}
        }
        let entries = match std::fs::read_dir(&root.path) {
            Ok(rd) => rd,
            Err(e) => return DirState::Unusable(format!("cannot be listed: {e}")),
        };
        let mut found = Vec::new();
        let mut skipped = Vec::new();
        for dir in skill_dirs(entries) {
            let folder = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let file = dir.join("SKILL.md");
            match read_skill(&file, &folder) {
                Ok(None) => {}
                Ok(Some(p)) => {
                    found.push(p.name.clone());
                    self.insert(Skill {
                        name: p.name,
                        description: p.description,
                        allowed_tools: p.allowed_tools,
                        body: p.body,
                        source: root.source,
                        dir: Some(dir),
                    });
                }
                Err(problem) => {
                    tracing::warn!(file = %file.display(), %problem, "invalid SKILL.md skipped");
                    skipped.push(Skipped { file, problem });
                }
            }
        }
        DirState::Scanned { found, skipped }
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Skill>> {
        self.skills.get(name)
    }

    /// The skills in name order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Skill>> {
        self.skills.values()
    }

    pub fn names(&self) -> Vec<&str> {
        self.skills.keys().map(String::as_str).collect()
    }

    pub fn len(&self) -> usize {
        self.skills.len()
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// One report per source, in priority order (built-in first).
    pub fn reports(&self) -> &[DirReport] {
        &self.reports
    }
}

/// The subfolders of a skills folder, sorted, hidden ones left out, at most [`MAX_ENTRIES`].
fn skill_dirs(entries: std::fs::ReadDir) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = entries
        .take(MAX_ENTRIES)
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// A folder's SKILL.md parsed: `Ok(None)` when the folder has none (it is not a skill).
fn read_skill(file: &Path, folder: &str) -> Result<Option<super::parse::Parsed>, String> {
    let meta = match std::fs::metadata(file) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot be read: {e}")),
    };
    if !meta.is_file() {
        return Err("is not a regular file".into());
    }
    let too_large = |bytes| ParseError::TooLarge { bytes, max: MAX_SKILL_BYTES }.to_string();
    if meta.len() > MAX_SKILL_BYTES as u64 {
        return Err(too_large(meta.len() as usize));
    }
    let mut bytes = Vec::new();
    let read = std::fs::File::open(file).and_then(|f| f.take(MAX_SKILL_BYTES as u64 + 1).read_to_end(&mut bytes));
    if let Err(e) = read {
        return Err(format!("cannot be read: {e}"));
    }
    parse_bytes(&bytes, folder).map(Some).map_err(|e| e.to_string())
}

/// What a scan depends on: each root, each subfolder and each SKILL.md with its modification
/// time and size (`None` when absent).
type Stamp = Vec<(PathBuf, Option<(SystemTime, u64)>)>;

fn stamp(roots: &[Root]) -> Stamp {
    let of = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()));
    let mut out = Vec::new();
    for root in roots {
        out.push((root.path.clone(), of(&root.path)));
        let Ok(entries) = std::fs::read_dir(&root.path) else { continue };
        for dir in skill_dirs(entries) {
            out.push((dir.clone(), of(&dir)));
            let file = dir.join("SKILL.md");
            out.push((file.clone(), of(&file)));
        }
    }
    out
}

struct Cached {
    stamp: Stamp,
    /// False when something in `stamp` changed within [`SETTLE`] of the scan: scan again.
    settled: bool,
    catalog: Arc<Catalog>,
}

/// The live catalog: [`Skills::current`] returns the last scan while nothing changed, and scans
/// again when a folder or SKILL.md did.
pub struct Skills {
    roots: Vec<Root>,
    cache: Mutex<Option<Cached>>,
    scans: std::sync::atomic::AtomicU64,
}

impl Skills {
    pub fn new(roots: Vec<Root>) -> Self {
        Self { roots, cache: Mutex::new(None), scans: Default::default() }
    }

    /// Only the built-in skills.
    pub fn builtin_only() -> Self {
        Self::new(Vec::new())
    }

    pub fn roots(&self) -> &[Root] {
        &self.roots
    }

    /// The catalog as the folders are now. Blocking (file system calls); from async code use
    /// [`Skills::load`].
    pub fn current(&self) -> Arc<Catalog> {
        let stamp = stamp(&self.roots);
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cache.as_ref().filter(|c| c.settled && c.stamp == stamp) {
            return c.catalog.clone();
        }
        let started = SystemTime::now();
        let catalog = Arc::new(Catalog::scan(&self.roots));
        self.scans.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let newest = stamp.iter().filter_map(|(_, m)| m.map(|(t, _)| t)).max();
        let settled = newest.is_none_or(|t| t + SETTLE < started);
        *cache = Some(Cached { stamp, settled, catalog: catalog.clone() });
        catalog
    }

    /// [`Skills::current`] off the async runtime's threads.
    pub async fn load(self: &Arc<Self>) -> Arc<Catalog> {
        let me = self.clone();
        match tokio::task::spawn_blocking(move || me.current()).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "skills scan failed; using only the built-in skills");
                Arc::new(Catalog::scan(&[]))
            }
        }
    }

    /// How many times the folders were actually read (not answered from the last scan).
    pub fn scans(&self) -> u64 {
        self.scans.load(std::sync::atomic::Ordering::Relaxed)
    }
}
