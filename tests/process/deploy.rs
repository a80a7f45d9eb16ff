//! The deployment files under deploy/ (Dockerfile, compose.yaml, butler.env.example, k8s/,
//! butler.service), checked statically against the real config loader, plus the real binary run
//! with the Dockerfile runtime stage's environment. No Docker engine runs here: nothing is built
//! or pulled, so these tests must never call `docker`; they parse the files and cross-check them.

use crate::support::proc::{binary, clean_command, free_port, Server};
use butler::config::{parse_str, ConfigError, Env};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The port Butler listens on in every deployment.
const PORT: &str = "8080";
/// `BUTLER_*` variables that are not `BUTLER_<SECTION>__<KEY>` overrides (README, Configuration).
const PLAIN_VARS: &[&str] = &["BUTLER_CONFIG", "BUTLER_DATA_DIR", "BUTLER_MODEL", butler::cli::allocator::MARK];
/// The k8s manifests the base kustomization applies.
const K8S_RESOURCES: &[&str] = &["configmap.yaml", "deployment.yaml", "service.yaml", "workspace.yaml"];
/// Where every deployment mounts the shared workspace (`[tools] workspace_dir`).
const WORKSPACE: &str = "/srv/butler-workspace";

fn deploy(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy").join(rel)
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(deploy(rel)).unwrap_or_else(|e| panic!("deploy/{rel}: {e}"))
}

fn yaml(rel: &str) -> Value {
    serde_saphyr::from_str(&read(rel)).unwrap_or_else(|e| panic!("deploy/{rel} is not valid YAML: {e}"))
}

/// Every `BUTLER_[A-Z0-9_]+` name in `text`.
fn butler_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("BUTLER_") {
        let start = i + at;
        let mut end = start + "BUTLER_".len();
        while end < bytes.len()
            && (bytes[end].is_ascii_uppercase() || bytes[end].is_ascii_digit() || bytes[end] == b'_')
        {
            end += 1;
        }
        let boundary = start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        if boundary && end > start + "BUTLER_".len() {
            out.insert(text[start..end].to_string());
        }
        i = end;
    }
    out
}

/// The config from no file and `vars` as the environment, through the real loader.
fn load(vars: &BTreeMap<String, String>) -> Result<butler::config::Config, ConfigError> {
    parse_str("", "deploy test", &Env::from_pairs(vars.clone()))
}

/// The port of a `host:port` listen address or URL authority.
fn port_of(addr: &str) -> &str {
    addr.rsplit(':').next().unwrap_or_default().trim_end_matches(|c: char| !c.is_ascii_digit())
}

// ---------- Dockerfile ----------

/// One Dockerfile stage: its `FROM` line and its instructions (continuations joined).
struct Stage {
    from: String,
    instructions: Vec<(String, String)>,
}

impl Stage {
    fn all(&self, keyword: &str) -> Vec<&str> {
        self.instructions.iter().filter(|(k, _)| k == keyword).map(|(_, v)| v.as_str()).collect()
    }

    fn one(&self, keyword: &str) -> &str {
        let all = self.all(keyword);
        assert_eq!(all.len(), 1, "the stage `{}` has exactly one {keyword}", self.from);
        all[0]
    }

    fn env(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for line in self.all("ENV") {
            for pair in line.split_whitespace() {
                let (k, v) = pair.split_once('=').expect("ENV KEY=VALUE");
                out.insert(k.to_string(), v.trim_matches('"').to_string());
            }
        }
        out
    }
}

fn dockerfile() -> Vec<Stage> {
    let text = read("Dockerfile");
    let mut logical = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('#') || (t.is_empty() && cur.is_empty()) {
            continue;
        }
        match t.strip_suffix('\\') {
            Some(part) => {
                cur.push_str(part);
                cur.push(' ');
            }
            None => {
                cur.push_str(t);
                logical.push(std::mem::take(&mut cur));
            }
        }
    }
    let mut stages: Vec<Stage> = Vec::new();
    for line in logical {
        let (kw, args) = line.split_once(char::is_whitespace).unwrap_or((&line, ""));
        let (kw, args) = (kw.to_ascii_uppercase(), args.trim().to_string());
        if kw == "FROM" {
            stages.push(Stage { from: args, instructions: vec![] });
        } else {
            stages.last_mut().expect("FROM comes first").instructions.push((kw, args));
        }
    }
    stages
}

