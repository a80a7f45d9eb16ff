//! The soak (issue 34, point 5): three `butler serve` replicas (the release build under `cargo
//! bench`) on one Postgres and one Redis, a steady mixed load through the web API spread over
//! them, and replica 1 or 2 SIGKILLed and restarted every few minutes (replica 0 never is, so
//! its memory slope covers the whole run). Every message accepted gets
//! exactly one answer; every approval clicked runs once; every background task is reported
//! once; the scheduled job runs once a minute. Resident memory of each replica process is
//! sampled after warm-up and its slope reported per hour.
//!
//! The load, per tick, in turn: a plain message, a file uploaded through one replica and
//! attached to a message posted to another, a `file_write` that asks (clicked through
//! `/api/v1/actions`), a background `delegate` (its report starts a turn), and a plain message.
//!
//! Run: `cargo bench --bench soak` (Postgres from BUTLER_TEST_PG_URL; `redis-server` on PATH).
//! Tunables: BENCH_SOAK_SECS (default 1800), BENCH_SOAK_KILL_SECS (default 180),
//! BENCH_SOAK_TICK_MS (default 400), BENCH_LEASE_MS (default 3000). Prints one `bench=soak` line.

#[path = "../tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::bench::{proc_mib, slope_per_hour};
use support::cluster::Replicas;
use support::fake_llm::{FakeLlm, Reply};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One message sent and the answer it must get exactly once.
struct Expect {
    conv: String,
    answer: String,
    /// A `file_write` that waits for its click.
    approval: bool,
    kind: &'static str,
}

impl Expect {
    /// Whether `text` is the expected answer (a file's echo goes on with the file's text).
    fn answered_by(&self, text: &str) -> bool {
        text == self.answer || text.strip_prefix(self.answer.as_str()).is_some_and(|rest| rest.starts_with('\n'))
    }
}

/// The assistant texts of a conversation (empty when no replica answers).
async fn answers(http: &reqwest::Client, bases: &[String], conv: &str) -> Vec<String> {
    for base in bases {
        let url = format!("{base}/api/v1/conversations/{conv}/messages");
        if let Ok(r) = http.get(url).send().await {
            if r.status() == 200 {
                let v: Value = r.json().await.unwrap_or_default();
                let msgs = v["messages"].as_array().cloned().unwrap_or_default();
                return msgs
                    .iter()
                    .filter(|m| m["role"] == "assistant")
                    .map(|m| m["text"].as_str().unwrap_or_default().to_string())
                    .collect();
            }
        }
    }
    Vec::new()
}

/// POSTs `body` to `path` on the first replica of `order` that takes it; its JSON answer.
async fn post(http: &reqwest::Client, bases: &[String], order: usize, path: &str, body: Body) -> Option<Value> {
    for k in 0..bases.len() {
        let base = &bases[(order + k) % bases.len()];
        let req = match &body {
            Body::Json(v) => http.post(format!("{base}{path}")).json(v),
            Body::Bytes(b) => http.post(format!("{base}{path}")).body(b.clone()),
        };
        if let Ok(r) = req.timeout(Duration::from_secs(10)).send().await {
            if r.status().is_success() {
                return Some(r.json().await.unwrap_or_default());
            }
        }
    }
    None
}

#[derive(Clone)]
enum Body {
    Json(Value),
    Bytes(Vec<u8>),
}

