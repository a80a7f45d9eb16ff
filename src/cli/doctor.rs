//! `butler doctor`: checks everything Butler depends on, prints one line per check and, for
//! each failure, what to do. Exit code 0 only when every check passes. Never prints a secret.

use crate::config::{self, Config};
use crate::llm::{ChatMessage, ChatRequest};
use std::path::Path;
use std::time::Duration;

struct Report {
    failures: usize,
}

impl Report {
    fn ok(&self, what: &str, detail: impl std::fmt::Display) {
        println!("[ ok ] {what}: {detail}");
    }

    fn fail(&mut self, what: &str, problem: impl std::fmt::Display, fix: &str) {
        self.failures += 1;
        println!("[FAIL] {what}: {problem}");
        if !fix.is_empty() {
            println!("       fix: {fix}");
        }
    }
}

/// Runs every check; true when all pass.
pub async fn run(explicit: Option<&Path>) -> bool {
    let mut r = Report { failures: 0 };
    let (cfg, file) = match config::load(explicit, &crate::app::CONFIG_CHECKS) {
        Ok(loaded) => {
            let src = loaded
                .source
                .as_ref()
                .map_or_else(|| "built-in defaults (no config file)".to_string(), |p| p.display().to_string());
            r.ok("config", src);
            (loaded.config, loaded.source)
        }
        Err(e) => {
            r.fail("config", e, "correct the key named above, then run `butler config check`");
            println!("\n1 check failed; the others need a valid config.");
            return false;
        }
    };
    database(&mut r, &cfg).await;
    redis(&mut r, &cfg).await;
    llm(&mut r, &cfg).await;
    tiers(&r, &cfg);
    embeddings(&mut r, &cfg).await;
    web(&mut r, &cfg);
    shell_sandbox(&mut r, &cfg).await;
    match crate::hooks::doctor(&cfg.hooks).await {
        Some(Ok(detail)) => r.ok("hook sandbox", detail),
        Some(Err((problem, fix))) => r.fail("hook sandbox", problem, &fix),
        None => {}
    }
    mcp_servers(&mut r, &cfg).await;
    for (what, result) in crate::channels::builtin().doctor(&cfg.channels).await {
        match result {
            Ok(detail) => r.ok(&what, detail),
            Err((problem, fix)) => r.fail(&what, problem, &fix),
        }
    }
    for (level, what, summary, details) in super::skills::doctor_lines(&cfg) {
        let tag = match level {
            super::skills::Level::Ok => "[ ok ]",
            super::skills::Level::Warn => "[warn]",
        };
        println!("{tag} {what}: {summary}");
        for d in details {
            println!("       {d}");
        }
    }
    // What `butler security audit` finds, as warnings: a deployment choice, not a broken part.
    super::security::print_lines(&super::security::audit(&cfg, file.as_deref()));
    if r.failures == 0 {
        println!("\nall checks passed");
    } else {
        println!("\n{} check(s) failed", r.failures);
    }
    r.failures == 0
}

/// `[memory.embeddings]`, when configured: one real embedding request.
async fn embeddings(r: &mut Report, cfg: &Config) {
    let Some(e) = cfg.memory.embeddings.as_ref().filter(|_| cfg.memory.enabled) else {
        return;
    };
    let embedder = crate::memory::embed::Embedder::new(e);
    let shown = config::redact_url(e.base_url.trim());
    match embedder.embed(&["hello".to_string()], Some(Duration::from_secs(15))).await {
        Ok(v) => {
            r.ok("embeddings", format!("{} at {shown}: {} dimensions", embedder.model(), v.first().map_or(0, Vec::len)))
        }
        Err(err) => r.fail(
            "embeddings",
            err,
            "check [memory.embeddings] base_url, model and api_key (recall falls back to words meanwhile)",
        ),
    }
}

