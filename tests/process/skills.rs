//! `butler skills list|show NAME` and the skill lines of `butler doctor`, through the real
//! binary: the built-in skills, `<data dir>/skills` and `[skills] dirs` (with `~`), overriding
//! by name, skipped files named with their problem, and bad `[skills]` config naming the key.

use crate::support::proc::Deployment;
use std::path::Path;
use std::process::Output;

fn write_skill(root: &Path, folder: &str, text: &str) {
    std::fs::create_dir_all(root.join(folder)).unwrap();
    std::fs::write(root.join(folder).join("SKILL.md"), text).unwrap();
}

fn out(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// A deployment with a data-dir skill `alpha`, `~/extra` holding an override of
/// `morning-briefing` and a broken `broken/SKILL.md`.
fn deployment() -> Deployment {
    let dep = Deployment::new("[skills]\ndirs = [\"~/extra\"]\n");
    let home = dep.dir.path();
    write_skill(
        &home.join(".local/share/butler/skills"),
        "alpha",
        "---\nname: alpha\ndescription: Alpha from the data dir.\n---\nAlpha body.\n",
    );
    write_skill(
        &home.join("extra"),
        "morning-briefing",
        "---\nname: morning-briefing\ndescription: My own briefing.\nallowed-tools: now recall\n---\nMy briefing body.\n",
    );
    std::fs::write(home.join("extra/morning-briefing/template.md"), "template").unwrap();
    write_skill(&home.join("extra"), "broken", "no front matter here\n");
    dep
}

#[test]
fn skills_list_shows_each_skill_with_its_source_in_name_order() {
    let dep = deployment();
    let o = dep.command(&["skills", "list"]).output().unwrap();
    let (stdout, stderr) = out(&o);
    assert!(o.status.success(), "{stderr}");
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .skip(1)
        .map(|l| l.split("  ").filter(|c| !c.trim().is_empty()).map(str::trim).collect())
        .collect();
    let want = [
        vec!["alpha", "data dir", "Alpha from the data dir."],
        vec!["morning-briefing", "skills.dirs[0]", "My own briefing."],
    ];
    assert_eq!(rows[..2], want[..], "{stdout}");
    assert_eq!(rows[2][..2], ["summarize-thread", "built-in"], "{stdout}");
    assert_eq!(rows.len(), 3, "{stdout}");
    let broken = dep.dir.path().join("extra/broken/SKILL.md");
    assert!(stderr.contains(&format!("skipped {}: no front matter", broken.display())), "{stderr}");
}

#[test]
fn skills_show_prints_one_skill_and_a_missing_one_exits_1() {
    let dep = deployment();
    let cases = [
        (
            "morning-briefing",
            vec![
                "source: skills.dirs[0]",
                "allowed-tools: now recall skill",
                "files: template.md",
                "My briefing body.",
            ],
        ),
        (
            "summarize-thread",
            vec!["source: built-in (built-in)", "allowed-tools: all", "files: none", "# Summarize a thread"],
        ),
        ("alpha", vec!["source: data dir", "description: Alpha from the data dir.", "Alpha body."]),
    ];
    for (name, wants) in cases {
        let o = dep.command(&["skills", "show", name]).output().unwrap();
        let (stdout, stderr) = out(&o);
        assert!(o.status.success(), "{name}: {stderr}");
        assert!(stdout.starts_with(&format!("name: {name}\n")), "{stdout}");
        for w in wants {
            assert!(stdout.contains(w), "{name}: want {w:?} in\n{stdout}");
        }
    }
    let o = dep.command(&["skills", "show", "nope"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(out(&o).1.contains("no skill `nope`"), "{}", out(&o).1);
}

#[test]
fn doctor_reports_each_skill_source() {
    let dep = deployment();
    let o = dep.command(&["doctor"]).output().unwrap();
    let (stdout, _) = out(&o);
    let extra = dep.dir.path().join("extra");
    let wants = [
        "[ ok ] skills (built-in): 2 skill(s): summarize-thread, morning-briefing (overridden)".to_string(),
        format!(
            "[ ok ] skills (data dir {}): 1 skill(s): alpha",
            dep.dir.path().join(".local/share/butler/skills").display()
        ),
        format!("[warn] skills (skills.dirs[0] {}): 1 skill(s): morning-briefing; 1 skipped", extra.display()),
        format!("skipped {}: no front matter", extra.join("broken/SKILL.md").display()),
    ];
    for w in wants {
        assert!(stdout.contains(&w), "want {w:?} in\n{stdout}");
    }
}

#[test]
fn bad_skills_config_names_the_key_and_exits_2() {
    let dep = Deployment::new("");
    let file = dep.dir.path().join("not-a-dir.txt");
    std::fs::write(&file, "x").unwrap();
    let cases = [
        ("[skills]\ndir = [\"x\"]\n".to_string(), "skills.dir"),
        ("[skills]\ndirs = \"x\"\n".to_string(), "skills.dirs"),
        (format!("[skills]\ndirs = [\"{}\"]\n", file.display()), "skills.dirs[0]"),
        ("[skills]\ndirs = [\"/tmp\", \"\"]\n".to_string(), "skills.dirs[1]"),
    ];
    for (extra, key) in cases {
        let dep = Deployment::new(&extra);
        let o = dep.command(&["skills", "list"]).output().unwrap();
        let (_, stderr) = out(&o);
        assert_eq!(o.status.code(), Some(2), "{extra}: {stderr}");
        assert!(stderr.contains(key), "{extra}: want {key} in {stderr}");
    }
    // A folder that does not exist (yet) is not an error.
    let dep = Deployment::new("[skills]\ndirs = [\"/definitely/not/here\"]\n");
    assert!(dep.command(&["skills", "list"]).output().unwrap().status.success());
}