#[test]
fn dockerfile_is_multi_stage_non_root_with_a_health_check_and_a_volume() {
    let stages = dockerfile();
    assert!(stages.len() >= 2, "a builder and a runtime stage");
    let builder = &stages[0];
    assert!(builder.from.starts_with("rust:") && builder.from.ends_with(" AS builder"), "{}", builder.from);
    let build = builder.all("RUN").join("\n");
    assert!(build.contains("--mount=type=cache,target=/usr/local/cargo/registry"), "dependencies are cached");
    assert!(build.contains("--mount=type=cache,target=/src/target"), "compiled dependencies are cached");
    assert!(build.contains("cargo build --release --locked --bin butler"), "{build}");

    let runtime = stages.last().unwrap();
    assert!(runtime.from.starts_with("debian:") && runtime.from.contains("-slim"), "{}", runtime.from);
    let setup = runtime.all("RUN").join("\n");
    for needed in ["ca-certificates", "curl", "useradd", "--uid 10001"] {
        assert!(setup.contains(needed), "the runtime stage installs/creates {needed}");
    }
    let user = runtime.one("USER");
    let uid = user.split(':').next().unwrap();
    assert!(uid.parse::<u32>().is_ok_and(|n| n >= 1000), "USER {user} is a fixed non-root uid");
    assert!(setup.contains(&format!("--uid {uid}")), "USER {user} is the user created");

    let env = runtime.env();
    let data = env.get("BUTLER_DATA_DIR").expect("ENV BUTLER_DATA_DIR");
    assert_eq!(runtime.one("VOLUME"), format!("[\"{data}\"]"), "the data dir is the volume");
    assert!(setup.contains(&format!("chown 10001:10001 {data}")), "the user owns the data dir");
    let listen = env.get("BUTLER_SERVER__LISTEN").expect("ENV BUTLER_SERVER__LISTEN");
    assert_eq!(listen, &format!("0.0.0.0:{PORT}"));
    assert_eq!(runtime.one("EXPOSE"), PORT);
    let health = runtime.one("HEALTHCHECK");
    assert!(health.contains(&format!("\"http://127.0.0.1:{PORT}/healthz\"")), "{health}");
    assert!(health.contains("CMD [\"curl\", \"-fsS\""), "curl fails on an HTTP error: {health}");

    let copied = runtime.one("COPY");
    let entry = runtime.one("ENTRYPOINT");
    let bin: Vec<String> = serde_json::from_str(entry).expect("ENTRYPOINT in exec form");
    assert!(copied.starts_with("--from=builder") && copied.ends_with(&format!(" {}", bin[0])), "{copied} vs {entry}");
    assert!(build.contains(&format!("install -m 0755 target/release/butler {}", bin[0])));
    assert_eq!(runtime.one("CMD"), "[\"serve\"]");

    // The builder copies what the manifest names (members, migrations, benches and tests) and
    // the build script (how the binary is linked: its code's order in `benches/hot.order`), and
    // `.cargo` (the compiler option that keeps that order's names across edits).
    let copies = builder.all("COPY").join("\n");
    for dir in ["channels", "src", "migrations", "benches", "tests", "Cargo.lock", "build.rs", ".cargo"] {
        assert!(copies.contains(dir), "the builder copies {dir}");
    }
    let ignore = std::fs::read_to_string(deploy("../.dockerignore")).expect(".dockerignore");
    for skip in ["target", ".git", "*.db"] {
        assert!(ignore.lines().any(|l| l.trim() == skip), ".dockerignore skips {skip}");
    }
}

// ---------- every BUTLER_* name is a config key ----------

