//! Metric families with labels: counters and histograms keyed by a few label values from small,
//! bounded sets (providers, tools, channels, outcomes, error kinds). Each family sits behind one
//! std mutex, taken only to add a sample or to render.
//!
//! Label values must never be user content or identities (user ids, chat ids, message text):
//! callers pass names from configuration or code only.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

/// Upper bounds of the histogram buckets, in seconds.
pub const BOUNDS: [f64; 10] = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// Counters by label values.
pub struct CounterVec {
    values: Mutex<BTreeMap<Vec<String>, u64>>,
}

impl CounterVec {
    pub const fn new() -> Self {
        Self { values: Mutex::new(BTreeMap::new()) }
    }

    /// Adds one to the counter of `labels` (in the order the family renders them).
    pub fn inc(&self, labels: &[&str]) {
        let key: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
        *self.values.lock().unwrap_or_else(|p| p.into_inner()).entry(key).or_insert(0) += 1;
    }

    /// Adds `n` to the counter of `labels`.
    pub fn add(&self, labels: &[&str], n: u64) {
        let key: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
        *self.values.lock().unwrap_or_else(|p| p.into_inner()).entry(key).or_insert(0) += n;
    }

    /// The counter of `labels` (0 if never counted).
    pub fn get(&self, labels: &[&str]) -> u64 {
        let key: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
        self.values.lock().unwrap_or_else(|p| p.into_inner()).get(&key).copied().unwrap_or(0)
    }

    pub(super) fn render(&self, out: &mut String, name: &str, help: &str, names: &[&str]) {
        self.render_scaled(out, (name, help), names, 1.0);
    }

    /// Renders each counter times `scale` (micro-dollars counted, dollars shown).
    pub(super) fn render_scaled(&self, out: &mut String, (name, help): (&str, &str), names: &[&str], scale: f64) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (values, n) in self.values.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            if scale == 1.0 {
                let _ = writeln!(out, "{name}{} {n}", labels(names, values, None));
            } else {
                let _ = writeln!(out, "{name}{} {}", labels(names, values, None), *n as f64 * scale);
            }
        }
    }
}

impl Default for CounterVec {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Default, Clone)]
struct Samples {
    buckets: [u64; BOUNDS.len()],
    count: u64,
    sum: f64,
}

/// Histograms of durations in seconds, by one label's value.
pub struct HistogramVec {
    values: Mutex<BTreeMap<String, Samples>>,
}

impl HistogramVec {
    pub const fn new() -> Self {
        Self { values: Mutex::new(BTreeMap::new()) }
    }

    pub fn observe(&self, label: &str, secs: f64) {
        let mut map = self.values.lock().unwrap_or_else(|p| p.into_inner());
        let s = map.entry(label.to_string()).or_default();
        for (b, bound) in s.buckets.iter_mut().zip(BOUNDS) {
            if secs <= bound {
                *b += 1;
            }
        }
        s.count += 1;
        s.sum += secs;
    }

    pub(super) fn render(&self, out: &mut String, name: &str, help: &str, label: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (value, s) in self.values.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let key = [value.clone()];
            for (b, bound) in s.buckets.iter().zip(BOUNDS) {
                let _ = writeln!(out, "{name}_bucket{} {b}", labels(&[label], &key, Some(&bound.to_string())));
            }
            let _ = writeln!(out, "{name}_bucket{} {}", labels(&[label], &key, Some("+Inf")), s.count);
            let _ = writeln!(out, "{name}_sum{} {}", labels(&[label], &key, None), s.sum);
            let _ = writeln!(out, "{name}_count{} {}", labels(&[label], &key, None), s.count);
        }
    }
}

impl Default for HistogramVec {
    fn default() -> Self {
        Self::new()
    }
}

/// `{a="x",b="y"}` (and `le` last when given), values escaped as the text format wants.
fn labels(names: &[&str], values: &[String], le: Option<&str>) -> String {
    let mut parts: Vec<String> = names.iter().zip(values).map(|(n, v)| format!("{n}=\"{}\"", escape(v))).collect();
    if let Some(le) = le {
        parts.push(format!("le=\"{le}\""));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_render_their_labels_escaped() {
        let c = CounterVec::new();
        c.inc(&["telegram", "sent"]);
        c.inc(&["telegram", "sent"]);
        c.inc(&["we\"ird\\", "failed"]);
        let mut out = String::new();
        c.render(&mut out, "butler_x_total", "X", &["channel", "outcome"]);
        let want = "# HELP butler_x_total X\n# TYPE butler_x_total counter\n\
                    butler_x_total{channel=\"telegram\",outcome=\"sent\"} 2\n\
                    butler_x_total{channel=\"we\\\"ird\\\\\",outcome=\"failed\"} 1\n";
        assert_eq!(out, want);

        let h = HistogramVec::new();
        h.observe("openai", 0.2);
        h.observe("openai", 40.0);
        let mut out = String::new();
        h.render(&mut out, "butler_y_seconds", "Y", "provider");
        for line in [
            "butler_y_seconds_bucket{provider=\"openai\",le=\"0.1\"} 0",
            "butler_y_seconds_bucket{provider=\"openai\",le=\"0.25\"} 1",
            "butler_y_seconds_bucket{provider=\"openai\",le=\"+Inf\"} 2",
            "butler_y_seconds_count{provider=\"openai\"} 2",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} in\n{out}");
        }
    }
}
