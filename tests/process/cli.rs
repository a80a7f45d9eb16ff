//! `butler config check`, `butler migrate` and `butler doctor` as a user runs them: exit codes,
//! messages that name the problem and the fix, and secrets that never appear.

use super::{llm_section, query};
use crate::support::fake_llm::FakeLlm;
use crate::support::proc::Deployment;
use std::process::Output;

fn run(dep: &Deployment, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = dep.command(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run butler")
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn config_check_prints_the_effective_config_with_secrets_masked() {
    let dep = Deployment::new(
        "[llm]\nmodel = \"gpt-4o-mini\"\napi_key = \"${TEST_LLM_KEY}\"\n\n[channels.web]\ntoken = \"file-web-token-123\"\n",
    );
    let out = run(
        &dep,
        &["config", "check"],
        &[("TEST_LLM_KEY", "sk-interpolated-secret-456"), ("BUTLER_LLM__BASE_URL", "http://127.0.0.1:9/v1")],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("is valid"), "{stderr}");
    assert!(stdout.contains("base_url = \"http://127.0.0.1:9/v1\""), "env override applied:\n{stdout}");
    assert!(stdout.contains("model = \"gpt-4o-mini\""));
    for secret in ["sk-interpolated-secret-456", "file-web-token-123"] {
        assert!(!stdout.contains(secret) && !stderr.contains(secret), "{secret} leaked:\n{stdout}");
    }
    assert!(stdout.contains("********"));
}

#[test]
fn config_errors_name_the_key_and_the_file_and_exit_2() {
    let cases = [
        ("[llm]\nbse_url = \"x\"\n", "llm.bse_url"),
        ("[limits]\nmax_iterations = \"many\"\n", "limits.max_iterations"),
        ("[agent]\ntimezone = \"Mars/Base\"\n", "agent.timezone"),
        ("[llm]\napi_key = \"${DEFINITELY_UNSET_VAR}\"\n", "DEFINITELY_UNSET_VAR"),
        // Sections whose checks live in their components still fail `config check`.
        ("[permissions]\ndenied_tools = [\"\"]\n", "permissions.denied_tools[0]"),
        ("[tools.http_request]\nallowed_hosts = [\"localhost\"]\n", "tools.http_request.allowed_hosts[0]"),
        ("[[schedules]]\nname = \"b\"\ncron = \"0 8 * *\"\nprompt = \"p\"\ntarget = \"web:b\"\n", "schedules[0].cron"),
        // A budget with a model nobody prices cannot hold: refused, naming the model and the key.
        ("[llm]\nmodel = \"llama3.1\"\n[limits]\nmax_usd_per_day = 5.0\n", "llm.input_price_per_mtok"),
        ("[llm]\nmodel = \"llama3.1\"\n[limits]\nmax_usd_per_day = 5.0\n", "`llama3.1` has no known price"),
    ];
    for (extra, key) in cases {
        let dep = Deployment::new(extra);
        let out = run(&dep, &["config", "check"], &[]);
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{extra}: {stderr}");
        assert!(stderr.contains(key), "{extra}: error should name {key}: {stderr}");
        assert!(stderr.contains("butler.toml"), "{extra}: error should name the file: {stderr}");
    }
    // Without a budget an unpriced model is only reported; a priced one (the book) is not.
    for (model, warned) in [("llama3.1", true), ("gpt-4o-mini", false)] {
        let dep = Deployment::new(&format!("[llm]\nmodel = \"{model}\"\n"));
        let out = run(&dep, &["config", "check"], &[]);
        let (_, stderr) = text(&out);
        assert!(out.status.success(), "{stderr}");
        assert_eq!(stderr.contains(&format!("warning: {model} (llm): no known price")), warned, "{stderr}");
    }
    // Archetype tools that match no tool are reported, naming the key (a glob that matches, or
    // one naming a configured MCP server's tools, is not).
    let archetype = |tools: &str| {
        format!(
            "[mcp]\n[[mcp.servers]]\nname = \"github\"\nurl = \"http://127.0.0.1:9/mcp\"\n\
             [[agent.archetypes]]\nname = \"scout\"\nprompt = \"Look.\"\ntools = {tools}\n"
        )
    };
    let cases = [
        (r#"["web_fetch", "recal", "gitlab__*"]"#, vec!["tools[1]: `recal` matches no tool", "tools[2]: `gitlab__*`"]),
        (r#"["web_*", "github__*", "now"]"#, vec![]),
    ];
    for (tools, warned) in cases {
        let dep = Deployment::new(&archetype(tools));
        let out = run(&dep, &["config", "check"], &[]);
        let (_, stderr) = text(&out);
        assert!(out.status.success(), "{stderr}");
        let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("agent.archetypes[0]")).collect();
        assert_eq!(lines.len(), warned.len(), "{tools}: {stderr}");
        for (line, want) in lines.iter().zip(&warned) {
            assert!(line.starts_with("config: warning: agent.archetypes[0].") && line.contains(want), "{line}");
        }
    }
    // An unknown override names the variable.
    let dep = Deployment::new("");
    let out = run(&dep, &["config", "check"], &[("BUTLER_LLM__NOPE", "1")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("BUTLER_LLM__NOPE"));
    // BUTLER_CONFIG selects the file when --config is absent.
    let mut cmd = crate::support::proc::clean_command(dep.dir.path());
    let out = cmd.args(["config", "check"]).env("BUTLER_CONFIG", &dep.config).output().unwrap();
    assert!(out.status.success());
    assert!(text(&out).1.contains(&dep.config.display().to_string()));
}

#[tokio::test]
async fn migrate_creates_the_schema() {
    let dep = Deployment::new("");
    let out = run(&dep, &["migrate"], &[]);
    assert!(out.status.success(), "{}", text(&out).1);
    let tables = query(&dep.db_url(), "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").await;
    let names: Vec<&str> = tables.iter().map(|r| r[0].as_str()).collect();
    for t in ["inbox", "outbox", "sessions", "messages", "memories", "users", "identities", "usage", "web_messages"] {
        assert!(names.contains(&t), "{t} missing from {names:?}");
    }
}

#[tokio::test]
async fn doctor_passes_only_when_everything_works() {
    let llm = FakeLlm::start().await;
    // All good; each model tier is shown.
    let tiers = "[llm.tiers.worker]\nmodel = \"small-model\"\n[llm.tiers.reasoning]\nprovider = \"anthropic\"\nmodel = \"deep-model\"\nbase_url = \"http://127.0.0.1:9\"\n";
    let embeddings = format!("[memory.embeddings]\nbase_url = \"{}\"\nmodel = \"fake-embed\"\n", llm.openai_url());
    let dep = Deployment::new(&format!("{}{tiers}{embeddings}", llm_section(&llm.openai_url())));
    let out = tokio::task::spawn_blocking(move || (run(&dep, &["doctor"], &[]), dep)).await.unwrap().0;
    let (stdout, _) = text(&out);
    assert!(out.status.success(), "{stdout}");
    for line in [
        "[ ok ] config",
        "[ ok ] database",
        "[ ok ] model (openai fake-model at http://127.0.0.1:",
        "[ ok ] model tier reasoning: anthropic deep-model at http://127.0.0.1:9\n",
        "[ ok ] model tier worker: openai small-model at http://127.0.0.1:",
        "[ ok ] web chat",
        "[ ok ] embeddings: fake-embed at http://127.0.0.1:",
        // Prices: the fake models are in no price book.
        "[warn] price: fake-model (llm): no known price",
        "[warn] price: small-model (llm.tiers.worker): no known price",
    ] {
        assert!(stdout.contains(line), "missing `{line}`:\n{stdout}");
    }
    assert!(llm.request_count() >= 1, "doctor made a real model request");

    // A wrong key, an unreachable database: each failure says what to do; exit 1; no secret shown.
    llm.require_api_key("the-right-key");
    let extra = format!(
        "{}api_key = \"sk-wrong-key-789\"\n[memory.embeddings]\nbase_url = \"{}\"\nmodel = \"fake-embed\"\napi_key = \"sk-wrong-key-789\"\n",
        llm_section(&llm.openai_url()),
        llm.openai_url()
    );
    let dep = Deployment::new(&extra);
    let text_cfg = std::fs::read_to_string(&dep.config).unwrap().replace(
        &format!("sqlite://{}", dep.dir.path().join("butler.db").display()),
        "postgres://postgres:pw-secret@127.0.0.1:1/none",
    );
    std::fs::write(&dep.config, text_cfg).unwrap();
    let out = tokio::task::spawn_blocking(move || run(&dep, &["doctor"], &[])).await.unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("[FAIL] database"), "{stdout}");
    assert!(stdout.contains("[FAIL] model"), "{stdout}");
    assert!(stdout.contains("[FAIL] embeddings") && stdout.contains("check [memory.embeddings]"), "{stdout}");
    assert!(stdout.contains("api_key"), "the fix names the key to set:\n{stdout}");
    assert!(stdout.matches("fix:").count() >= 2, "{stdout}");
    for secret in ["sk-wrong-key-789", "pw-secret"] {
        assert!(!stdout.contains(secret) && !stderr.contains(secret), "{secret} leaked:\n{stdout}\n{stderr}");
    }
}

#[tokio::test]
async fn pair_list_approve_and_deny_from_the_shell() {
    let dep = Deployment::new("");
    assert!(run(&dep, &["migrate"], &[]).status.success());
    let pool = sqlx::SqlitePool::connect(&dep.db_url()).await.unwrap();
    let now = butler::store::now_ms();
    for (code, who) in [("K7QX-M2PD", "telegram:4242"), ("HJKL-2345", "telegram:5555")] {
        sqlx::query(
            "INSERT INTO codes (kind, code, identity, display_name, conversation, created_ms, expires_ms) \
             VALUES ('pair', $1, $2, 'Someone', $2, $3, $4)",
        )
        .bind(code)
        .bind(who)
        .bind(now)
        .bind(now + 3_600_000)
        .execute(&pool)
        .await
        .unwrap();
    }
    pool.close().await;

    let out = run(&dep, &["pair", "list"], &[]);
    let (stdout, _) = text(&out);
    assert!(out.status.success());
    assert!(stdout.contains("K7QX-M2PD  telegram:4242 (Someone)"), "{stdout}");
    assert!(stdout.contains("HJKL-2345  telegram:5555"), "{stdout}");

    let out = run(&dep, &["pair", "approve", "k7qxm2pd"], &[]);
    assert!(out.status.success(), "{}", text(&out).1);
    assert!(text(&out).0.contains("approved telegram:4242"));
    let out = run(&dep, &["pair", "deny", "HJKL-2345"], &[]);
    assert!(out.status.success());
    assert!(text(&out).0.contains("declined telegram:5555"));

    // A code approved before says so (and changes nothing); a wrong code is an error that says
    // what to do.
    let out = run(&dep, &["pair", "approve", "K7QX-M2PD"], &[]);
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(text(&out).0.trim(), "K7QX-M2PD was already approved: telegram:4242 is in");
    let out = run(&dep, &["pair", "approve", "HJKL-2345"], &[]);
    assert_eq!(out.status.code(), Some(1), "a declined code is no longer waiting");
    assert!(text(&out).1.contains("butler pair list"), "{}", text(&out).1);
    assert!(text(&run(&dep, &["pair", "list"], &[])).0.contains("no pairing requests"));

    let db = dep.db_url();
    let linked =
        query(&db, "SELECT i.channel, i.platform_user_id, u.role FROM identities i JOIN users u ON u.id = i.user_id")
            .await;
    assert_eq!(linked, vec![vec!["telegram".to_string(), "4242".to_string(), "member".to_string()]]);
    let told = query(&db, "SELECT conversation, status FROM outbox").await;
    assert_eq!(told, vec![vec!["telegram:4242".to_string(), "pending".to_string()]], "the welcome waits for delivery");
}

#[tokio::test]
async fn memory_export_and_import_round_trip() {
    let dep = Deployment::new("");
    assert!(run(&dep, &["migrate"], &[]).status.success());
    let store = butler::store::connect(&dep.db_url(), 1).await.unwrap();
    let alice: butler::channel::Identity = "web:alice".parse().unwrap();
    let new = |id: &str| butler::store::NewUser {
        id: id.into(),
        display_name: None,
        role: butler::store::UserRole::Member,
        timezone: "UTC".into(),
    };
    store.user_ensure(&alice, &new("u-alice")).await.unwrap();
    store.user_ensure(&"web:bob".parse().unwrap(), &new("u-bob")).await.unwrap();
    let me = butler::store::MemoryScope::personal("u-alice");
    store.memory_add(&me, "Likes green tea", Some("test")).await.unwrap();
    store.memory_add(&me, "Lives in Porto", None).await.unwrap();
    store.close().await;

    let out = run(&dep, &["memory", "export", "--user", "web:alice"], &[]);
    assert!(out.status.success(), "{}", text(&out).1);
    let exported: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(exported["user"], "u-alice");
    let texts: Vec<&str> =
        exported["memories"].as_array().unwrap().iter().map(|m| m["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["Likes green tea", "Lives in Porto"]);

    let file = dep.dir.path().join("alice.json");
    std::fs::write(&file, &out.stdout).unwrap();
    let file = file.display().to_string();
    let out = run(&dep, &["memory", "import", "--user", "web:bob", &file], &[]);
    assert!(out.status.success(), "{}", text(&out).1);
    assert!(text(&out).0.contains("imported 2 memories for u-bob (0 already there)"), "{}", text(&out).0);
    let out = run(&dep, &["memory", "import", "--user", "u-bob", &file], &[]);
    assert!(text(&out).0.contains("imported 0 memories for u-bob (2 already there)"), "{}", text(&out).0);
    let bob = run(&dep, &["memory", "export", "--user", "u-bob"], &[]);
    let bob: serde_json::Value = serde_json::from_slice(&bob.stdout).unwrap();
    assert_eq!(bob["memories"].as_array().unwrap().len(), 2);
    // Alice still has exactly hers.
    let alice = run(&dep, &["memory", "export", "--user", "u-alice"], &[]);
    let alice: serde_json::Value = serde_json::from_slice(&alice.stdout).unwrap();
    assert_eq!(alice["memories"].as_array().unwrap().len(), 2);
    // Bad input says what to do.
    std::fs::write(dep.dir.path().join("bad.json"), "{}").unwrap();
    let bad = dep.dir.path().join("bad.json").display().to_string();
    let out = run(&dep, &["memory", "import", "--user", "u-bob", &bad], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("is not a memory export"), "{}", text(&out).1);
    let out = run(&dep, &["memory", "export", "--user", "web:nobody"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).1.contains("no user has the identity web:nobody"));
}

#[test]
fn usage_reports_by_model_and_names_a_bad_account() {
    let dep = Deployment::new("[llm]\nmodel = \"gpt-4o-mini\"\n[limits]\nmax_usd_per_day = 2.5\n");
    let out = run(&dep, &["usage"], &[]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    for part in
        ["💰 Usage (days in UTC)", "Today: nothing yet", "This month: nothing yet", "$2.50 per day (0% used today)"]
    {
        assert!(stdout.contains(part), "missing {part:?}:\n{stdout}");
    }
    // (arguments, exit code, what the message names)
    let cases: [(&[&str], i32, &str); 2] =
        [(&["usage", "--user", "nobody"], 2, "CHANNEL:ID"), (&["usage", "--user", "telegram:404"], 2, "telegram:404")];
    for (args, code, names) in cases {
        let out = run(&dep, args, &[]);
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.contains(names), "{args:?}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_reembed_embeds_everything_with_the_configured_model_and_shows_progress() {
    let llm = FakeLlm::start().await;
    let section = |model: &str| {
        format!(
            "[memory.embeddings]\nbase_url = \"{}\"\nmodel = \"{model}\"\ndimensions = 32\nbatch_size = 2\ntimeout_secs = 5\n",
            llm.openai_url()
        )
    };
    let dep = Deployment::new(&section("embed-a"));
    assert!(run(&dep, &["migrate"], &[]).status.success());
    let store = butler::store::connect(&dep.db_url(), 1).await.unwrap();
    for text in ["Likes green tea", "Lives in Porto", "Has a cat called Miso", "Runs on Sundays", "Plays the piano"] {
        store.memory_add(&butler::store::MemoryScope::personal("u-a"), text, None).await.unwrap();
    }
    store.close().await;

    // (model, what stdout says at the end)
    for model in ["embed-a", "embed-b"] {
        std::fs::write(&dep.config, std::fs::read_to_string(&dep.config).unwrap().replace("embed-a", model)).unwrap();
        let out = run(&dep, &["memory", "reembed"], &[]);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{stderr}");
        assert!(stdout.contains(&format!("embedded with {model}: 5/5 memories")), "{stdout}");
        assert!(stderr.contains("reembed: 0/5 texts embedded, 5 waiting"), "progress from the start:\n{stderr}");
        assert!(stderr.contains("reembed: 5/5 texts embedded, 0 waiting"), "progress to the end:\n{stderr}");
        let sent: Vec<_> = llm.embedding_requests().into_iter().filter(|r| r.model == model).collect();
        assert!(sent.iter().all(|r| r.inputs.len() <= 2), "bounded batches: {sent:?}");
        assert_eq!(sent.iter().map(|r| r.inputs.len()).sum::<usize>(), 5, "{model}: each text once");
    }

    // A service that keeps failing: exit 1, the reason, and what stays queued.
    std::fs::write(&dep.config, std::fs::read_to_string(&dep.config).unwrap().replace("embed-b", "embed-c")).unwrap();
    llm.fail_embeddings(usize::MAX);
    let out = run(&dep, &["memory", "reembed"], &[]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("answered HTTP 500") && stderr.contains("still queued"), "{stderr}");

    // Without [memory.embeddings]: exit 2, naming the section.
    let plain = Deployment::new("");
    let out = run(&plain, &["memory", "reembed"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("[memory.embeddings] is not configured"), "{}", text(&out).1);
}

/// `butler security audit` (issue 36, point 8): each exposure is found, named and given a fix;
/// `--json` carries the same for CI; the exit code is 1 for anything high or medium; a secret
/// written in the file is named by its key and never printed.
#[test]
fn security_audit_finds_each_exposure_and_says_what_to_change() {
    use std::os::unix::fs::PermissionsExt;
    const CANARY: &str = "sk-literalAuditCanary77";
    fn ws(dep: &Deployment) -> String {
        dep.dir.path().join("ws").display().to_string()
    }
    type Extra = fn(&Deployment) -> String;
    type Vars = Vec<(&'static str, &'static str)>;
    // (extra config, environment, file mode, the finding ids, exit code)
    let cases: Vec<(Extra, Vars, u32, Vec<&str>, i32)> = vec![
        (|_| String::new(), vec![], 0o600, vec![], 0),
        (|_| String::new(), vec![], 0o644, vec!["readable_by_others"], 1),
        (
            |_| "[channels.web]\ntoken = \"${AUDIT_WEB}\"\n".into(),
            vec![("BUTLER_SERVER__LISTEN", "0.0.0.0:18999"), ("AUDIT_WEB", "t0ken-long-enough-0123456789")],
            0o600,
            vec!["public_listen"],
            1,
        ),
        (|_| "[access]\npolicy = \"open\"\n".into(), vec![], 0o600, vec!["open_policy"], 1),
        (
            |_| "[tools.shell]\nenabled = true\nsandbox = \"none\"\n".into(),
            vec![],
            0o600,
            vec!["shell_without_sandbox"],
            1,
        ),
        (
            |_| "[[mcp.servers]]\nname = \"loose\"\ncommand = \"/bin/true\"\nsandbox = \"none\"\n".into(),
            vec![],
            0o600,
            vec!["mcp_without_sandbox"],
            1,
        ),
        (
            |_| format!("[llm]\nmodel = \"gpt-4o-mini\"\napi_key = \"{CANARY}\"\n"),
            vec![],
            0o600,
            vec!["secret_in_config_file"],
            1,
        ),
        (
            |_| "[llm]\nmodel = \"gpt-4o-mini\"\napi_key = \"${AUDIT_KEY}\"\n".into(),
            vec![("AUDIT_KEY", CANARY)],
            0o600,
            vec![],
            0,
        ),
        (
            |d| format!("[tools]\nworkspace_dir = \"{}\"\n[skills]\ndirs = [\"{}/shared-skills\"]\n", ws(d), ws(d)),
            vec![],
            0o600,
            vec!["writable_skills"],
            1,
        ),
        (|_| "[tools]\nworkspace_quota_mb = 0\n".into(), vec![], 0o600, vec!["no_workspace_quota"], 0),
    ];
    for (i, (extra, env, mode, ids, code)) in cases.into_iter().enumerate() {
        let dep = Deployment::new("");
        let written = std::fs::read_to_string(&dep.config).unwrap();
        std::fs::write(&dep.config, format!("{written}{}", extra(&dep))).unwrap();
        std::fs::set_permissions(&dep.config, std::fs::Permissions::from_mode(mode)).unwrap();
        // The data folder (here the deployment's folder) is Butler's alone, as Butler makes it.
        std::fs::set_permissions(dep.dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let out = run(&dep, &["security", "audit"], &env);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(code), "case {i}: {stdout}{stderr}");
        for id in &ids {
            let line = stdout.lines().find(|l| l.starts_with("[warn] security") || l.starts_with("[note] security"));
            assert!(line.is_some() && stdout.contains("fix: "), "case {i} {id}: {stdout}");
        }
        if ids.is_empty() {
            assert!(stdout.contains("[ ok ] security: nothing to change"), "case {i}: {stdout}");
        }
        let json = run(&dep, &["security", "audit", "--json"], &env);
        let body: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON findings");
        let got: Vec<&str> = body["findings"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap()).collect();
        assert_eq!(got, ids, "case {i}: {body}");
        assert_eq!(body["ok"], code == 0, "case {i}");
        assert_eq!(json.status.code(), Some(code));
        for place in [&stdout, &stderr, &String::from_utf8_lossy(&json.stdout).into_owned()] {
            assert!(!place.contains(CANARY), "case {i}: the secret was printed");
        }
        if ids == ["secret_in_config_file"] {
            assert!(stdout.contains("llm.api_key holds a secret written in"), "{stdout}");
        }
    }
}