#[test]
fn every_butler_variable_in_deploy_is_a_config_key() {
    let files =
        ["Dockerfile", "compose.yaml", "butler.env.example", "butler.service"].into_iter().map(String::from).chain(
            K8S_RESOURCES
                .iter()
                .chain(["kustomization.yaml", "secret.example.yaml"].iter())
                .map(|f| format!("k8s/base/{f}"))
                .chain(
                    ["kustomization.yaml", "spread.yaml", "workspace-rwx.yaml", "hpa.yaml", "pdb.yaml"]
                        .map(|f| format!("k8s/replicas/{f}")),
                ),
        );
    let mut seen = 0;
    for file in files {
        for name in butler_names(&read(&file)) {
            seen += 1;
            if !name.contains("__") {
                assert!(
                    PLAIN_VARS.contains(&name.as_str()),
                    "deploy/{file}: {name} is neither an override nor a known variable"
                );
                continue;
            }
            // Any value: only an unknown key fails this check ("x" is a bad value for a bool key).
            let vars = BTreeMap::from([(name.clone(), "x".to_string())]);
            if let Err(e) = load(&vars) {
                assert!(
                    !matches!(e, ConfigError::UnknownOverride { .. } | ConfigError::UnknownKey { .. }),
                    "deploy/{file}: {name} is not a config key: {e}"
                );
            }
        }
    }
    assert!(seen >= 10, "the files name the variables they use ({seen})");
    // The check itself rejects a typo.
    let typo = BTreeMap::from([("BUTLER_SERVER__LISTN".to_string(), "x".to_string())]);
    assert!(matches!(load(&typo), Err(ConfigError::UnknownOverride { .. })));
}

// ---------- compose ----------

/// The `KEY=VALUE` lines of the env example.
fn env_example() -> BTreeMap<String, String> {
    read("butler.env.example")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| {
            let (k, v) = l.split_once('=').expect("KEY=VALUE");
            (k.to_string(), v.to_string())
        })
        .collect()
}

