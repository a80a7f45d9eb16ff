//! Front matter cases, as a table of SKILL.md text -> the skill or the error; hostile YAML must
//! come back as an error, never a panic or an endless parse.

use super::*;

fn doc(front: &str, body: &str) -> String {
    format!("---\n{front}\n---\n{body}")
}

#[test]
fn valid_skills() {
    let long_desc = "d".repeat(MAX_DESCRIPTION);
    let max_name = format!("a{}", "-b".repeat(31)); // 63 characters
    let cases: Vec<(String, &str, Parsed)> = vec![
        (
            doc("name: demo\ndescription: Does a demo.", "# Demo\n\nSteps.\n"),
            "demo",
            Parsed {
                name: "demo".into(),
                description: "Does a demo.".into(),
                allowed_tools: None,
                body: "# Demo\n\nSteps.".into(),
            },
        ),
        (
            "\u{feff}---\r\nname: crlf\r\ndescription: \"Windows line ends\"\r\n---\r\nBody\r\n".into(),
            "crlf",
            Parsed {
                name: "crlf".into(),
                description: "Windows line ends".into(),
                allowed_tools: None,
                body: "Body".into(),
            },
        ),
        (
            doc("name: a1-b2\ndescription: >\n  Folded\n  text.\nlicense: MIT\nmetadata:\n  author: me", ""),
            "a1-b2",
            Parsed { name: "a1-b2".into(), description: "Folded text.".into(), allowed_tools: None, body: "".into() },
        ),
        (
            doc("name: spaced\ndescription: x\nallowed-tools: now recall  web_fetch", "b"),
            "spaced",
            Parsed {
                name: "spaced".into(),
                description: "x".into(),
                allowed_tools: Some(vec!["now".into(), "recall".into(), "web_fetch".into()]),
                body: "b".into(),
            },
        ),
        (
            doc("name: commas\ndescription: x\nallowed-tools: \"now, files__*\"", "b"),
            "commas",
            Parsed {
                name: "commas".into(),
                description: "x".into(),
                allowed_tools: Some(vec!["now".into(), "files__*".into()]),
                body: "b".into(),
            },
        ),
        (
            doc("name: listed\ndescription: x\nallowed-tools:\n  - now\n  - recall", "b"),
            "listed",
            Parsed {
                name: "listed".into(),
                description: "x".into(),
                allowed_tools: Some(vec!["now".into(), "recall".into()]),
                body: "b".into(),
            },
        ),
        (
            doc("name: flow\ndescription: x\nallowed-tools: [now]", "b"),
            "flow",
            Parsed {
                name: "flow".into(),
                description: "x".into(),
                allowed_tools: Some(vec!["now".into()]),
                body: "b".into(),
            },
        ),
        (
            doc("name: none\ndescription: x\nallowed-tools: \"\"", "b"),
            "none",
            Parsed { name: "none".into(), description: "x".into(), allowed_tools: Some(vec![]), body: "b".into() },
        ),
        (
            doc(&format!("name: longest\ndescription: {long_desc}"), "b"),
            "longest",
            Parsed { name: "longest".into(), description: long_desc.clone(), allowed_tools: None, body: "b".into() },
        ),
        (
            doc(&format!("name: {max_name}\ndescription: x"), "b"),
            max_name.as_str(),
            Parsed { name: max_name.clone(), description: "x".into(), allowed_tools: None, body: "b".into() },
        ),
        (
            "---\nname: dots\ndescription: x\n...\nbody --- not a fence\n".into(),
            "dots",
            Parsed {
                name: "dots".into(),
                description: "x".into(),
                allowed_tools: None,
                body: "body --- not a fence".into(),
            },
        ),
    ];
    for (text, folder, want) in cases {
        assert_eq!(parse_skill(&text, folder), Ok(want), "{text:?}");
    }
}

