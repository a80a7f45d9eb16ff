//! Telegram-path benchmark: the real `butler serve` binary (release build) long-polling the
//! in-process fake Bot API (tests/support/fake_telegram.rs) with the zero-latency fake LLM.
//! Every turn is one private message in, through getUpdates, the inbox, triage, the session,
//! the agent turn and the outbox, to one sendMessage (HTML) out.
//!
//! Telegram's own limits (30 messages/s, 1/s per chat) would make this measure the send
//! scheduler, so the run lifts them (`max_per_second`, `chat_interval_ms`) and reports the
//! capacity of the path; with the default limits a bot is capped at 30 answers per second by
//! design. Run: `cargo bench --bench telegram`. Tunables: BENCH_CHATS (default 100),
//! BENCH_TURNS (per chat, default 10). Prints one line starting with `bench=telegram_turns`.
//! It must never reach the network: both fakes listen on loopback.

#[path = "../tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

use std::time::{Duration, Instant};
use support::bench::env_usize;
use support::fake_llm::FakeLlm;
use support::fake_telegram::updates::{message, new_message, user};
use support::fake_telegram::FakeTelegram;
use support::proc::Deployment;

const TOKEN: &str = "4242:BENCH-token";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let chats = env_usize("BENCH_CHATS", 100);
    let turns = env_usize("BENCH_TURNS", 10);
    std::env::set_var("BUTLER_TEST_CHILD_LOG", "warn");
    let fake = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    llm.set_record_limit(0);
    let dep = Deployment::new(&format!(
        "[llm]\nprovider = \"openai\"\nbase_url = \"{}\"\nmodel = \"fake-model\"\n\n[access]\npolicy = \"open\"\n\n\
         [channels.telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\nmax_per_second = 1000000\nchat_interval_ms = 0\n",
        llm.openai_url(),
        fake.api_url()
    ));
    let server = dep.serve().await;
    fake.wait_calls("getUpdates", 1, 30).await;

    // Warm-up: one turn per chat (sessions open, users stored), not measured.
    let mut next_id = 1;
    let mut push_round = |round: usize| {
        for c in 0..chats {
            let chat = 500_000 + c as i64;
            let text = format!("turn {round} in chat {c}");
            fake.push(new_message(message(chat, next_id, user(chat, "Bench"), &text, serde_json::json!([]))));
            next_id += 1;
        }
    };
    push_round(0);
    wait_sent(&fake, chats, &server).await;

    let start = Instant::now();
    for round in 1..=turns {
        push_round(round);
    }
    let total = chats * turns;
    wait_sent(&fake, chats + total, &server).await;
    let secs = start.elapsed().as_secs_f64();
    let violations = fake.calls("sendMessage").iter().filter(|c| c.body["parse_mode"] != "HTML").count();
    println!(
        "bench=telegram_turns backend=sqlite chats={chats} turns={total} secs={secs:.2} turns_per_s={:.0} \
         limits=lifted non_html_sends={violations}",
        total as f64 / secs
    );
    drop(server);
}

async fn wait_sent(fake: &FakeTelegram, n: usize, server: &support::proc::Server) {
    let deadline = Instant::now() + Duration::from_secs(600);
    while fake.calls("sendMessage").len() < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n} answers; log:\n{}",
            fake.calls("sendMessage").len(),
            server.log_text()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