#[test]
fn compose_runs_three_replicas_on_one_workspace_behind_one_port_with_postgres_and_redis() {
    let compose = yaml("compose.yaml");
    let services = compose["services"].as_object().expect("services");
    let replicas: Vec<&str> = services.keys().filter(|k| k.starts_with("butler-")).map(String::as_str).collect();
    assert_eq!(replicas, ["butler-1", "butler-2", "butler-3"]);
    let mut data_volumes = BTreeSet::new();
    let example = env_example();
    for name in &replicas {
        let s = &services[*name];
        assert_eq!(s["build"]["dockerfile"], "deploy/Dockerfile", "{name} is built from the Dockerfile");
        assert_eq!(s["env_file"][0]["path"], "butler.env", "{name} reads its secrets from butler.env");
        assert_eq!(s["expose"][0], PORT);
        let env = s["environment"].as_object().expect("environment");
        assert_eq!(port_of(env["BUTLER_SERVER__LISTEN"].as_str().unwrap()), PORT);
        let health = s["healthcheck"]["test"].to_string();
        assert!(health.contains(&format!("http://127.0.0.1:{PORT}/readyz")), "{name}: {health}");
        for dep in ["postgres", "redis"] {
            assert_eq!(s["depends_on"][dep]["condition"], "service_healthy", "{name} waits for {dep}");
        }
        // Its own data folder; the one shared workspace at workspace_dir, and nothing else.
        let mounts: BTreeMap<&str, &str> = s["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().split_once(':').map(|(src, dst)| (dst, src)).unwrap())
            .collect();
        assert_eq!(mounts.len(), 2, "{name} mounts its data and the workspace: {mounts:?}");
        let data = mounts[env["BUTLER_DATA_DIR"].as_str().unwrap()];
        assert!(data_volumes.insert(data), "{name}'s data volume {data} is its own");
        assert_eq!(env["BUTLER_TOOLS__WORKSPACE_DIR"], WORKSPACE, "{name}'s workspace_dir");
        assert_eq!(mounts.get(WORKSPACE), Some(&"workspace"), "{name} mounts the shared workspace at workspace_dir");
        // What a replica gets (the env file, then `environment`) loads and passes the config check.
        let mut vars = example.clone();
        vars.extend(env.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())));
        let cfg = load(&vars).unwrap_or_else(|e| panic!("{name}'s environment: {e}"));
        butler::app::check_config(&cfg).unwrap_or_else(|e| panic!("{name}'s environment fails the check: {e}"));
        assert!(cfg.database.url.expose().starts_with("postgres://butler:"), "{name} uses the postgres service");
        assert!(cfg.database.url.expose().contains(&format!(":{}@postgres:5432/", example["POSTGRES_PASSWORD"])));
        assert_eq!(cfg.tools.workspace_dir, WORKSPACE, "{name} runs on the shared workspace");
    }
    // The runtime image owns the mount point (a new named volume takes its owner from it).
    assert!(read("Dockerfile").contains(&format!("chown 10001:10001 /var/lib/butler {WORKSPACE}")));
    let proxy =
        services["proxy"]["command"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect::<Vec<_>>();
    assert_eq!(proxy[..4], ["caddy", "reverse-proxy", "--from", &format!(":{PORT}")]);
    let targets: Vec<&str> = proxy.windows(2).filter(|w| w[0] == "--to").map(|w| w[1]).collect();
    assert_eq!(
        targets,
        replicas.iter().map(|r| format!("{r}:{PORT}")).collect::<Vec<_>>(),
        "the proxy balances over all of them"
    );
    assert_eq!(services["proxy"]["ports"][0], format!("{PORT}:{PORT}"), "one web port");

    let pg = services["postgres"]["healthcheck"]["test"].to_string();
    assert!(pg.contains("pg_isready"), "{pg}");
    let redis = services["redis"]["healthcheck"]["test"].to_string();
    assert!(redis.contains("redis-cli") && redis.contains("ping"), "{redis}");
    assert!(example.contains_key("POSTGRES_PASSWORD") && example.contains_key("REDIS_PASSWORD"));

    // Every named volume a service mounts is declared.
    let declared = compose["volumes"].as_object().expect("volumes");
    for (name, s) in services {
        for v in s["volumes"].as_array().into_iter().flatten() {
            let source = v.as_str().unwrap().split(':').next().unwrap();
            assert!(declared.contains_key(source), "{name} mounts an undeclared volume {source}");
        }
    }
}

// ---------- Kubernetes ----------

