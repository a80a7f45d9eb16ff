//! MCP benchmark (issue 15): the added cost of a tool call to an MCP server over a built-in
//! one, through the real `butler serve` binary (release build) with an in-process zero-latency
//! fake LLM. Each turn the model asks for one tool call, then answers with text; the tool is the
//! built-in `now`, `echo` of a stdio MCP server (this bench binary re-running itself as the
//! server, see [`main`]) or `echo` of a streamable HTTP MCP server in this process (both
//! servers from `tests/support/mcp_server.rs`, `read_only` so nothing asks). One conversation
//! per tool, the three taking turns, one turn at a time, after a warm-up.
//!
//! Run: `cargo bench --bench mcp`. Tunable: BENCH_MCP_TURNS (per tool, default 300).
//! Prints one machine-readable line starting with `bench=mcp_call`.
//! It must never talk to anything but loopback, and never leave a process behind (butler stops
//! the stdio server's process group when it stops).

#[path = "../tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

#[path = "../tests/support/mcp_server.rs"]
#[allow(dead_code)]
mod server;

use futures::StreamExt;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::bench::{env_usize, percentile_ms as percentile, Serve};
use support::fake_llm::{FakeLlm, Reply};
use support::proc::free_port;
use tokio_util::sync::CancellationToken;

