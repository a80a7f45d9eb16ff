//! Event streams of the web chat leave nothing behind: a conversation's fan-out entry lives only
//! while a page listens (the hub's gauge in /metrics counts them).

use super::post;
use crate::support::proc::Deployment;
use futures::StreamExt;
use std::time::Duration;

async fn stream_entries(base: &str) -> i64 {
    let text = reqwest::get(format!("{base}/metrics")).await.unwrap().text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("butler_web_stream_conversations "))
        .and_then(|v| v.trim().parse().ok())
        .expect("the gauge is exported")
}

/// Waits until the gauge reads `want` (closing a stream is noticed when the server next
/// writes to it or sees the socket close).
async fn wait_entries(base: &str, want: i64) {
    for _ in 0..600 {
        if stream_entries(base).await == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(stream_entries(base).await, want, "stream entries");
}

#[tokio::test]
async fn closing_streams_drops_their_conversations_from_the_hub() {
    let dep = Deployment::new("");
    let server = dep.serve().await;
    let base = dep.base();
    let conversations: Vec<String> = (0..40).map(|i| format!("s{i}")).collect();
    for c in &conversations {
        post(&base, c, "hello").await;
    }
    let client = reqwest::Client::new();
    // (streams per conversation opened, then closed) -> entries while open, after close.
    for per_conversation in [1usize, 3] {
        let mut open = Vec::new();
        for c in &conversations {
            for _ in 0..per_conversation {
                let r = client.get(format!("{base}/api/v1/conversations/{c}/stream")).send().await.unwrap();
                assert_eq!(r.status(), 200);
                open.push(r.bytes_stream());
            }
        }
        wait_entries(&base, conversations.len() as i64).await;
        // One page of the first conversation stays: its entry stays, the others go.
        let keep = open.remove(0);
        drop(open);
        wait_entries(&base, 1).await;
        drop(keep);
        wait_entries(&base, 0).await;
    }
    // A stream still works after its entry was dropped and made anew.
    let r = client.get(format!("{base}/api/v1/conversations/s0/stream")).send().await.unwrap();
    let mut body = r.bytes_stream();
    wait_entries(&base, 1).await;
    post(&base, "s0", "again").await;
    let chunk = tokio::time::timeout(Duration::from_secs(10), body.next()).await.expect("an event").unwrap().unwrap();
    assert!(String::from_utf8_lossy(&chunk).contains("event: created"));
    server.kill();
}