#[test]
fn k8s_manifests_reference_each_other_and_probe_health_and_readiness() {
    let kust = yaml("k8s/base/kustomization.yaml");
    let resources: Vec<&str> = kust["resources"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(resources, K8S_RESOURCES, "secret.example.yaml is not applied");
    let secret = yaml("k8s/base/secret.example.yaml");
    assert_eq!(secret["kind"], "Secret");
    let secret_name = secret["metadata"]["name"].as_str().unwrap();
    let secret_data = secret["stringData"].as_object().unwrap();

    let dep = yaml("k8s/base/deployment.yaml");
    assert_eq!(dep["kind"], "Deployment");
    assert_eq!(dep["spec"]["replicas"], 1, "one in the base, more in the overlay");
    let labels = &dep["spec"]["template"]["metadata"]["labels"];
    assert_eq!(&dep["spec"]["selector"]["matchLabels"], labels);
    let pod = &dep["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod["securityContext"]["runAsUser"], 10001, "the Dockerfile's uid");
    let c = &pod["containers"][0];
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(c["ports"][0]["containerPort"].to_string(), PORT);
    for (probe, path) in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")] {
        assert_eq!(c[probe]["httpGet"]["path"], path, "{probe}");
        assert_eq!(c[probe]["httpGet"]["port"].to_string(), PORT, "{probe}");
    }
    for (kind, key, want) in [
        ("requests", "memory", "128Mi"),
        ("limits", "memory", "512Mi"),
        ("requests", "cpu", "100m"),
        ("limits", "cpu", "1"),
    ] {
        assert_eq!(c["resources"][kind][key], want, "resources.{kind}.{key}");
    }
    assert_eq!(c["envFrom"][0]["secretRef"]["name"], secret_name, "the Deployment reads the example's Secret");
    let env: BTreeMap<&str, &str> = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["value"].as_str().unwrap()))
        .collect();
    let args: Vec<&str> = c["args"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(args[..2], ["serve", "--config"]);
    let config_path = Path::new(args[2]);

    // Mounts: the config file's directory from the ConfigMap, the data dir and /tmp writable.
    let volumes: BTreeMap<&str, &Value> =
        pod["volumes"].as_array().unwrap().iter().map(|v| (v["name"].as_str().unwrap(), v)).collect();
    let mounts: BTreeMap<&str, &str> = c["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["mountPath"].as_str().unwrap(), m["name"].as_str().unwrap()))
        .collect();
    for path in [env["BUTLER_DATA_DIR"], "/tmp"] {
        assert!(volumes[mounts[path]]["emptyDir"].is_object(), "{path} is a writable emptyDir");
    }
    // The workspace is the claim every replica mounts, never a per-pod emptyDir.
    assert_eq!(env["BUTLER_TOOLS__WORKSPACE_DIR"], WORKSPACE);
    let workspace = volumes[mounts[WORKSPACE]];
    assert!(workspace["emptyDir"].is_null(), "the workspace is not a per-pod emptyDir");
    let claim = yaml("k8s/base/workspace.yaml");
    assert_eq!(claim["kind"], "PersistentVolumeClaim");
    assert_eq!(workspace["persistentVolumeClaim"]["claimName"], claim["metadata"]["name"], "the workspace claim");
    let cm_volume = volumes[mounts[config_path.parent().unwrap().to_str().unwrap()]];
    let cm = yaml("k8s/base/configmap.yaml");
    assert_eq!(cm_volume["configMap"]["name"], cm["metadata"]["name"], "the config comes from the ConfigMap");
    let file = config_path.file_name().unwrap().to_str().unwrap();
    let toml_text = cm["data"][file].as_str().expect("the ConfigMap holds the config file");

    // The ConfigMap's config, with the Secret's keys as the environment, passes the real check;
    // every ${VAR} it reads is a key of the Secret.
    let mut vars: BTreeMap<String, String> =
        secret_data.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).collect();
    vars.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let cfg = parse_str(toml_text, "k8s/base/configmap.yaml", &Env::from_pairs(vars))
        .unwrap_or_else(|e| panic!("the ConfigMap's butler.toml: {e}"));
    butler::app::check_config(&cfg).unwrap_or_else(|e| panic!("the ConfigMap's butler.toml fails the check: {e}"));
    assert_eq!(port_of(&cfg.server.listen), PORT);
    for var in toml_text.split("${").skip(1).map(|s| s.split('}').next().unwrap()) {
        assert!(secret_data.contains_key(var), "${{{var}}} is not in the Secret");
    }
    let bare = parse_str(toml_text, "k8s/base/configmap.yaml", &Env::from_pairs(Vec::<(String, String)>::new()));
    assert!(bare.is_err(), "without the Secret the config does not load");

    let svc = yaml("k8s/base/service.yaml");
    assert_eq!(&svc["spec"]["selector"], labels);
    assert_eq!(svc["spec"]["ports"][0]["targetPort"].to_string(), PORT);
    for doc in K8S_RESOURCES.iter().map(|f| yaml(&format!("k8s/base/{f}"))) {
        assert!(doc["apiVersion"].is_string() && doc["metadata"]["name"].is_string(), "{doc}");
    }
}

