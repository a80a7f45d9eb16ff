//! The gate's reading of a callgrind output file: total instructions and calls by function.
//!
//! It must never guess a name it has not seen defined (an unknown id reads as empty).

use std::collections::BTreeMap;
use std::path::Path;

/// What one callgrind dump says: total instructions, and calls made to each function by name.
pub struct Dump {
    pub instructions: u64,
    calls: BTreeMap<String, u64>,
}

impl Dump {
    /// Parses a callgrind output file written with name compression (`(id) name`, then `(id)`).
    pub fn read(path: &Path) -> Self {
        let text = std::fs::read_to_string(path).unwrap();
        let mut names: BTreeMap<String, String> = BTreeMap::new();
        let mut calls: BTreeMap<String, u64> = BTreeMap::new();
        let mut instructions = 0;
        let mut callee: Option<String> = None;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("totals:").or_else(|| line.strip_prefix("summary:")) {
                instructions = rest.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0);
            } else if let Some(rest) = line.strip_prefix("cfn=") {
                callee = Some(Self::name(&mut names, rest));
            } else if let Some(rest) = line.strip_prefix("fn=") {
                Self::name(&mut names, rest);
            } else if let Some(rest) = line.strip_prefix("calls=") {
                let n: u64 = rest.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0);
                if let Some(f) = &callee {
                    *calls.entry(f.clone()).or_default() += n;
                }
            }
        }
        Self { instructions, calls }
    }

    /// Resolves a compressed name: `(12) foo` defines id 12, `(12)` refers to it.
    pub fn name(names: &mut BTreeMap<String, String>, field: &str) -> String {
        match field.strip_prefix('(').and_then(|r| r.split_once(')')) {
            Some((id, rest)) if !rest.trim().is_empty() => {
                names.insert(id.to_string(), rest.trim().to_string());
                rest.trim().to_string()
            }
            Some((id, _)) => names.get(id).cloned().unwrap_or_default(),
            None => field.trim().to_string(),
        }
    }

    /// Calls to functions whose name `matches`.
    pub fn calls_to(&self, matches: impl Fn(&str) -> bool) -> u64 {
        self.calls.iter().filter(|(name, _)| matches(name)).map(|(_, n)| n).sum()
    }
}
