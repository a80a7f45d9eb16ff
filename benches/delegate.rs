//! Delegation benchmark (issue 17): what a `delegate` round trip adds to a turn, and 100
//! background tasks at once, through the real `butler serve` binary (release build) on SQLite
//! with an in-process zero-latency fake LLM (children use the main model: no tiers configured).
//!
//! - `bench=delegate_round_trip`: one web conversation, one turn at a time after a warm-up,
//!   alternating (a) the model answers with text and (b) the model calls `delegate` once, the
//!   child answers with text, the model answers; p50/p99 of both and of (b) - (a).
//! - `bench=delegate_background`: in each of N conversations one message whose model reply
//!   asks for M background `delegate` calls at once; every child answers after a first-byte
//!   delay, and each result comes back as a new turn of its conversation. Measured from the
//!   posts to the last result's reply; each task's reply must arrive exactly once (a lost one
//!   times out, a doubled one fails), and the peak resident memory of butler.
//!
//! Run: `cargo bench --bench delegate`. Tunables: BENCH_DELEGATE_TURNS (per kind, default
//! 300), BENCH_DELEGATE_CONVERSATIONS (default 10), BENCH_DELEGATE_TASKS (per conversation,
//! default 10), BENCH_DELEGATE_CHILD_MS (a child's first-byte delay, default 50).
//! It must never talk to anything but loopback, and never leave a process behind.

#[path = "../tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

use futures::StreamExt;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};
use support::bench::{env_usize, percentile_ms as percentile, proc_mib, Serve};
use support::fake_llm::{FakeLlm, Reply};

/// Turns per kind before measuring the round trip (connections, caches, SQLite pages).
const WARMUP_TURNS: usize = 20;
/// Longest wait for any one expected reply.
const REPLY_WITHIN: Duration = Duration::from_secs(60);

/// Starts `butler serve` on SQLite allowing `max_background` background tasks at once.
async fn serve(llm_url: &str, max_background: usize) -> Serve {
    Serve::sqlite(llm_url, &format!("[agent.delegation]\nmax_background = {max_background}")).await
}

async fn post(client: &reqwest::Client, base: &str, conversation: &str, text: &str) {
    let body = json!({"conversation": conversation, "user": "local", "text": text});
    let r = client.post(format!("{base}/api/v1/messages")).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 202, "posting to {conversation}");
}

/// One final (not draft) assistant message from an event stream.
struct Final {
    id: i64,
    text: String,
    at: Instant,
}

/// A web conversation's event stream, read for its final assistant messages.
struct Events {
    name: String,
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: String,
}

impl Events {
    /// Creates `name` (a first message, answered by the fake's echo), listens to it, then runs
    /// one scripted turn so that the conversation is idle and every earlier reply is behind us.
    async fn open(llm: &FakeLlm, client: &reqwest::Client, base: &str, name: &str) -> Self {
        post(client, base, name, "hello").await;
        let resp = client.get(format!("{base}/api/v1/conversations/{name}/stream")).send().await.unwrap();
        assert_eq!(resp.status(), 200, "the event stream of {name}");
        let mut events = Self { name: name.into(), body: resp.bytes_stream().boxed(), buf: String::new() };
        let (needle, answer) = (format!("ready-{name}"), format!("ready {name}"));
        llm.on(&needle, Reply::text(&answer));
        post(client, base, name, &needle).await;
        events.until(&answer).await;
        events
    }

