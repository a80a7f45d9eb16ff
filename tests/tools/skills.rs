//! Skills on real folders in a temp dir: the priority order of the sources and overriding by
//! name, edits and new skills seen without a restart, invalid SKILL.md files skipped with a
//! warning naming the file, and the `skill` tool loading a body, listing and reading the other
//! files of its folder and refusing every way out of it.

use super::{err_text, Harness};
use butler::skills::{prompt_section, Catalog, DirState, Root, SkillTool, Skills, Source};
use butler::tools::Tool;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Writes `<root>/<name>/SKILL.md` with that name and description.
fn skill(root: &Path, name: &str, description: &str, body: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n"))
        .unwrap();
    dir
}

fn roots(tmp: &Path, n_dirs: usize) -> Vec<Root> {
    let mut out = vec![Root { source: Source::DataDir, path: tmp.join("data/skills") }];
    out.extend((0..n_dirs).map(|i| Root { source: Source::Dir(i), path: tmp.join(format!("dir{i}")) }));
    out
}

#[test]
fn sources_in_priority_order_and_a_later_one_overrides_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    skill(&t.join("data/skills"), "summarize-thread", "data dir's own summary", "data body");
    skill(&t.join("data/skills"), "alpha", "alpha from data", "a");
    skill(&t.join("dir0"), "alpha", "alpha from dir0", "a0");
    skill(&t.join("dir0"), "beta", "beta from dir0", "b0");
    skill(&t.join("dir1"), "beta", "beta from dir1", "b1");
    skill(&t.join("dir1"), "gamma", "gamma from dir1", "g1");
    let catalog = Skills::new(roots(t, 2)).current();
    let cases = [
        ("morning-briefing", Source::Builtin, None),
        ("summarize-thread", Source::DataDir, Some("data dir's own summary")),
        ("alpha", Source::Dir(0), Some("alpha from dir0")),
        ("beta", Source::Dir(1), Some("beta from dir1")),
        ("gamma", Source::Dir(1), Some("gamma from dir1")),
    ];
    for (name, source, description) in cases {
        let s = catalog.get(name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(s.source, source, "{name}");
        if let Some(d) = description {
            assert_eq!(s.description, d, "{name}");
        }
    }
    assert_eq!(catalog.names(), ["alpha", "beta", "gamma", "morning-briefing", "summarize-thread"]);
    // The prompt holds names and descriptions in name order, never a body.
    let prompt = prompt_section(&catalog);
    let order: Vec<usize> = catalog.names().iter().map(|n| prompt.find(&format!("`{n}`")).unwrap()).collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{prompt}");
    assert!(prompt.contains("- `beta`: beta from dir1\n") && !prompt.contains("beta from dir0"), "{prompt}");
    assert!(
        !prompt.contains("b1") && !prompt.contains("data body") && !prompt.contains("# Morning briefing"),
        "{prompt}"
    );
    assert_eq!(prompt, prompt_section(&Skills::new(roots(t, 2)).current()), "byte-stable");
    assert_eq!(prompt_section(&Catalog::default()), "");
    // A missing folder is fine; each source reports what it held.
    let reports = Skills::new(roots(t, 3)).current().reports().to_vec();
    assert_eq!(
        reports.iter().map(|r| r.source).collect::<Vec<_>>(),
        [Source::Builtin, Source::DataDir, Source::Dir(0), Source::Dir(1), Source::Dir(2)]
    );
    assert_eq!(reports[4].state, DirState::Missing);
    assert!(
        matches!(&reports[2].state, DirState::Scanned { found, skipped } if found == &["alpha", "beta"] && skipped.is_empty())
    );
}

/// Sets the modification time of every file and folder under `root` one hour back, so the
/// catalog may trust an unchanged tree.
fn age(root: &Path) {
    let old = SystemTime::now() - Duration::from_secs(3600);
    fn walk(p: &Path, old: SystemTime) {
        if p.is_dir() {
            for e in std::fs::read_dir(p).unwrap() {
                walk(&e.unwrap().path(), old);
            }
        }
        std::fs::File::open(p).unwrap().set_modified(old).unwrap();
    }
    walk(root, old);
}