#[test]
fn k8s_replicas_overlay_shares_one_read_write_many_workspace_spreads_and_scales() {
    let kust = yaml("k8s/replicas/kustomization.yaml");
    let list = |v: &Value| -> Vec<String> {
        v.as_array().unwrap().iter().map(|x| x.as_str().map_or_else(|| x["path"].to_string(), str::to_string)).collect()
    };
    assert_eq!(list(&kust["resources"]), ["../base", "pdb.yaml", "hpa.yaml"]);
    let patches: Vec<String> = list(&kust["patches"]).iter().map(|p| p.trim_matches('"').to_string()).collect();
    assert_eq!(patches, ["spread.yaml", "workspace-rwx.yaml"]);
    let base = yaml("k8s/base/deployment.yaml");
    let labels = &base["spec"]["template"]["metadata"]["labels"];

    // Several replicas, each preferably on its own node; nothing per pod at the workspace.
    let spread = yaml("k8s/replicas/spread.yaml");
    assert_eq!((&spread["kind"], &spread["metadata"]["name"]), (&base["kind"], &base["metadata"]["name"]));
    assert!(spread["spec"]["replicas"].as_u64().unwrap() >= 3);
    let anti = &spread["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
        ["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"];
    assert_eq!(anti["topologyKey"], "kubernetes.io/hostname");
    assert_eq!(&anti["labelSelector"]["matchLabels"], labels);
    assert!(spread["spec"]["template"]["spec"]["volumes"].is_null(), "the overlay changes no volume");

    // The one workspace claim, made ReadWriteMany, and the README's storage named.
    let rwx = yaml("k8s/replicas/workspace-rwx.yaml");
    let claim = yaml("k8s/base/workspace.yaml");
    assert_eq!((&rwx["kind"], &rwx["metadata"]["name"]), (&claim["kind"], &claim["metadata"]["name"]));
    assert_eq!(rwx["spec"]["accessModes"], serde_json::json!(["ReadWriteMany"]));
    let said = format!("{}{}", read("k8s/replicas/kustomization.yaml"), read("../README.md"));
    for storage in ["NFS", "CephFS", "EFS", "Azure Files", "Filestore"] {
        assert!(said.contains(storage), "{storage} is named as storage that provides ReadWriteMany");
    }

    let hpa = yaml("k8s/replicas/hpa.yaml");
    assert_eq!(hpa["kind"], "HorizontalPodAutoscaler");
    assert_eq!(hpa["spec"]["scaleTargetRef"]["kind"], "Deployment");
    assert_eq!(hpa["spec"]["scaleTargetRef"]["name"], base["metadata"]["name"]);
    assert!(hpa["spec"]["minReplicas"].as_u64().unwrap() >= 2);
    assert!(hpa["spec"]["maxReplicas"].as_u64() > hpa["spec"]["minReplicas"].as_u64());
    assert_eq!(hpa["spec"]["metrics"][0]["resource"]["name"], "cpu");
    let pdb = yaml("k8s/replicas/pdb.yaml");
    assert_eq!(pdb["kind"], "PodDisruptionBudget");
    assert!(pdb["spec"]["minAvailable"].as_u64().unwrap() < hpa["spec"]["minReplicas"].as_u64().unwrap());
    assert_eq!(&pdb["spec"]["selector"]["matchLabels"], labels);
}

// ---------- systemd ----------

#[test]
fn systemd_unit_is_hardened_and_verifies() {
    let text = read("butler.service");
    let keys: Vec<(&str, &str)> =
        text.lines().filter(|l| !l.starts_with('#') && l.contains('=')).map(|l| l.split_once('=').unwrap()).collect();
    let has = |k: &str, v: &str| keys.iter().any(|(kk, vv)| *kk == k && *vv == v);
    let table = [
        ("DynamicUser", "yes"),
        ("StateDirectory", "butler"),
        ("Environment", "BUTLER_DATA_DIR=/var/lib/butler"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("NoNewPrivileges", "yes"),
        ("PrivateTmp", "yes"),
        ("RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"),
        ("Restart", "on-failure"),
        ("ExecStart", "/usr/local/bin/butler serve --config /etc/butler/butler.toml"),
        ("EnvironmentFile", "-/etc/butler/butler.env"),
    ];
    for (k, v) in table {
        assert!(has(k, v), "butler.service has {k}={v}");
    }
    // The allocator settings, given as `serve`'s second start finds them: it starts once.
    let tunables = format!("GLIBC_TUNABLES={}", butler::cli::allocator::TUNABLES);
    let mark = format!("{}=", butler::cli::allocator::MARK);
    for v in [&tunables, &mark] {
        assert!(has("Environment", v), "butler.service has Environment={v}");
    }
    // `systemd-analyze verify` needs the ExecStart binary to exist: point it at the built one.
    // Skipped only where systemd-analyze is not installed.
    let Ok(which) = std::process::Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("systemd-analyze is not installed: verify skipped");
        return;
    };
    assert!(which.status.success());
    let dir = tempfile::tempdir().unwrap();
    let unit = dir.path().join("butler.service");
    std::fs::write(&unit, text.replace("/usr/local/bin/butler", binary())).unwrap();
    let out = std::process::Command::new("systemd-analyze").arg("verify").arg(&unit).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !stderr.contains("butler.service"), "systemd-analyze verify: {stderr}");
}