#[test]
fn invalid_skills() {
    let name65 = "a".repeat(65);
    let cases: Vec<(String, &str, ParseError)> = vec![
        ("# Just markdown\n".into(), "x", ParseError::NoFrontMatter),
        ("".into(), "x", ParseError::NoFrontMatter),
        ("\n---\nname: x\ndescription: y\n---\n".into(), "x", ParseError::NoFrontMatter),
        ("---\nname: x\ndescription: y\n".into(), "x", ParseError::Unclosed),
        (doc("", "b"), "x", ParseError::MissingName),
        (doc("description: y", "b"), "x", ParseError::MissingName),
        (doc("name: \"  \"\ndescription: y", "b"), "x", ParseError::MissingName),
        (doc("name: x", "b"), "x", ParseError::MissingDescription),
        (doc("name: x\ndescription: \"\"", "b"), "x", ParseError::MissingDescription),
        (
            doc("name: other\ndescription: y", "b"),
            "folder",
            ParseError::NameMismatch { name: "other".into(), folder: "folder".into() },
        ),
        (
            doc("name: Big\ndescription: y", "Big"),
            "Big",
            ParseError::BadName { name: "Big".into(), why: "may hold only a-z, 0-9 and `-`" },
        ),
        (
            doc("name: a_b\ndescription: y", "a_b"),
            "a_b",
            ParseError::BadName { name: "a_b".into(), why: "may hold only a-z, 0-9 and `-`" },
        ),
        (
            doc("name: ../etc\ndescription: y", "x"),
            "x",
            ParseError::BadName { name: "../etc".into(), why: "may hold only a-z, 0-9 and `-`" },
        ),
        (
            doc("name: -a\ndescription: y", "-a"),
            "-a",
            ParseError::BadName { name: "-a".into(), why: "must not start or end with `-`" },
        ),
        (
            doc("name: a--b\ndescription: y", "a--b"),
            "a--b",
            ParseError::BadName { name: "a--b".into(), why: "must not contain `--`" },
        ),
        (
            doc(&format!("name: {name65}\ndescription: y"), &name65),
            &name65,
            ParseError::BadName { name: name65.clone(), why: "is longer than 64 characters" },
        ),
        (
            doc(&format!("name: x\ndescription: {}", "d".repeat(1025)), "b"),
            "x",
            ParseError::DescriptionTooLong { chars: 1025, max: MAX_DESCRIPTION },
        ),
        (
            doc("name: x\ndescription: y\nallowed-tools: Bash(git:*)", "b"),
            "x",
            ParseError::BadAllowedTools(
                "\"Bash(git:*)\" is not a tool name (letters, digits, `_`, `-`, at most 64, `*` as a wildcard)".into(),
            ),
        ),
        (
            doc(&format!("name: x\ndescription: y\nallowed-tools: \"{}\"", "t ".repeat(129)), "b"),
            "x",
            ParseError::BadAllowedTools("129 entries; at most 128".into()),
        ),
    ];
    for (text, folder, want) in cases {
        assert_eq!(parse_skill(&text, folder), Err(want), "{text:?}");
    }
}

/// Errors whose exact text comes from the YAML parser: only the variant is pinned.
#[test]
fn malformed_and_hostile_yaml_is_an_error_not_a_panic() {
    let bomb = "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n\
                d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n\
                g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nname: x\ndescription: y";
    let deep_flow = format!("name: x\ndescription: y\nz: {}{}", "[".repeat(5000), "]".repeat(5000));
    let deep_block: String = (0..100).map(|i| format!("{}k{i}:\n", "  ".repeat(i))).collect();
    let cases: Vec<(&str, String)> = vec![
        ("not a mapping", doc("- a\n- b", "")),
        ("scalar", doc("just text", "")),
        ("bad indentation", doc("name: x\n description: y\n  : :", "")),
        ("name is a map", doc("name: {a: 1}\ndescription: y", "")),
        ("tab soup", doc("\t\t:\t-", "")),
        ("unknown alias", doc("name: *nope\ndescription: y", "")),
        ("anchor bomb", doc(bomb, "")),
        ("deep flow nesting", doc(&deep_flow, "")),
        ("deep block nesting", doc(&format!("name: x\ndescription: y\n{deep_block}"), "")),
        ("two documents", doc("name: x\ndescription: y\n---\nname: z", "")),
        ("duplicate key", doc("name: x\nname: x\ndescription: y", "")),
    ];
    for (what, text) in cases {
        match parse_skill(&text, "x") {
            Err(ParseError::Yaml(msg)) => assert!(!msg.is_empty() && msg.chars().count() <= 301, "{what}: {msg}"),
            // The second `---` closes the front matter: the rest is body.
            Ok(p) if what == "two documents" => assert!(p.body.starts_with("name: z"), "{}", p.body),
            other => panic!("{what}: expected a YAML error, got {other:?}"),
        }
    }
}

#[test]
fn sizes_are_capped_before_parsing() {
    let huge_front = doc(&format!("name: x\ndescription: y\npad: \"{}\"", "p".repeat(MAX_FRONT_MATTER_BYTES)), "");
    assert!(matches!(parse_skill(&huge_front, "x"), Err(ParseError::FrontMatterTooLarge { .. })));
    let huge_file = doc("name: x\ndescription: y", &"b".repeat(MAX_SKILL_BYTES));
    assert!(matches!(parse_skill(&huge_file, "x"), Err(ParseError::TooLarge { .. })));
    assert!(matches!(parse_bytes(huge_file.as_bytes(), "x"), Err(ParseError::TooLarge { .. })));
    assert_eq!(parse_bytes(b"---\nname: x\xff\n---\n", "x"), Err(ParseError::NotUtf8));
    // A body just under the cap is fine.
    let big_body = doc("name: x\ndescription: y", &"b".repeat(MAX_SKILL_BYTES - 100));
    assert!(parse_skill(&big_body, "x").is_ok());
}

#[test]
fn error_messages_say_what_to_do() {
    let cases = [
        (ParseError::MissingName, "add `name: <the folder's name>`"),
        (ParseError::NoFrontMatter, "must start with a line `---`"),
        (ParseError::NameMismatch { name: "a".into(), folder: "b".into() }, "differs from its folder \"b\""),
        (ParseError::DescriptionTooLong { chars: 2000, max: 1024 }, "2000 characters long; at most 1024"),
    ];
    for (e, want) in cases {
        assert!(e.to_string().contains(want), "{e}");
    }
}