#[test]
fn edited_added_and_removed_skills_are_seen_without_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("dir0");
    let dir = skill(&root, "notes", "version one", "body one");
    let skills = Skills::new(vec![Root { source: Source::Dir(0), path: root.clone() }]);
    assert_eq!(skills.current().get("notes").unwrap().description, "version one");
    // Edited in place, same length, right away.
    std::fs::write(dir.join("SKILL.md"), "---\nname: notes\ndescription: version two\n---\nbody two\n").unwrap();
    let c = skills.current();
    assert_eq!(
        (c.get("notes").unwrap().description.as_str(), c.get("notes").unwrap().body.as_str()),
        ("version two", "body two")
    );
    // Added.
    skill(&root, "added", "new one", "b");
    assert!(skills.current().get("added").is_some());
    // Removed.
    std::fs::remove_dir_all(root.join("added")).unwrap();
    assert!(skills.current().get("added").is_none());
    // An unchanged, settled tree is answered from the last scan; a change is read again.
    age(&root);
    let before = skills.current();
    let scans = skills.scans();
    let again = skills.current();
    assert_eq!(skills.scans(), scans, "nothing changed: no new scan");
    assert!(Arc::ptr_eq(&before, &again));
    std::fs::write(dir.join("SKILL.md"), "---\nname: notes\ndescription: version three\n---\nb\n").unwrap();
    assert_eq!(skills.current().get("notes").unwrap().description, "version three");
    assert_eq!(skills.scans(), scans + 1);
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn invalid_skill_files_are_skipped_with_a_warning_naming_the_file_and_the_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("dir0");
    skill(&root, "good", "fine", "b");
    let cases: [(&str, &str, &str); 5] = [
        ("no-front", "# just markdown\n", "no front matter"),
        ("mismatch", "---\nname: other\ndescription: x\n---\n", "differs from its folder \"mismatch\""),
        ("no-desc", "---\nname: no-desc\n---\n", "`description` is missing"),
        ("bomb", "---\na: &a [x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c]\nname: bomb\ndescription: x\n---\n", "not valid YAML"),
        ("Upper", "---\nname: Upper\ndescription: x\n---\n", "may hold only a-z"),
    ];
    for (folder, text, _) in cases {
        std::fs::create_dir_all(root.join(folder)).unwrap();
        std::fs::write(root.join(folder).join("SKILL.md"), text).unwrap();
    }
    // A folder without SKILL.md and a stray file are not skills, and not problems.
    std::fs::create_dir_all(root.join("assets")).unwrap();
    std::fs::write(root.join("README.md"), "notes").unwrap();
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .finish();
    let catalog = tracing::subscriber::with_default(subscriber, || {
        Skills::new(vec![Root { source: Source::Dir(0), path: root.clone() }]).current()
    });
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(catalog.get("good").is_some(), "valid siblings still load");
    let DirState::Scanned { found, skipped } = &catalog.reports()[1].state else { panic!("not scanned") };
    assert_eq!(found, &["good"]);
    assert_eq!(skipped.len(), cases.len(), "{skipped:?}");
    for (folder, _, problem) in cases {
        let file = root.join(folder).join("SKILL.md");
        assert!(catalog.get(&folder.to_lowercase()).is_none() || folder == "good", "{folder} must not load");
        let s = skipped.iter().find(|s| s.file == file).unwrap_or_else(|| panic!("{folder} not reported"));
        assert!(s.problem.contains(problem), "{folder}: {}", s.problem);
        let line = log
            .lines()
            .find(|l| l.contains(&file.display().to_string()))
            .unwrap_or_else(|| panic!("no warning for {folder}:\n{log}"));
        assert!(line.contains("WARN") && line.contains(problem), "{line}");
    }
}