// ---------- the binary with the Dockerfile runtime environment ----------

#[tokio::test]
async fn the_dockerfile_runtime_environment_serves_health_and_readiness() {
    let runtime = dockerfile().pop().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let port = free_port();
    // The image's environment, with the data dir in a temp dir and a free port (the host stays 0.0.0.0).
    let mut env = runtime.env();
    env.insert("BUTLER_DATA_DIR".into(), data.display().to_string());
    let listen = env["BUTLER_SERVER__LISTEN"].replace(&format!(":{PORT}"), &format!(":{port}"));
    assert_eq!(listen, format!("0.0.0.0:{port}"));
    env.insert("BUTLER_SERVER__LISTEN".into(), listen);
    // The allocator settings, given as `serve`'s second start finds them (`cli::allocator`).
    assert_eq!(env.get("GLIBC_TUNABLES").map(String::as_str), Some(butler::cli::allocator::TUNABLES));
    assert_eq!(env.get(butler::cli::allocator::MARK).map(String::as_str), Some(""));
    let args: Vec<String> = serde_json::from_str(runtime.one("CMD")).unwrap();
    let command = |extra: &[(&str, &str)]| {
        let mut cmd = clean_command(&data);
        cmd.args(&args).envs(&env).envs(extra.iter().copied());
        cmd
    };

    // Without a web token on 0.0.0.0 it refuses to start, naming the key.
    let out = command(&[]).output().unwrap();
    assert!(!out.status.success(), "an open web chat on 0.0.0.0 is refused");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("channels.web.token"), "{said}");

    let base = format!("http://127.0.0.1:{port}");
    let server = Server::start(
        command(&[("BUTLER_CHANNELS__WEB__TOKEN", "deploy-test-token")]),
        dir.path().join("serve.log"),
        &base,
    )
    .await;
    for path in ["/healthz", "/readyz", "/metrics"] {
        let r = reqwest::get(format!("{base}{path}")).await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
    }
    let log = server.log_text();
    assert!(
        log.lines().any(|l| l.contains("memory allocator:") && l.contains("without per-thread caches")),
        "the image's environment gives serve the allocator settings: {log}"
    );
    assert!(data.join("butler.db").exists(), "the SQLite database is in BUTLER_DATA_DIR (the volume)");
    // The HEALTHCHECK command itself, where curl is installed here.
    let health: Vec<String> =
        serde_json::from_str(runtime.one("HEALTHCHECK").split_once("CMD ").unwrap().1).expect("HEALTHCHECK CMD [..]");
    let health: Vec<String> = health.iter().map(|a| a.replace(&format!(":{PORT}/"), &format!(":{port}/"))).collect();
    match std::process::Command::new(&health[0]).args(&health[1..]).status() {
        Ok(status) => assert!(status.success(), "the HEALTHCHECK command fails: {health:?}"),
        Err(_) => eprintln!("{} is not installed here: the HEALTHCHECK command itself not run", health[0]),
    }
    let status = server.terminate(Duration::from_secs(20)).await;
    assert!(status.success(), "SIGTERM (docker stop) exits 0: {status}");
}