    /// The next final assistant message; panics after `within` or if the stream lagged (its
    /// events would be lost, so nothing could be counted).
    async fn next_final(&mut self, within: Duration) -> Final {
        loop {
            while let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                assert!(!block.lines().any(|l| l == "event: lagged"), "the event stream of {} lagged", self.name);
                let data: String = block.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
                let Ok(v) = serde_json::from_str::<Value>(&data) else { continue };
                if v["role"] == "assistant" && v.get("draft").is_none() {
                    let (id, text) = (v["id"].as_i64().unwrap_or(-1), v["text"].as_str().unwrap_or("").to_string());
                    return Final { id, text, at: Instant::now() };
                }
            }
            let chunk = tokio::time::timeout(within, self.body.next()).await;
            let chunk = chunk.unwrap_or_else(|_| panic!("{}: no reply within {within:?}", self.name));
            let chunk = chunk.expect("stream open").expect("stream chunk");
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Waits for a final message whose text is exactly `answer`.
    async fn until(&mut self, answer: &str) -> Instant {
        loop {
            let f = self.next_final(REPLY_WITHIN).await;
            if f.text == answer {
                return f.at;
            }
        }
    }
}

/// Scenario 1: the latency a `delegate` round trip adds to a turn.
async fn round_trip(turns: usize) {
    let llm = FakeLlm::start().await;
    let butler = serve(&llm.openai_url(), 100).await;
    let client = reqwest::Client::new();
    let mut conv = Events::open(&llm, &client, &butler.base, "round-trip").await;
    // Per kind: (label index 0 = direct, 1 = delegate) -> latencies.
    let mut latencies: [Vec<Duration>; 2] = [Vec::with_capacity(turns), Vec::with_capacity(turns)];
    for round in 0..WARMUP_TURNS + turns {
        let measured = round >= WARMUP_TURNS;

        // (a) The model answers at once.
        let answer = format!("direct answer {round}");
        llm.on("direct-turn", Reply::text(&answer));
        let t0 = Instant::now();
        post(&client, &butler.base, &conv.name, &format!("direct-turn {round}")).await;
        let direct = conv.until(&answer).await - t0;

        // (b) The model delegates once; the child (its last user text is its task) answers;
        // then the model answers with the child's result.
        let (task, child_answer, answer) =
            (format!("kid-job {round}: say ok"), format!("kid ok {round}"), format!("delegated answer {round}"));
        llm.on("deleg-turn", Reply::tool_call("delegate", json!({"task": task})));
        llm.on("kid-job", Reply::text(&child_answer));
        llm.on("deleg-turn", Reply::text(&answer));
        let text = format!("deleg-turn {round}");
        let t0 = Instant::now();
        post(&client, &butler.base, &conv.name, &text).await;
        let delegated = conv.until(&answer).await - t0;

        if round == 0 {
            // The child really ran, on its task, and its answer was the call's result.
            let reqs = llm.requests();
            let child = reqs.iter().filter(|r| r.last_user_text().contains(&task)).count();
            assert_eq!(child, 1, "one child request for `{task}`");
            let parent: Vec<_> = reqs.iter().filter(|r| r.last_user_text() == text).collect();
            assert_eq!(parent.len(), 2, "the parent: one delegate call, one answer");
            let result = parent[1].last_tool_result().unwrap_or_default();
            assert!(result.starts_with(&child_answer), "the delegate result: {result}");
        }
        if round + 1 == WARMUP_TURNS {
            llm.set_record_limit(0);
        }
        if measured {
            latencies[0].push(direct);
            latencies[1].push(delegated);
        }
    }
    for l in &mut latencies {
        l.sort();
    }
    let p = |k: usize, q: f64| percentile(&latencies[k], q);
    println!(
        "bench=delegate_round_trip turns={turns} direct_p50_ms={:.2} direct_p99_ms={:.2} delegate_p50_ms={:.2} \
         delegate_p99_ms={:.2} added_p50_ms={:.2} added_p99_ms={:.2}",
        p(0, 0.50),
        p(0, 0.99),
        p(1, 0.50),
        p(1, 0.99),
        p(1, 0.50) - p(0, 0.50),
        p(1, 0.99) - p(0, 0.99),
    );
    drop(conv);
    drop(butler);
}

/// The tag of task `k` of conversation `c` (fixed width: no tag is a prefix of another).
fn tag(c: usize, k: usize) -> String {
    format!("{c:03}-{k:03}")
}

/// Scripts one batch in conversation number `c`: the message `bgstart-<c>` asks for `per`
/// background children at once, then answers `started <c>`; each child answers after
/// `delay`; each result's turn answers `reported <tag>`. A result delivered twice finds no
/// rule left and gets the fake's echo (`echo: [Background task ...`).
fn script_batch(llm: &FakeLlm, c: usize, per: usize, delay: Duration) {
    // The result's turn names the task too: its rule comes first.
    for k in 0..per {
        let t = tag(c, k);
        llm.on(&format!("finished. Its task was: bgjob-{t} "), Reply::text(&format!("reported {t}")));
        llm.on(&format!("bgjob-{t} "), Reply::text(&format!("figures for {t}")).first_byte_delay(delay));
    }
    let call = |k: usize| json!({"task": format!("bgjob-{} collect the figures", tag(c, k)), "background": true});
    let calls = (1..per).fold(Reply::tool_call("delegate", call(0)), |r, k| r.and_tool_call("delegate", call(k)));
    llm.on(&format!("bgstart-{c:03}"), calls);
    llm.on(&format!("bgstart-{c:03}"), Reply::text(&format!("started {c:03}")));
}

/// What one batch measured, from its posts.
struct Batch {
    all_started: Duration,
    results: Vec<Duration>,
}

/// Runs one batch over `convs` (conversation number `first + i`): posts every `bgstart`
/// at once and reads every stream until each task's `reported` reply arrived, exactly once.
async fn run_batch(
    llm: &FakeLlm,
    client: &reqwest::Client,
    base: &str,
    convs: Vec<Events>,
    first: usize,
    per: usize,
    delay: Duration,
) -> (Batch, Vec<Events>) {
    let n = convs.len();
    for i in 0..n {
        script_batch(llm, first + i, per, delay);
    }
    let (tx, mut rx) = tokio::sync::mpsc::channel::<(usize, Final)>(4 * n * per + 64);
    let stop = tokio_util::sync::CancellationToken::new();
    let readers: Vec<_> = convs
        .into_iter()
        .enumerate()
        .map(|(i, mut ev)| {
            let (tx, stop) = (tx.clone(), stop.clone());
            tokio::spawn(async move {
                loop {
                    let next = tokio::select! {
                        _ = stop.cancelled() => None,
                        f = ev.next_final(Duration::from_secs(3600)) => Some(f),
                    };
                    let Some(f) = next else { return ev };
                    if tx.send((i, f)).await.is_err() {
                        return ev;
                    }
                }
            })
        })
        .collect();
    drop(tx);
    let t0 = Instant::now();
    let names: Vec<(String, String)> =
        (first..first + n).map(|c| (format!("bg-{c:03}"), format!("bgstart-{c:03}"))).collect();
    futures::future::join_all(names.iter().map(|(conv, text)| post(client, base, conv, text))).await;

    let mut started = HashSet::new();
    let mut all_started = Duration::ZERO;
    let mut reported: HashMap<String, Duration> = HashMap::new();
    let mut seen_ids = HashSet::new();
    let deadline = tokio::time::Instant::now() + REPLY_WITHIN;
    let mut grace_until: Option<tokio::time::Instant> = None;
    loop {
        let until = grace_until.unwrap_or(deadline);
        let next = match tokio::time::timeout_at(until, rx.recv()).await {
            Ok(Some(next)) => next,
            Ok(None) => panic!("an event stream ended"),
            Err(_) if grace_until.is_some() => break,
            Err(_) => {
                let missing: Vec<String> = (0..n)
                    .flat_map(|i| (0..per).map(move |k| tag(first + i, k)))
                    .filter(|t| !reported.contains_key(t))
                    .collect();
                panic!(
                    "lost results: {} of {} never came back, e.g. {:?}",
                    missing.len(),
                    n * per,
                    &missing[..missing.len().min(10)]
                );
            }
        };
        let (i, f) = next;
        // A message may be published twice (created, then updated): count ids once.
        if !seen_ids.insert(f.id) {
            continue;
        }
        let elapsed = f.at - t0;
        if f.text.starts_with("echo: [Background task") || f.text.contains("background tasks are running already") {
            panic!("conversation {}: a result delivered twice, or a task refused: {}", first + i, f.text);
        }
        if let Some(c) = f.text.strip_prefix("started ") {
            assert!(started.insert(c.to_string()), "`started {c}` twice");
            if started.len() == n {
                all_started = elapsed;
            }
        } else if let Some(t) = f.text.strip_prefix("reported ") {
            assert!(t.starts_with(&format!("{:03}-", first + i)), "`reported {t}` in conversation {}", first + i);
            assert!(reported.insert(t.to_string(), elapsed).is_none(), "`reported {t}` twice");
            if reported.len() == n * per {
                // Everything came back: listen a little longer for a doubled delivery.
                grace_until = Some(tokio::time::Instant::now() + Duration::from_secs(1));
            }
        }
    }
    assert_eq!(started.len(), n, "every batch message was answered");
    stop.cancel();
    let mut convs = Vec::with_capacity(n);
    for r in readers {
        convs.push(r.await.expect("reader"));
    }
    let mut results: Vec<Duration> = reported.into_values().collect();
    results.sort();
    (Batch { all_started, results }, convs)
}

/// The stored replies of a conversation: exactly one `reported` per task, no echo of a result.
async fn check_stored(client: &reqwest::Client, base: &str, c: usize, per: usize) {
    let url = format!("{base}/api/v1/conversations/bg-{c:03}/messages?limit=1000");
    let v: Value = client.get(url).send().await.unwrap().json().await.unwrap();
    let texts: Vec<&str> = v["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "assistant").filter_map(|m| m["text"].as_str()).collect())
        .unwrap_or_default();
    let mut reported: Vec<&str> = texts.iter().filter_map(|t| t.strip_prefix("reported ")).collect();
    reported.sort();
    let expected: Vec<String> = (0..per).map(|k| tag(c, k)).collect();
    assert_eq!(reported, expected, "bg-{c:03}: one stored reply per task");
    assert!(!texts.iter().any(|t| t.starts_with("echo: [Background task")), "bg-{c:03}: a result delivered twice");
}

/// Scenario 2: `convs` x `per` background tasks at once, until every result came back.
async fn background(convs: usize, per: usize, delay: Duration) {
    let total = convs * per;
    let llm = FakeLlm::start().await;
    let butler = serve(&llm.openai_url(), (2 * total).max(100)).await;
    let (pid, base) = (butler.child.id(), butler.base.clone());
    let client = reqwest::Client::builder().pool_max_idle_per_host(4 * convs).build().unwrap();
    // Warm up: a small batch in a conversation of its own (number 0), checked like the real one.
    let warm = vec![Events::open(&llm, &client, &base, "bg-000").await];
    let (_, warm) = run_batch(&llm, &client, &base, warm, 0, 2, delay).await;
    check_stored(&client, &base, 0, 2).await;
    drop(warm);
    let mut streams = Vec::with_capacity(convs);
    for c in 1..=convs {
        streams.push(Events::open(&llm, &client, &base, &format!("bg-{c:03}")).await);
    }
    llm.set_record_limit(0);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_before = proc_mib(pid, "VmRSS");
    let requests_before = llm.request_count();

    let (batch, streams) = run_batch(&llm, &client, &base, streams, 1, per, delay).await;

    // Model requests: two per batch message, one per child, one per result's turn.
    let requests = llm.request_count() - requests_before;
    assert_eq!(requests, 2 * convs + 2 * total, "model requests of the batch");
    for c in 1..=convs {
        check_stored(&client, &base, c, per).await;
    }
    assert_eq!(batch.results.len(), total);
    let all = batch.results.last().copied().unwrap_or_default().as_secs_f64() * 1000.0;
    println!(
        "bench=delegate_background conversations={convs} tasks={total} child_first_byte_ms={} all_started_ms={:.1} \
         first_result_ms={:.1} p50_result_ms={:.1} p99_result_ms={:.1} all_results_ms={all:.1} results={} \
         rss_before_mib={rss_before:.1} peak_rss_mib={:.1}",
        delay.as_millis(),
        batch.all_started.as_secs_f64() * 1000.0,
        percentile(&batch.results, 0.0),
        percentile(&batch.results, 0.50),
        percentile(&batch.results, 0.99),
        batch.results.len(),
        proc_mib(pid, "VmHWM"),
    );
    drop(streams);
    drop(butler);
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else to parse.
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        round_trip(env_usize("BENCH_DELEGATE_TURNS", 300)).await;
        let delay = Duration::from_millis(env_usize("BENCH_DELEGATE_CHILD_MS", 50) as u64);
        background(env_usize("BENCH_DELEGATE_CONVERSATIONS", 10), env_usize("BENCH_DELEGATE_TASKS", 10), delay).await;
    });
}
