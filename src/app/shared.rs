//! What replicas must share, checked as one starts (with `[redis]` only):
//!
//! - The workspace folder (`[tools] workspace_dir`: uploads, attachments, the agent's
//!   workspaces). Each replica writes a marker file with a random value under
//!   `<workspace_dir>/.butler-replicas/` and states the value in Redis; a replica that cannot
//!   read every running replica's marker with the value it stated is not on the same folder, and
//!   refuses to start, naming the folder and what to do. The check is symmetric: a running
//!   replica whose folder differs cannot see the newcomer's marker either, and the newcomer
//!   cannot see its, so it refuses.
//! - The config. Each replica states a digest per section of its effective config (secrets
//!   masked, its own listen address and Matrix device left out); one whose sections differ from
//!   a running replica's logs a warning naming them, and `/metrics` counts them
//!   (`butler_replica_config_differing_sections`). It still starts.
//!
//! Like the rest of `app`, it must stay free of business logic, and it never reads a file it
//! did not ask a replica to write.

use super::error::AppError;
use crate::cluster::Cluster;
use crate::config::Config;
use crate::metrics::METRICS;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

/// The folder of markers inside the workspace.
pub const MARKS: &str = ".butler-replicas";
/// Markers of replicas gone this long are removed.
const STALE: Duration = Duration::from_secs(600);

/// Checks the workspace (refusing to start when it is not shared) and compares the config.
pub(super) async fn check(cfg: &Config, cluster: &Cluster) -> Result<(), AppError> {
    if !cluster.shared() {
        return Ok(());
    }
    workspace(Path::new(&cfg.tools.workspace_dir), cluster).await?;
    let differing = config(cfg, cluster).await;
    METRICS.config_differs.set(differing as i64);
    Ok(())
}

async fn workspace(dir: &Path, cluster: &Cluster) -> Result<(), AppError> {
    let marks = dir.join(MARKS);
    let unwritable = |e: std::io::Error| {
        AppError::Replicas(format!(
            "cannot write in the workspace folder {} ([tools] workspace_dir): {e}; every replica needs it \
             writable",
            dir.display()
        ))
    };
    std::fs::create_dir_all(&marks).map_err(unwritable)?;
    let mine = hex::encode(rand::random::<[u8; 16]>());
    std::fs::write(marks.join(cluster.worker()), &mine).map_err(unwritable)?;
    cluster.state_fact("workspace", &mine).await.map_err(AppError::Redis)?;
    let others = cluster.facts_of_others("workspace").await.map_err(AppError::Redis)?;
    for (worker, theirs) in &others {
        let plain = worker.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        let seen = plain.then(|| std::fs::read_to_string(marks.join(worker)).ok()).flatten();
        if seen.as_deref() != Some(theirs.as_str()) {
            let _ = std::fs::remove_file(marks.join(cluster.worker()));
            return Err(AppError::Replicas(format!(
                "the workspace folder {} ([tools] workspace_dir) is not the one the running replica {worker} \
                 uses, so a file uploaded through one replica would be unknown to the other: mount one shared \
                 folder (a volume every replica mounts: NFS, CephFS, EFS, Azure Files, Filestore) at the same \
                 path on every replica and point workspace_dir at it, then start again",
                dir.display()
            )));
        }
    }
    prune(&marks, &others, cluster.worker());
    tracing::info!(workspace = %dir.display(), replicas = others.len(), "the workspace folder is shared with the running replicas");
    Ok(())
}

/// Removes the markers of replicas that are gone (not running, and older than [`STALE`]).
fn prune(marks: &Path, running: &BTreeMap<String, String>, me: &str) {
    let Ok(entries) = std::fs::read_dir(marks) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let old =
            entry.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|a| a > STALE);
        if name != me && !running.contains_key(&name) && old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// States this replica's config digests and compares them with the running replicas'; how many
/// sections differ from at least one of them.
async fn config(cfg: &Config, cluster: &Cluster) -> usize {
    let mine = cfg.section_digests();
    let text = serde_json::to_string(&mine).unwrap_or_default();
    let others = match cluster.state_fact("config", &text).await {
        Ok(()) => cluster.facts_of_others("config").await,
        Err(e) => Err(e),
    };
    let others = match others {
        Ok(o) => o,
        Err(e) => {
            tracing::warn!(error = %e, "could not compare this replica's config with the others'");
            return 0;
        }
    };
    let mut sections = BTreeSet::new();
    let mut replicas = Vec::new();
    for (worker, theirs) in others {
        let theirs: BTreeMap<String, String> = serde_json::from_str(&theirs).unwrap_or_default();
        let differ = differing(&mine, &theirs);
        if !differ.is_empty() {
            replicas.push(worker);
            sections.extend(differ);
        }
    }
    if !sections.is_empty() {
        let names: Vec<&str> = sections.iter().map(String::as_str).collect();
        tracing::warn!(
            sections = %names.join(","),
            replicas = %replicas.join(","),
            "this replica's config differs from running replicas' in these sections: a message may be answered \
             differently depending on the replica it reaches; give every replica the same config"
        );
    }
    sections.len()
}

/// The sections whose digests differ (or that only one side has).
pub fn differing(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    let names: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names.into_iter().filter(|n| a.get(*n) != b.get(*n)).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_that_differ() {
        let map = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        type Digests = BTreeMap<String, String>;
        let cases: [(Digests, Digests, &[&str]); 3] = [
            (map(&[("llm", "1"), ("mcp", "2")]), map(&[("llm", "1"), ("mcp", "2")]), &[]),
            (map(&[("llm", "1"), ("mcp", "2")]), map(&[("llm", "9"), ("mcp", "2")]), &["llm"]),
            (map(&[("llm", "1")]), map(&[("llm", "1"), ("skills", "3")]), &["skills"]),
        ];
        for (a, b, want) in cases {
            assert_eq!(differing(&a, &b), want);
        }
    }
}