/// A skill `tool-test` in `<tmp>/dir0` with files, a hidden file, and links out of its folder.
fn tool_fixture(tmp: &Path) -> (SkillTool, PathBuf) {
    let root = tmp.join("dir0");
    let dir = skill(&root, "tool-test", "for the tool", "Step one.\nStep two.");
    std::fs::write(dir.join("reference.md"), "the reference").unwrap();
    std::fs::create_dir_all(dir.join("scripts/deep")).unwrap();
    std::fs::write(dir.join("scripts/run.sh"), "echo hi").unwrap();
    std::fs::write(dir.join("scripts/deep/data.csv"), "a,b").unwrap();
    std::fs::write(dir.join(".env"), "TOKEN=secret").unwrap();
    std::fs::write(dir.join("binary.bin"), [0xff, 0xfe, 0x00]).unwrap();
    std::fs::write(tmp.join("outside.txt"), "outside secret").unwrap();
    skill(&root, "neighbour", "another skill", "neighbour body");
    std::os::unix::fs::symlink(tmp.join("outside.txt"), dir.join("link-out.txt")).unwrap();
    std::os::unix::fs::symlink(tmp, dir.join("dir-out")).unwrap();
    std::os::unix::fs::symlink(dir.join("reference.md"), dir.join("link-in.md")).unwrap();
    let skills = Arc::new(Skills::new(vec![Root { source: Source::Dir(0), path: root }]));
    (SkillTool::new(skills), dir)
}

#[tokio::test]
async fn the_skill_tool_loads_the_body_and_lists_the_other_files() {
    let h = Harness::new().await;
    let (tool, _dir) = tool_fixture(h.tmp.path());
    assert!(tool.spec().read_only);
    let out = h.call(&tool, json!({"name": "tool-test"})).await.unwrap();
    assert!(out.contains("Step one.\nStep two."), "{out}");
    let listed: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("- ")).collect();
    assert_eq!(
        listed,
        ["binary.bin", "link-in.md", "reference.md", "scripts/deep/data.csv", "scripts/run.sh"],
        "{out}"
    );
    let reads = [
        ("reference.md", "the reference"),
        ("./scripts/run.sh", "echo hi"),
        ("scripts/deep/data.csv", "a,b"),
        ("link-in.md", "the reference"),
    ];
    for (file, want) in reads {
        assert_eq!(h.call(&tool, json!({"name": "tool-test", "file": file})).await.unwrap(), want, "{file}");
    }
    // A built-in skill loads too, and has no other files.
    let out = h.call(&tool, json!({"name": "morning-briefing"})).await.unwrap();
    assert!(out.contains("# Morning briefing") && !out.contains("Other files"), "{out}");
    let e = err_text(h.call(&tool, json!({"name": "morning-briefing", "file": "x.md"})).await);
    assert!(e.contains("has no other files"), "{e}");
    let e = err_text(h.call(&tool, json!({"name": "nope"})).await);
    assert!(e.contains("no skill `nope`") && e.contains("tool-test"), "{e}");
}

#[tokio::test]
async fn the_skill_tool_refuses_every_way_out_of_the_folder() {
    let h = Harness::new().await;
    let (tool, dir) = tool_fixture(h.tmp.path());
    let outside = h.tmp.path().join("outside.txt");
    let cases = [
        ("../neighbour/SKILL.md", "`..` is not allowed"),
        ("scripts/../../neighbour/SKILL.md", "`..` is not allowed"),
        ("..", "`..` is not allowed"),
        ("/etc/passwd", "absolute paths are not allowed"),
        (outside.to_str().unwrap(), "absolute paths are not allowed"),
        ("link-out.txt", "leads outside the skill's folder"),
        ("dir-out/outside.txt", "leads outside the skill's folder"),
        (".env", "hidden files"),
        ("scripts", "not a file"),
        ("a\0b", "give a file name"),
        ("", "give a file name"),
        ("missing.md", "no file `missing.md`"),
        ("binary.bin", "not a text file"),
    ];
    for (file, want) in cases {
        let e = err_text(h.call(&tool, json!({"name": "tool-test", "file": file})).await);
        assert!(e.contains(want), "{file:?}: {e}");
        assert!(!e.contains("outside secret") && !e.contains("TOKEN=secret"), "{file:?}: {e}");
    }
    // The permission engine sees where a file read would go.
    let action = tool.action(&h.ctx, &json!({"name": "tool-test", "file": "reference.md"}));
    assert_eq!(action.paths, [butler::tools::builtin::plain::lexical_path(&dir, "reference.md")]);
}