/// Clicks "approve once" on `e`'s request if it is shown (through replica `i`), or notes that
/// its answer came; `e.approval` turns false when nothing more is to click.
async fn click(http: &reqwest::Client, bases: &[String], i: usize, e: &mut Expect) {
    let url = format!("{}/api/v1/conversations/{}/messages", bases[i % bases.len()], e.conv);
    let v: Value = match http.get(url).send().await {
        Ok(r) => r.json().await.unwrap_or_default(),
        Err(_) => return,
    };
    let msgs = v["messages"].as_array().cloned().unwrap_or_default();
    if msgs.iter().any(|m| m["role"] == "assistant" && e.answered_by(m["text"].as_str().unwrap_or_default())) {
        e.approval = false;
        return;
    }
    let action = msgs
        .iter()
        .flat_map(|m| m["buttons"].as_array().cloned().unwrap_or_default())
        .filter_map(|b| b["action"].as_str().map(str::to_string))
        .find(|a| a.starts_with("ap:") && a.ends_with(":once"));
    if let Some(action) = action {
        let body = json!({"conversation": e.conv, "user": "local", "action": action});
        if post(http, bases, i, "/api/v1/actions", Body::Json(body)).await.is_some() {
            e.approval = false;
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let secs = env_u64("BENCH_SOAK_SECS", 1800);
    let kill_every = Duration::from_secs(env_u64("BENCH_SOAK_KILL_SECS", 180));
    let tick = Duration::from_millis(env_u64("BENCH_SOAK_TICK_MS", 400));
    let lease_ms = env_u64("BENCH_LEASE_MS", 3000);
    let warmup = Duration::from_secs(60.min(secs / 4));

    let llm = FakeLlm::start().await;
    // Reports first: a report's text holds its task's words too.
    llm.on_every("Background task", Reply::text("report noted"));
    llm.on_every("child-work", Reply::text("child done"));
    let extra = format!(
        "[llm]\nbase_url = \"{}\"\nmodel = \"bench\"\nmax_retries = 0\n\n\
         [[schedules]]\nname = \"soak\"\ncron = \"* * * * *\"\nprompt = \"sched tick\"\ntarget = \"web:soak-sched\"\n",
        llm.openai_url()
    );
    let mut set = Replicas::direct(3, lease_ms, &extra).await;
    set.start_all().await;
    let bases: Vec<String> = set.nodes.iter().map(|r| r.base()).collect();
    let http = reqwest::Client::new();

    let started = Instant::now();
    let mut expects: Vec<Expect> = Vec::new();
    // Replicas 1 and 2 are killed in turn; replica 0 never is, so its memory is followed for the
    // whole run.
    let (mut kills, mut next_kill, mut victim) = (0, started + kill_every, 1usize);
    let mut rss: Vec<Vec<(f64, f64)>> = vec![Vec::new(); 3];
    let mut since: Vec<Instant> = vec![started; 3];
    let mut last_sample = started;
    let mut i = 0usize;
    while started.elapsed() < Duration::from_secs(secs) {
        i += 1;
        let conv = format!("s{i}");
        let order = i % 3;
        let sent = match i % 5 {
            2 => {
                let up =
                    post(&http, &bases, order, "/api/v1/files?user=local&name=n.txt", Body::Bytes(b"soak".to_vec()));
                match up.await {
                    Some(file) => {
                        let text = format!("file-{i} read it");
                        let body = json!({"conversation": conv, "user": "local", "text": text, "files": [file["id"]]});
                        post(&http, &bases, order + 1, "/api/v1/messages", Body::Json(body)).await.map(|_| Expect {
                            conv: conv.clone(),
                            answer: format!("echo: {text}"),
                            approval: false,
                            kind: "upload",
                        })
                    }
                    None => None,
                }
            }
            3 => {
                let key = format!("write-{i} ");
                llm.on(&key, Reply::tool_call("file_write", json!({"path": format!("soak/{i}.txt"), "content": "x"})));
                llm.on(&key, Reply::text(&format!("written {i}")));
                let body = json!({"conversation": conv, "user": "local", "text": format!("{key}now")});
                post(&http, &bases, order, "/api/v1/messages", Body::Json(body)).await.map(|_| Expect {
                    conv: conv.clone(),
                    answer: format!("written {i}"),
                    approval: true,
                    kind: "approval",
                })
            }
            4 => {
                let key = format!("bg-{i} ");
                llm.on(&key, Reply::tool_call("delegate", json!({"task": "child-work", "background": true})));
                llm.on(&key, Reply::text(&format!("started {i}")));
                let body = json!({"conversation": conv, "user": "local", "text": format!("{key}now")});
                post(&http, &bases, order, "/api/v1/messages", Body::Json(body)).await.map(|_| Expect {
                    conv: conv.clone(),
                    answer: "report noted".into(),
                    approval: false,
                    kind: "background",
                })
            }
            _ => {
                let text = format!("t-{i} hello");
                let body = json!({"conversation": conv, "user": "local", "text": text});
                post(&http, &bases, order, "/api/v1/messages", Body::Json(body)).await.map(|_| Expect {
                    conv: conv.clone(),
                    answer: format!("echo: {text}"),
                    approval: false,
                    kind: "text",
                })
            }
        };
        expects.extend(sent);
        // Click what waits (a few at a time, oldest first).
        for e in expects.iter_mut().filter(|e| e.approval).take(4) {
            click(&http, &bases, i, e).await;
        }
        // A kill every so often, the replica back a few seconds later.
        if Instant::now() >= next_kill {
            set.kill(victim);
            kills += 1;
            tokio::time::sleep(Duration::from_secs(3)).await;
            set.start(victim).await;
            since[victim] = Instant::now();
            rss[victim].clear();
            victim = if victim == 1 { 2 } else { 1 };
            next_kill = Instant::now() + kill_every;
        }
        if last_sample.elapsed() >= Duration::from_secs(10) {
            last_sample = Instant::now();
            for (k, node) in set.nodes.iter().enumerate() {
                if let (Some(pid), true) = (node.pid(), since[k].elapsed() > warmup) {
                    rss[k].push((since[k].elapsed().as_secs_f64(), proc_mib(pid, "VmRSS:")));
                }
            }
        }
        tokio::time::sleep(tick).await;
    }

    // Everything settles; then each expected answer is counted.
    let deadline = Instant::now() + Duration::from_secs(180);
    let (mut lost, mut doubled) = (0, 0);
    for (k, e) in expects.iter_mut().enumerate() {
        while e.approval && Instant::now() < deadline {
            click(&http, &bases, k, e).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    for e in &expects {
        loop {
            let n = answers(&http, &bases, &e.conv).await.iter().filter(|a| e.answered_by(a)).count();
            if n >= 1 || Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    for e in &expects {
        let said = answers(&http, &bases, &e.conv).await;
        match said.iter().filter(|a| e.answered_by(a)).count() {
            0 => {
                if lost < 3 {
                    eprintln!("lost ({}): {} wanted {:?}, said {said:?}", e.kind, e.conv, e.answer);
                }
                lost += 1
            }
            1 => {}
            _ => doubled += 1,
        }
    }
    let minutes = (started.elapsed().as_secs() / 60) as usize;
    let ticks = answers(&http, &bases, "soak-sched").await.len();
    let slopes: Vec<f64> = rss.iter().map(|s| slope_per_hour(s)).collect();
    let rss_end: Vec<f64> = rss.iter().map(|s| s.last().map_or(0.0, |x| x.1)).collect();
    println!(
        "bench=soak replicas=3 secs={secs} kills={kills} messages={} lost={lost} doubled={doubled} \
         schedule_runs={ticks} minutes={minutes} rss_mib_end={:.1}/{:.1}/{:.1} rss_slope_mib_per_h={:.2}/{:.2}/{:.2}",
        expects.len(),
        rss_end[0],
        rss_end[1],
        rss_end[2],
        slopes[0],
        slopes[1],
        slopes[2],
    );
}
