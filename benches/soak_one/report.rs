//! The soak's result: one `bench=soak_one` line with the counts and, per sampled series, its
//! first, last and largest value after the warm-up and its slope per hour; then a
//! `bench=target` line per check (lower is better, met when at most the bound).

use crate::sample::{metric, metric_sum, series, Sample, BOUNDS, SERIES};
use crate::script::{sent_of, Kind};
use crate::support::bench::slope_per_hour;
use crate::{Tally, Tunables};

/// What the run found.
pub struct Facts<'a> {
    pub tunables: &'a Tunables,
    pub load_secs: u64,
    pub turns: usize,
    pub tally: Tally,
    /// `channel:messages` pairs, comma-separated.
    pub by_channel: String,
    pub approvals: usize,
    pub uploads: usize,
    /// Messages a person gave up waiting on.
    pub stalls: usize,
    /// The scheduled job's runs, and the least and most it may have run.
    pub schedule: (usize, u64, u64),
    /// /metrics at the end.
    pub metrics: String,
    pub cpu_secs: f64,
    pub samples: Vec<Sample>,
}

/// `rss_mib` -> `rss_slope_mib_per_h`, `fds` -> `fds_slope_per_h`.
fn slope_key(name: &str) -> String {
    match name.strip_suffix("_mib") {
        Some(base) => format!("{base}_slope_mib_per_h"),
        None => format!("{name}_slope_per_h"),
    }
}

/// Prints the figures; whether every target was met.
pub fn print(f: &Facts) -> bool {
    let warm: Vec<Sample> = f.samples.iter().filter(|s| s.t >= f.tunables.warmup as f64).cloned().collect();
    let tools = ["file_write", "stdio__echo", "http__echo"];
    let calls = |tool: &str, outcome: &[&str]| {
        let label = format!("tool=\"{tool}\"");
        let mut labels = vec![label.as_str()];
        labels.extend(outcome);
        metric_sum(&f.metrics, "butler_tool_calls_total", &labels)
    };
    let tool_ok: f64 = tools.iter().map(|t| calls(t, &["outcome=\"ok\""])).sum();
    let tool_errors: f64 = tools.iter().map(|t| calls(t, &[])).sum::<f64>() - tool_ok;
    let failed = |name: &str| metric(&f.metrics, name).unwrap_or(f64::NAN);
    let (runs, least, most) = f.schedule;
    let mut line = format!(
        "bench=soak_one secs={} warmup_secs={} tick_ms={} sample_secs={} turns={} answered={} lost={} doubled={} \
         stalls={} channels={} approvals={} uploads={} mcp_turns={} helper_turns={} background_turns={} \
         tool_calls_ok={tool_ok} tool_errors={tool_errors} events_failed={} turns_failed={} schedule_runs={runs} \
         schedule_minutes={least}..{most} cpu_secs={:.0} samples={}",
        f.load_secs,
        f.tunables.warmup,
        f.tunables.tick.as_millis(),
        f.tunables.sample.as_secs(),
        f.turns,
        f.tally.answered,
        f.tally.lost,
        f.tally.doubled,
        f.stalls,
        f.by_channel,
        f.approvals,
        f.uploads,
        sent_of(Kind::McpStdio) + sent_of(Kind::McpHttp),
        sent_of(Kind::Helper),
        sent_of(Kind::Background),
        failed("butler_events_failed_total"),
        failed("butler_turns_failed_total"),
        f.cpu_secs,
        warm.len(),
    );
    let mut slopes = Vec::new();
    for name in SERIES {
        let points = series(&warm, name);
        let values: Vec<f64> = points.iter().map(|p| p.1).filter(|v| v.is_finite()).collect();
        let (first, last) = (values.first().copied().unwrap_or(0.0), values.last().copied().unwrap_or(0.0));
        let max = values.iter().copied().fold(0.0, f64::max);
        let slope = slope_per_hour(&points);
        let digits = if name.ends_with("_mib") { 1 } else { 0 };
        line.push_str(&format!(
            " {name}_start={first:.digits$} {name}_end={last:.digits$} {name}_max={max:.digits$} {}={slope:.2}",
            slope_key(name)
        ));
        slopes.push((name, slope));
    }
    println!("{line}");
    // BENCH_SOAK_CSV: a file to write every sample to, warm-up included (to look at the shapes).
    if let Ok(path) = std::env::var("BENCH_SOAK_CSV") {
        let mut csv = format!("t,{}\n", SERIES.join(","));
        for s in &f.samples {
            let values: Vec<String> = s.values.iter().map(|v| format!("{v:.2}")).collect();
            csv.push_str(&format!("{:.0},{}\n", s.t, values.join(",")));
        }
        if let Err(e) = std::fs::write(&path, csv) {
            eprintln!("soak_one: cannot write {path}: {e}");
        }
    }

    let mut missed = Vec::new();
    let mut target = |name: String, value: f64, bound: f64| {
        let met = value <= bound;
        println!("bench=target name={name} value={value:.2} bound={bound} met={met}");
        if !met {
            missed.push(name);
        }
    };
    target("soak_one.lost".into(), f.tally.lost as f64, 0.0);
    target("soak_one.doubled".into(), f.tally.doubled as f64, 0.0);
    target("soak_one.tool_errors".into(), tool_errors, 0.0);
    // A run at the minute the load stopped may still be on its way: one short is allowed.
    target("soak_one.schedule_missed".into(), (least as f64 - 1.0 - runs as f64).max(0.0), 0.0);
    target("soak_one.schedule_extra".into(), (runs as f64 - most as f64).max(0.0), 0.0);
    for bound in &BOUNDS {
        let slope = slopes.iter().find(|(n, _)| *n == bound.series).map_or(0.0, |s| s.1);
        let name = bound.series.strip_suffix("_mib").unwrap_or(bound.series);
        target(format!("soak_one.{name}_slope"), slope, bound.max);
    }
    if warm.len() < 3 {
        println!("bench=soak_one note=fewer than 3 samples after the warm-up: the slopes mean nothing");
    }
    println!("bench=targets missed={}", if missed.is_empty() { "none".to_string() } else { missed.join(",") });
    missed.is_empty()
}
