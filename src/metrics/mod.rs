//! Process metrics in Prometheus text format, served at `GET /metrics`.
//!
//! Plain atomics in one static: cheap enough for hot paths, no registry to thread through;
//! labelled families (`family.rs`) for what is counted per provider, tool or channel. Names
//! follow Prometheus' conventions: the `butler_` prefix, base units (`_seconds`), `_total` on
//! counters. Metrics must never carry user content or identities as labels (cardinality and
//! privacy).

mod family;
mod watchdog;

pub use family::{CounterVec, HistogramVec};
pub use watchdog::{Watchdog, Watched, Work, WATCHDOG};

use family::BOUNDS;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

#[derive(Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    pub fn inc(&self) {
        self.add(1);
    }

    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

#[derive(Default)]
pub struct Gauge(AtomicI64);

impl Gauge {
    pub const fn new() -> Self {
        Self(AtomicI64::new(0))
    }

    pub fn add(&self, n: i64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }

    pub fn set(&self, n: i64) {
        self.0.store(n, Ordering::Relaxed);
    }
}

/// Turn durations in seconds, with fixed buckets.
pub struct Histogram {
    buckets: [AtomicU64; 10],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Histogram {
    pub const fn new() -> Self {
        Self { buckets: [const { AtomicU64::new(0) }; 10], count: AtomicU64::new(0), sum_micros: AtomicU64::new(0) }
    }

    pub fn observe(&self, secs: f64) {
        for (b, bound) in self.buckets.iter().zip(BOUNDS) {
            if secs <= bound {
                b.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add((secs * 1e6) as u64, Ordering::Relaxed);
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

pub struct Metrics {
    pub events_accepted: Counter,
    pub events_duplicate: Counter,
    pub events_failed: Counter,
    pub turns: Counter,
    pub turns_failed: Counter,
    pub turn_seconds: Histogram,
    pub llm_input_tokens: Counter,
    pub llm_output_tokens: Counter,
    pub outbox_sent: Counter,
    pub outbox_retried: Counter,
    pub outbox_failed: Counter,
    pub sessions_live: Gauge,
    /// Web conversations with an open event stream (hub entries).
    pub web_streams: Gauge,
    /// Leases this replica holds (sessions, leader roles, its heartbeat).
    pub leases_held: Gauge,
    /// Config sections in which this replica differs from a running replica (at its start).
    pub config_differs: Gauge,
    /// Leases another replica took from this one.
    pub leases_lost: Counter,
    /// Leader leases won (a receiver or the reaper started here).
    pub leader_acquired: Counter,
    /// Inbox events taken back from a replica whose heartbeat expired.
    pub takeovers: Counter,
    /// Commits refused because another replica had taken the session over.
    pub fencing_refusals: Counter,
    /// Model requests, by provider: time to the end of the answer.
    pub llm_seconds: HistogramVec,
    /// Model requests that failed, by provider and kind (`rate_limited`, `timeout`, ...).
    pub llm_errors: CounterVec,
    /// Tool calls, by tool and outcome (`ok`, `error`, `denied`, `timeout`, ...).
    pub tool_calls: CounterVec,
    /// Delivery attempts, by channel and outcome (`sent`, `retried`, `failed`).
    pub deliveries: CounterVec,
    /// Model tokens recorded, by model, kind of call (`turn`, `delegate`, `archivist`, ...) and
    /// direction (`input`, `output`).
    pub llm_tokens: CounterVec,
    /// Model cost recorded in micro-dollars, by model and kind of call.
    pub llm_cost_micros: CounterVec,
}

pub static METRICS: Metrics = Metrics {
    events_accepted: Counter::new(),
    events_duplicate: Counter::new(),
    events_failed: Counter::new(),
    turns: Counter::new(),
    turns_failed: Counter::new(),
    turn_seconds: Histogram::new(),
    llm_input_tokens: Counter::new(),
    llm_output_tokens: Counter::new(),
    outbox_sent: Counter::new(),
    outbox_retried: Counter::new(),
    outbox_failed: Counter::new(),
    sessions_live: Gauge::new(),
    web_streams: Gauge::new(),
    leases_held: Gauge::new(),
    config_differs: Gauge::new(),
    leases_lost: Counter::new(),
    leader_acquired: Counter::new(),
    takeovers: Counter::new(),
    fencing_refusals: Counter::new(),
    llm_seconds: HistogramVec::new(),
    llm_errors: CounterVec::new(),
    tool_calls: CounterVec::new(),
    deliveries: CounterVec::new(),
    llm_tokens: CounterVec::new(),
    llm_cost_micros: CounterVec::new(),
};

/// Appends a gauge read at scrape time (from the database): nothing when it could not be read.
pub fn render_gauge(out: &mut String, name: &str, help: &str, value: Option<i64>) {
    if let Some(v) = value {
        let _ = writeln!(
            out,
            "# HELP {name} {help}
# TYPE {name} gauge
{name} {v}"
        );
    }
}

impl Metrics {
    /// Counts one recorded model call (or a turn's calls on one model): tokens and cost by
    /// model and kind. Model names come from the config and the provider, never from people.
    pub fn count_llm_usage(&self, model: &str, kind: &str, input: i64, output: i64, cost_usd: f64) {
        self.llm_tokens.add(&[model, kind, "input"], input.max(0) as u64);
        self.llm_tokens.add(&[model, kind, "output"], output.max(0) as u64);
        let micros = if cost_usd.is_finite() && cost_usd > 0.0 { (cost_usd * 1e6).round() as u64 } else { 0 };
        self.llm_cost_micros.add(&[model, kind], micros);
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let counters: [(&str, &str, &Counter); 14] = [
            ("butler_events_accepted_total", "Inbound events stored for the first time", &self.events_accepted),
            ("butler_events_duplicate_total", "Inbound events dropped as redeliveries", &self.events_duplicate),
            ("butler_events_failed_total", "Inbound events given up on (dead letters)", &self.events_failed),
            ("butler_turns_total", "Agent turns finished", &self.turns),
            ("butler_turns_failed_total", "Agent turns that failed and were retried", &self.turns_failed),
            ("butler_llm_input_tokens_total", "Input tokens sent to the model", &self.llm_input_tokens),
            ("butler_llm_output_tokens_total", "Output tokens received from the model", &self.llm_output_tokens),
            ("butler_outbox_sent_total", "Replies delivered", &self.outbox_sent),
            ("butler_outbox_retried_total", "Delivery attempts rescheduled", &self.outbox_retried),
            ("butler_outbox_failed_total", "Replies that could not be delivered", &self.outbox_failed),
            ("butler_leases_lost_total", "Leases another replica took from this one", &self.leases_lost),
            ("butler_leader_acquired_total", "Leader leases won by this replica", &self.leader_acquired),
            ("butler_takeovers_total", "Inbox events taken back from a dead replica", &self.takeovers),
            (
                "butler_fencing_refusals_total",
                "Commits refused: the session had moved to another replica",
                &self.fencing_refusals,
            ),
        ];
        for (name, help, c) in counters {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}", c.get());
        }
        render_gauge(&mut out, "butler_sessions_live", "Session actors in memory", Some(self.sessions_live.get()));
        render_gauge(&mut out, "butler_leases_held", "Leases this replica holds", Some(self.leases_held.get()));
        render_gauge(
            &mut out,
            "butler_replica_config_differing_sections",
            "Config sections in which this replica differs from the running replicas (checked at start)",
            Some(self.config_differs.get()),
        );
        let streams = Some(self.web_streams.get());
        render_gauge(
            &mut out,
            "butler_web_stream_conversations",
            "Web conversations with an open event stream",
            streams,
        );
        let _ = writeln!(
            out,
            "# HELP butler_channel_unreadable_updates_total Platform updates that could not be read (acknowledged, logged)\n\
             # TYPE butler_channel_unreadable_updates_total counter"
        );
        for (channel, n) in butler_channel::unreadable_counts() {
            let _ = writeln!(out, "butler_channel_unreadable_updates_total{{channel=\"{channel}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "# HELP butler_channel_delivery_statuses_total Delivery statuses platforms reported for sent messages\n\
             # TYPE butler_channel_delivery_statuses_total counter"
        );
        for (channel, status, n) in butler_channel::status_counts() {
            let _ = writeln!(
                out,
                "butler_channel_delivery_statuses_total{{channel=\"{channel}\",status=\"{status}\"}} {n}"
            );
        }
        let h = &self.turn_seconds;
        let _ = writeln!(out, "# HELP butler_turn_seconds Agent turn duration\n# TYPE butler_turn_seconds histogram");
        for (b, bound) in h.buckets.iter().zip(BOUNDS) {
            let _ = writeln!(out, "butler_turn_seconds_bucket{{le=\"{bound}\"}} {}", b.load(Ordering::Relaxed));
        }
        let count = h.count.load(Ordering::Relaxed);
        let _ = writeln!(out, "butler_turn_seconds_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(out, "butler_turn_seconds_sum {}", h.sum_micros.load(Ordering::Relaxed) as f64 / 1e6);
        let _ = writeln!(out, "butler_turn_seconds_count {count}");
        self.llm_seconds.render(&mut out, "butler_llm_request_seconds", "Model request duration", "provider");
        self.llm_errors.render(
            &mut out,
            "butler_llm_errors_total",
            "Model requests that failed",
            &["provider", "kind"],
        );
        self.tool_calls.render(&mut out, "butler_tool_calls_total", "Tool calls", &["tool", "outcome"]);
        self.deliveries.render(&mut out, "butler_deliveries_total", "Delivery attempts", &["channel", "outcome"]);
        self.llm_tokens.render(
            &mut out,
            "butler_llm_tokens_total",
            "Model tokens recorded, by model, kind of call and direction",
            &["model", "kind", "direction"],
        );
        let cost = ("butler_llm_cost_usd_total", "Model cost recorded in US dollars, by model and kind of call");
        self.llm_cost_micros.render_scaled(&mut out, cost, &["model", "kind"], 1e-6);
        WATCHDOG.render(&mut out);
        out
    }
}