/// The tools compared: (label, tool name as the model sees it, its arguments as JSON).
const KINDS: [(&str, &str, &str); 3] = [
    ("builtin", "now", r#"{}"#),
    ("stdio", "stdio__echo", r#"{"text":"ping"}"#),
    ("http", "http__echo", r#"{"text":"ping"}"#),
];

/// Turns per tool before measuring (connections, caches, SQLite pages, the servers' sessions).
const WARMUP_TURNS: usize = 20;

/// Starts `butler serve` on SQLite with both MCP servers configured; waits for /readyz = 200.
async fn serve(llm_url: &str, mcp_http: &str) -> Serve {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let exe = std::env::current_exe().expect("bench binary path");
    let config = dir.path().join("butler.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n[database]\nurl = \"sqlite://{db}\"\nmax_connections = 8\n\
             [llm]\nprovider = \"openai\"\nbase_url = \"{llm_url}\"\nmodel = \"bench\"\nmax_retries = 0\n\
             [memory]\narchivist = false\n\
             [[mcp.servers]]\nname = \"stdio\"\ncommand = \"{exe}\"\nread_only = true\n\
             env = {{ {role} = \"stdio\" }}\n\
             [[mcp.servers]]\nname = \"http\"\nurl = \"{mcp_http}\"\nread_only = true\n",
            db = dir.path().join("butler.db").display(),
            exe = exe.display(),
            role = server::ROLE_VAR,
        ),
    )
    .unwrap();
    Serve::start(dir, &config, port).await.0
}

/// One web conversation with its event stream open.
struct Conversation {
    client: reqwest::Client,
    base: String,
    name: String,
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: String,
}

impl Conversation {
    async fn post(client: &reqwest::Client, base: &str, name: &str, text: &str) {
        let body = json!({"conversation": name, "user": "local", "text": text});
        let r = client.post(format!("{base}/api/v1/messages")).json(&body).send().await.unwrap();
        assert_eq!(r.status(), 202, "posting to {name}");
    }

    /// Creates the conversation (a first message, answered by the fake's echo) and listens to it.
    async fn open(client: &reqwest::Client, base: &str, name: &str) -> Self {
        Self::post(client, base, name, "hello").await;
        let resp = client.get(format!("{base}/api/v1/conversations/{name}/stream")).send().await.unwrap();
        assert_eq!(resp.status(), 200, "the event stream of {name}");
        Self {
            client: client.clone(),
            base: base.into(),
            name: name.into(),
            body: resp.bytes_stream().boxed(),
            buf: String::new(),
        }
    }

    /// Posts `text` and waits until a final (not draft) message with exactly `answer` arrives.
    async fn turn(&mut self, text: &str, answer: &str) -> Duration {
        let t0 = Instant::now();
        Self::post(&self.client, &self.base, &self.name, text).await;
        loop {
            while let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let data: String = block.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
                let Ok(v) = serde_json::from_str::<Value>(&data) else { continue };
                if v["text"] == answer && v.get("draft").is_none() {
                    return t0.elapsed();
                }
            }
            let chunk = tokio::time::timeout(Duration::from_secs(30), self.body.next()).await;
            let chunk = chunk.unwrap_or_else(|_| panic!("no answer `{answer}` within 30 s"));
            let chunk = chunk.expect("stream open").expect("stream chunk");
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

/// Pings until a model request offers every compared tool (MCP servers join after start-up).
async fn wait_for_tools(llm: &FakeLlm, client: &reqwest::Client, base: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    for i in 0.. {
        let before = llm.request_count();
        Conversation::post(client, base, "warmup", &format!("ping {i}")).await;
        assert!(llm.wait_for_requests(before + 1, Duration::from_secs(20)).await, "no model request");
        let offered: Vec<String> = llm
            .last_request()
            .map(|r| r.tools().iter().filter_map(|t| t["function"]["name"].as_str().map(String::from)).collect())
            .unwrap_or_default();
        if KINDS.iter().all(|(_, tool, _)| offered.iter().any(|n| n == tool)) {
            return;
        }
        assert!(Instant::now() < deadline, "the compared tools never reached the model: {offered:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Scripts one turn: for the next request whose text has `needle`, the tool call; for the one
/// after its result, `answer` (distinct per turn, so a late event of the last turn never counts).
fn script(llm: &FakeLlm, needle: &str, tool: &str, args: &str, answer: &str) {
    llm.on(needle, Reply::tool_call(tool, serde_json::from_str(args).unwrap()));
    llm.on(needle, Reply::text(answer));
}

async fn bench(turns: usize) {
    let llm = FakeLlm::start().await;
    let ct = CancellationToken::new();
    let mcp_addr = server::serve_http(ct.clone()).await;
    let butler = serve(&llm.openai_url(), &format!("http://{mcp_addr}/mcp")).await;
    let client = reqwest::Client::new();
    wait_for_tools(&llm, &client, &butler.base).await;

    let mut convs = Vec::new();
    for (kind, _, _) in KINDS {
        convs.push(Conversation::open(&client, &butler.base, &format!("mcp-{kind}")).await);
    }
    // Warm up; the first turn of each checks that the tool really ran and its result came back.
    for round in 0..WARMUP_TURNS {
        for ((kind, tool, args), conv) in KINDS.iter().zip(convs.iter_mut()) {
            let (needle, answer) = (format!("warm-{kind}"), format!("warmed {kind} {round}"));
            script(&llm, &needle, tool, args, &answer);
            let text = format!("{needle} {round}");
            conv.turn(&text, &answer).await;
            if round == 0 {
                let asked: Vec<_> = llm.requests().into_iter().filter(|r| r.last_user_text() == text).collect();
                assert_eq!(asked.len(), 2, "{kind}: one tool call and one answer per turn");
                let result = asked[1].last_tool_result().unwrap_or_default();
                let ok = if *kind == "builtin" { result.contains("20") } else { result == "ping" };
                assert!(ok, "{kind}: `{tool}` did not run as expected, its result: {result}");
            }
        }
    }
    llm.set_record_limit(0);

    let mut latencies: Vec<Vec<Duration>> = vec![Vec::with_capacity(turns); KINDS.len()];
    for round in 0..turns {
        for (((kind, tool, args), conv), out) in KINDS.iter().zip(convs.iter_mut()).zip(latencies.iter_mut()) {
            let (needle, answer) = (format!("call-{kind}"), format!("done {kind} {round}"));
            script(&llm, &needle, tool, args, &answer);
            out.push(conv.turn(&format!("{needle} {round}"), &answer).await);
        }
    }
    for l in &mut latencies {
        l.sort();
    }
    let p = |k: usize, q: f64| percentile(&latencies[k], q);
    println!(
        "bench=mcp_call turns={turns} builtin_p50_ms={:.2} builtin_p99_ms={:.2} stdio_p50_ms={:.2} \
         stdio_p99_ms={:.2} http_p50_ms={:.2} http_p99_ms={:.2} stdio_added_p50_ms={:.2} http_added_p50_ms={:.2}",
        p(0, 0.50),
        p(0, 0.99),
        p(1, 0.50),
        p(1, 0.99),
        p(2, 0.50),
        p(2, 0.99),
        p(1, 0.50) - p(0, 0.50),
        p(2, 0.50) - p(0, 0.50),
    );
    drop(convs);
    drop(butler);
    ct.cancel();
}

fn main() {
    // Started by butler as the stdio MCP server: serve on stdin/stdout, then exit.
    if std::env::var(server::ROLE_VAR).as_deref() == Ok("stdio") {
        server::serve_stdio_and_exit();
    }
    // `cargo bench` passes `--bench`; nothing else to parse.
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(bench(env_usize("BENCH_MCP_TURNS", 300)));
}