async fn database(r: &mut Report, cfg: &Config) {
    let url = cfg.database.url.expose();
    let shown = crate::store::redact_url(url);
    // Failures name the database too: which one Butler uses is the first thing to know.
    let what = format!("database ({shown})");
    let connected = tokio::time::timeout(Duration::from_secs(10), crate::store::connect(url, 1)).await;
    match connected {
        Ok(Ok(store)) => {
            match store.ping().await {
                Ok(()) => {
                    r.ok("database", &shown);
                    failed_events(&*store).await;
                }
                Err(e) => r.fail(&what, e, "check that the database server is running and reachable"),
            }
            store.close().await;
        }
        Ok(Err(e)) => r.fail(
            &what,
            e,
            "check [database] url (sqlite://path/to/file.db or postgres://user:password@host/db) and that the server is up",
        ),
        Err(_) => r.fail(&what, format!("no answer from {shown} within 10s"), "check the host and port in [database] url"),
    }
}

/// Events given up on are a warning, not a failure: Butler runs, but someone was not answered.
async fn failed_events(store: &dyn crate::store::DeadLetterStore) {
    match store.inbox_count(crate::store::InboxStatus::Failed).await {
        Ok(0) => println!("[ ok ] failed events: none"),
        Ok(n) => {
            println!("[warn] failed events: {n} inbound event(s) were given up on");
            println!("       see: butler inbox list --failed, then butler inbox retry ID");
        }
        // Not migrated yet: nothing to count.
        Err(_) => {}
    }
}

async fn redis(r: &mut Report, cfg: &Config) {
    let Some(redis) = &cfg.redis else { return };
    let url = redis.url.expose();
    let hostport = url
        .split("://")
        .nth(1)
        .map(|rest| rest.rsplit('@').next().unwrap_or(rest))
        .map(|rest| rest.split('/').next().unwrap_or(rest).to_string())
        .unwrap_or_default();
    let hostport = if hostport.contains(':') { hostport } else { format!("{hostport}:6379") };
    // The real client, as `serve` connects: the URL's password and database are used.
    let probe = async {
        let cluster = crate::cluster::Cluster::connect(redis, "doctor".into()).await?;
        cluster.ping().await?;
        let alive = cluster.alive().await?;
        let configs = cluster.facts_of_others("config").await?;
        Ok::<_, crate::cluster::ClusterError>((alive.len(), configs))
    };
    match tokio::time::timeout(Duration::from_secs(8), probe).await {
        Ok(Ok((replicas, configs))) => {
            r.ok("redis", format!("{hostport} ({replicas} replica(s) alive, prefix `{}`)", redis.prefix));
            same_config(r, cfg, &configs);
        }
        Ok(Err(e)) => r.fail(
            "redis",
            format!("{hostport}: {e}"),
            "start Redis or fix [redis] url (or remove [redis] to run one process)",
        ),
        Err(_) => r.fail("redis", format!("no answer from {hostport} within 8s"), "check [redis] url"),
    }
}

/// Whether this config is the one the running replicas stated (by section digests).
fn same_config(r: &mut Report, cfg: &Config, running: &std::collections::BTreeMap<String, String>) {
    if running.is_empty() {
        return;
    }
    let mine = cfg.section_digests();
    let mut differ = std::collections::BTreeSet::new();
    for theirs in running.values() {
        let theirs = serde_json::from_str(theirs).unwrap_or_default();
        differ.extend(crate::app::shared::differing(&mine, &theirs));
    }
    if differ.is_empty() {
        r.ok("replicas' config", format!("the same as the {} running replica(s)", running.len()));
    } else {
        let names: Vec<String> = differ.into_iter().collect();
        r.fail(
            "replicas' config",
            format!("differs from the running replicas' in: {}", names.join(", ")),
            "give every replica the same config (a message may be answered differently by each)",
        );
    }
}

