//! Media benchmark (issue 19): memory of the real `butler serve` (release build, SQLite, an
//! in-process fake LLM) while 20 people upload a 20 MB file each at the same time through the
//! web chat and send it in a message, so that each file is streamed to disk, copied into the
//! person's workspace, sniffed, and (for text) read up to the `[media] max_chars` bound.
//!
//! `bench=media_uploads`: the resident memory before, its peak while the uploads and their
//! turns run (VmHWM), the growth, and the throughput; every message must be answered. Fails if
//! the growth passes `allowed_growth_mb` (a file held whole in memory per upload would pass it
//! five times over).
//!
//! Run: `cargo bench --bench media`. Tunables: BENCH_MEDIA_UPLOADS (default 20),
//! BENCH_MEDIA_MB (default 20). It must never talk to anything but loopback, and never leave a
//! process behind.

#[path = "../tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::bench::{env_usize, proc_mib, Serve};
use support::fake_llm::{FakeLlm, Reply};

/// The most the resident memory may grow while the uploads run, in MiB.
const ALLOWED_GROWTH_MB: f64 = 100.0;

/// `size` bytes in 64 KB pieces, made as they are sent (the bench holds no file either): text
/// lines for even uploads, bytes of no known type for odd ones.
fn body(i: usize, size: usize) -> reqwest::Body {
    const PIECE: usize = 64 * 1024;
    let line = format!("row {i},some,comma,separated,values,for,the,bench\n").into_bytes();
    let pieces = (0..size.div_ceil(PIECE)).map(move |n| {
        let len = PIECE.min(size - n * PIECE);
        let piece: Vec<u8> = if i.is_multiple_of(2) {
            line.iter().copied().cycle().take(len).collect()
        } else {
            (0..len).map(|k| ((k * 7 + n * 13 + i) % 251) as u8 | 0x80).collect()
        };
        Ok::<_, std::io::Error>(piece)
    });
    reqwest::Body::wrap_stream(futures::stream::iter(pieces))
}

/// One person: uploads the file, sends it, waits for the answer.
async fn one(client: reqwest::Client, base: String, i: usize, size: usize) {
    let name = if i.is_multiple_of(2) { format!("table-{i}.csv") } else { format!("archive-{i}.bin") };
    let r = client
        .post(format!("{base}/api/v1/files?user=local&name={name}"))
        .header("content-type", if i.is_multiple_of(2) { "text/csv" } else { "application/octet-stream" })
        .body(body(i, size))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "upload {i}");
    let file: Value = r.json().await.unwrap();
    assert_eq!(file["size"].as_u64(), Some(size as u64));
    let conv = format!("u{i}");
    let msg = json!({"conversation": conv, "user": "local", "text": "what is in this file?", "files": [file["id"]]});
    let r = client.post(format!("{base}/api/v1/messages")).json(&msg).send().await.unwrap();
    assert_eq!(r.status(), 202, "message {i}");
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let r = client.get(format!("{base}/api/v1/conversations/{conv}/messages")).send().await.unwrap();
        let v: Value = r.json().await.unwrap();
        let answered = v["messages"].as_array().is_some_and(|m| m.iter().any(|m| m["role"] == "assistant"));
        if answered {
            return;
        }
        assert!(Instant::now() < deadline, "message {i} was not answered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let uploads = env_usize("BENCH_MEDIA_UPLOADS", 20);
    let size = env_usize("BENCH_MEDIA_MB", 20) * 1024 * 1024;
    let llm = FakeLlm::start().await;
    llm.set_default(Reply::text("A file."));
    let extra = format!("[tools]\nworkspace_dir = \"{{dir}}/ws\"\n[media]\nmax_bytes = {size}");
    let serve = Serve::sqlite(&llm.openai_url(), &extra).await;
    let pid = serve.child.id();
    let client = reqwest::Client::new();
    // Warm up: one small upload and turn, so start-up allocations are not counted as growth.
    one(client.clone(), serve.base.clone(), 0, 64 * 1024).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = proc_mib(pid, "VmRSS");

    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 1..=uploads {
        tasks.spawn(one(client.clone(), serve.base.clone(), i, size));
    }
    let mut peak_sampled = before;
    loop {
        tokio::select! {
            done = tasks.join_next() => match done {
                Some(r) => r.expect("an upload task"),
                None => break,
            },
            _ = tokio::time::sleep(Duration::from_millis(10)) => {
                peak_sampled = peak_sampled.max(proc_mib(pid, "VmRSS"));
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let peak = proc_mib(pid, "VmHWM").max(peak_sampled);
    let growth = peak - before;
    let total_mb = (uploads * size) as f64 / (1024.0 * 1024.0);
    println!(
        "bench=media_uploads uploads={uploads} size_mb={} peak_rss_mb={peak:.1} rss_before_mb={before:.1} \
         rss_growth_mb={growth:.1} allowed_growth_mb={ALLOWED_GROWTH_MB:.0} seconds={seconds:.2} mb_per_s={:.1} \
         messages={uploads}",
        size / (1024 * 1024),
        total_mb / seconds,
    );
    drop(serve);
    assert!(growth <= ALLOWED_GROWTH_MB, "memory grew by {growth:.1} MiB while the uploads ran");
}