async fn llm(r: &mut Report, cfg: &Config) {
    let what = format!("model ({})", super::model::describe(&cfg.llm));
    if let Some(warning) = super::model::points_at_butler(cfg) {
        println!("[warn] model base URL: {warning}");
    }
    if let Some(problem) = super::model::setup_problem(&cfg.llm).await {
        let fix = if cfg.llm.base_url.is_some() {
            "set BUTLER_MODEL (or [llm] model) to one of the models above"
        } else {
            "run `butler init`, or set OPENAI_API_KEY (+ BUTLER_MODEL), ANTHROPIC_API_KEY, or [llm] in the config"
        };
        return r.fail(&what, problem, fix);
    }
    let provider = crate::llm::from_config(&cfg.llm);
    let req = ChatRequest {
        system: "You are a health check.".into(),
        messages: vec![ChatMessage::User { content: "Reply with the word OK.".into(), name: None, images: Vec::new() }],
        tools: Vec::new().into(),
        max_tokens: Some(5),
    };
    let check = crate::llm::complete(&*provider, &req);
    match tokio::time::timeout(Duration::from_secs(60), check).await {
        Ok(Ok(_)) => r.ok(&what, "answered a test request"),
        Ok(Err(e)) => {
            let fix = match e {
                crate::llm::LlmError::NotConfigured | crate::llm::LlmError::MissingModel(_) => {
                    "set OPENAI_API_KEY (+ BUTLER_MODEL), ANTHROPIC_API_KEY, or [llm] in the config"
                }
                crate::llm::LlmError::Auth(_) => {
                    "set a valid key in [llm] api_key (or OPENAI_API_KEY / ANTHROPIC_API_KEY)"
                }
                crate::llm::LlmError::UnknownModel(_) => {
                    "set [llm] model (or BUTLER_MODEL) to a model this endpoint serves (listed below)"
                }
                crate::llm::LlmError::Unreachable(_) => "check [llm] base_url and that the model server is running",
                _ => "check [llm] and the provider's status",
            };
            r.fail(&what, e, fix)
        }
        Err(_) => r.fail(&what, "no complete answer within 60s", "check [llm] base_url and the model server"),
    }
    match crate::llm::list_models(&cfg.llm, Duration::from_secs(10)).await {
        Ok(models) if !models.is_empty() => {
            let listed = crate::llm::model_list_line(&models, 20);
            if models.contains(&cfg.llm.model) {
                println!("[ ok ] served models: {listed}");
            } else {
                println!("[warn] served models: {listed} (`{}` is not among them)", cfg.llm.model);
            }
        }
        Ok(_) => println!("[warn] served models: the endpoint lists none (GET /models)"),
        Err(e) => println!("[warn] served models: the list (GET /models) could not be read: {e}"),
    }
}

/// One line per `[llm.tiers.<name>]`: the provider, model and endpoint it runs on; then each
/// configured model's prices (a warning for a model nobody prices).
fn tiers(r: &Report, cfg: &Config) {
    for name in cfg.llm.tiers.keys() {
        if let Some(tier) = cfg.llm.tier(name) {
            r.ok(&format!("model tier {name}"), super::model::describe(&tier));
        }
    }
    if cfg.llm.model.trim().is_empty() {
        return;
    }
    for e in crate::llm::PriceBook::from_config(&cfg.llm).endpoints() {
        match e.priced.source {
            crate::llm::PriceSource::Unknown => println!("[warn] price: {}", e.describe()),
            _ => r.ok("price", e.describe()),
        }
    }
}

fn web(r: &mut Report, cfg: &Config) {
    let web = &cfg.channels.web;
    if !web.enabled {
        return;
    }
    let mode = if web.token.is_some() || !web.tokens.is_empty() { "token auth" } else { "local only, no token" };
    r.ok("web chat", format!("http://{} ({mode})", cfg.server.listen));
}

/// Each `[[mcp.servers]]` entry: started (its tool count and a round trip) or why not, after
/// at most its `connect_timeout_secs`; every server is stopped again before this returns.
async fn mcp_servers(r: &mut Report, cfg: &Config) {
    use crate::mcp::{report::status_words, McpManager, Status};
    if cfg.mcp.servers.is_empty() {
        return;
    }
    let vault = match crate::secrets::Vault::load(cfg) {
        Ok(vault) => vault,
        Err(e) => return r.fail("secrets", e, ""),
    };
    let manager = McpManager::start(&cfg.mcp, std::path::Path::new(&cfg.tools.workspace_dir), &vault);
    let longest = cfg.mcp.servers.iter().map(|s| s.connect_timeout_secs).max().unwrap_or(0);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(longest + 1);
    let settled = |m: &McpManager| m.servers().iter().all(|s| !matches!(s.status(), Status::Starting));
    while !settled(&manager) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (i, (server, report)) in manager.servers().iter().zip(manager.report()).enumerate() {
        let what = format!("mcp server `{}`", report.name);
        let kind = if server.config().url.is_some() { "streamable HTTP" } else { "stdio" };
        match &report.status {
            Status::Ready { tools, round_trip } => {
                r.ok(&what, format!("started ({kind}), {tools} tool(s), round trip {} ms", round_trip.as_millis()))
            }
            Status::Failed { why, .. } => r.fail(
                &what,
                format!("did not start ({kind}): {why}"),
                &format!("check mcp.servers[{i}] (command, args, env, cwd or url, headers); run it by hand to see"),
            ),
            other => r.fail(
                &what,
                format!("did not start ({kind}): {}", status_words(other)),
                &format!("raise mcp.servers[{i}].connect_timeout_secs or check that the server answers"),
            ),
        }
    }
    manager.stop().await;
}

/// With the shell on: is the sandbox it asks for there, and does it start a command?
async fn shell_sandbox(r: &mut Report, cfg: &Config) {
    use crate::tools::sandbox::{Sandbox, SAFE_PATH};
    let shell = &cfg.tools.shell;
    if !shell.enabled {
        return;
    }
    const WHAT: &str = "shell sandbox";
    let sandbox =
        match Sandbox::from_config(shell) {
            Ok(sandbox) => sandbox,
            Err(e) => return r.fail(
                WHAT,
                e,
                "install bubblewrap (apt-get install bubblewrap), or set [tools.shell] sandbox = \"none\" to accept \
                 commands that can read everything Butler can",
            ),
        };
    let Some(bwrap) = sandbox.bwrap().map(|p| p.display().to_string()) else {
        return r.ok(WHAT, "none ([tools.shell] sandbox = \"none\"): commands see Butler's files and processes");
    };
    let dir = std::env::temp_dir().join(format!("butler-doctor-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return r.fail(WHAT, format!("no temporary directory to try it in: {e}"), "check TMPDIR");
    }
    let probe = sandbox
        .command(
            "/bin/sh",
            &[std::ffi::OsStr::new("-c"), std::ffi::OsStr::new("true")],
            &dir,
            &[("PATH", std::ffi::OsStr::new(SAFE_PATH))],
        )
        .output();
    let network = if shell.network { "network on" } else { "no network" };
    let result = tokio::time::timeout(Duration::from_secs(10), probe).await;
    let _ = std::fs::remove_dir(&dir);
    match result {
        Ok(Ok(out)) if out.status.success() => r.ok(WHAT, format!("bwrap ({bwrap}, {network})")),
        Ok(Ok(out)) => r.fail(
            WHAT,
            format!("{bwrap} could not start a command: {}", String::from_utf8_lossy(&out.stderr).trim()),
            "bubblewrap needs user namespaces when Butler does not run as root (sysctl \
             kernel.unprivileged_userns_clone=1; in a container allow them), or set [tools.shell] sandbox = \"none\"",
        ),
        Ok(Err(e)) => r.fail(WHAT, format!("{bwrap} could not be run: {e}"), "reinstall bubblewrap"),
        Err(_) => r.fail(WHAT, format!("{bwrap} did not finish a test command within 10s"), "check bubblewrap"),
    }
}
