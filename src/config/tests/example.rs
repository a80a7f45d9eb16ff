//! config/butler.example.toml: parses to the built-in defaults, its optional keys are valid
//! when uncommented, and it documents every key with its environment override. They read the
//! example through `include_str!` and never touch the process environment or working directory.

use super::env;
use crate::config::{parse_str, Config, Env, LlmFallback, ProviderKind, RedisConfig, Secret};
use std::collections::BTreeSet;
use toml::Value;

const EXAMPLE: &str = include_str!("../../../config/butler.example.toml");
const ORIGIN: &str = "config/butler.example.toml";

/// The example with every optional line (`#key = value`, `#[section]`) uncommented.
fn uncommented() -> String {
    EXAMPLE
        .lines()
        .map(|line| match line.strip_prefix('#') {
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_lowercase() || c == '[') => rest,
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// An environment with a distinct value for every `${NAME}` the text mentions.
fn referenced_env(text: &str) -> Env {
    let names: BTreeSet<String> = text
        .split("${")
        .skip(1)
        .map(|rest| rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>())
        .filter(|name| !name.is_empty())
        .collect();
    Env::from_pairs(names.into_iter().map(|n| (n.clone(), format!("value-of-{n}"))))
}

/// Key paths of a TOML tree, sections included; entries of arrays of tables share one path,
/// which also goes into `arrays`.
fn key_paths(value: &Value, prefix: &str, out: &mut BTreeSet<String>, arrays: &mut BTreeSet<String>) {
    let Value::Table(table) = value else { return };
    for (key, item) in table {
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match item {
            Value::Table(_) => key_paths(item, &path, out, arrays),
            Value::Array(items) if items.iter().all(Value::is_table) && !items.is_empty() => {
                for entry in items {
                    key_paths(entry, &path, out, arrays);
                }
                arrays.insert(path.clone());
            }
            _ => {}
        }
        out.insert(path);
    }
}

/// The default config with every optional key set, so that its TOML shows every key.
fn full_config() -> Config {
    let mut c = Config {
        redis: Some(RedisConfig {
            url: Secret::new("redis://127.0.0.1:6379"),
            lease_ms: 3000,
            prefix: "butler".into(),
        }),
        ..Config::default()
    };
    c.llm.base_url = Some("https://api.openai.com/v1".into());
    c.llm.api_key = Some(Secret::new("k"));
    c.llm.fallback = vec![LlmFallback {
        provider: ProviderKind::Anthropic,
        base_url: Some("https://api.anthropic.com".into()),
        api_key: Some(Secret::new("k2")),
        model: "claude-sonnet-4-5".into(),
        input_price_per_mtok: Some(3.0),
        output_price_per_mtok: Some(15.0),
        cache_read_price_per_mtok: Some(0.3),
        cache_write_price_per_mtok: Some(3.75),
    }];
    // Every key of a tier but `fallback` (a list like [[llm.fallback]], documented in words).
    c.llm.tiers.insert(
        crate::config::WORKER_TIER.into(),
        crate::config::LlmTier {
            provider: Some(ProviderKind::Openai),
            base_url: Some("https://api.openai.com/v1".into()),
            api_key: Some(Secret::new("k3")),
            model: Some("gpt-4o-mini".into()),
            connect_timeout_secs: Some(10),
            first_byte_timeout_secs: Some(60),
            idle_timeout_secs: Some(60),
            max_retries: Some(3),
            max_tokens: Some(4096),
            context_window: Some(128_000),
            input_price_per_mtok: Some(0.15),
            output_price_per_mtok: Some(0.6),
            cache_read_price_per_mtok: Some(0.075),
            cache_write_price_per_mtok: Some(0.0),
            fallback: None,
            vision: Some(true),
        },
    );
    c.tools.web_search.enabled = Some(true);
    c.tools.web_search.provider = Some(crate::config::SearchProvider::Searxng);
    c.tools.web_search.base_url = Some("http://127.0.0.1:8888".into());
    c.tools.web_search.api_key = Some(Secret::new("k4"));
    c.channels.web.token = Some(Secret::new("t"));
    c.channels.web.tokens.insert("alice".into(), Secret::new("t2"));
    #[cfg(feature = "slack")]
    c.channels.set(
        "slack",
        crate::channels::SlackConfig {
            bot_token: Secret::new("xoxb-1"),
            signing_secret: Some(Secret::new("s")),
            app_token: Some(Secret::new("xapp-1")),
            api_url: "https://slack.com/api".into(),
            working_reaction: "eyes".into(),
            remembered_threads: 10_000,
            link_previews: true,
        }
        .to_table(),
    );
    #[cfg(feature = "telegram")]
    c.channels.set(
        "telegram",
        crate::channels::TelegramConfig {
            token: Secret::new("123:abc"),
            api_url: "https://api.telegram.org".into(),
            mode: crate::channels::TelegramMode::Webhook,
            webhook_secret: Some(Secret::new("s3")),
            webhook_url: Some("https://butler.example.com/channels/telegram/webhook".into()),
            poll_timeout_secs: 30,
            max_per_second: 30,
            chat_interval_ms: 1000,
            link_previews: true,
        }
        .to_table(),
    );
    #[cfg(feature = "discord")]
    c.channels.set(
        "discord",
        crate::channels::DiscordConfig {
            token: Secret::new("d"),
            public_key: Some("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a".into()),
            api_url: "https://discord.com".into(),
            link_previews: true,
        }
        .to_table(),
    );
    #[cfg(feature = "whatsapp")]
    c.channels.set(
        "whatsapp",
        crate::channels::WhatsAppConfig {
            access_token: Secret::new("EAAG"),
            phone_number_id: "106540352242922".into(),
            app_secret: Secret::new("a"),
            verify_token: Secret::new("v"),
            api_url: "https://graph.facebook.com/v23.0".into(),
            briefing_template: Some("daily_briefing".into()),
            template_language: "en_US".into(),
        }
        .to_table(),
    );
    #[cfg(feature = "signal")]
    c.channels.set(
        "signal",
        crate::channels::SignalConfig { url: "http://127.0.0.1:8080".into(), account: "+15551234567".into() }
            .to_table(),
    );
    #[cfg(feature = "email")]
    c.channels.set("email", {
        let server = |host: &str, port: u16| crate::channels::MailServer {
            host: host.into(),
            port,
            tls: crate::channels::MailTls::Implicit,
            user: "butler@example.com".into(),
            password: Secret::new("p"),
            token_command: None,
        };
        crate::channels::EmailConfig {
            address: "butler@example.com".into(),
            imap: server("imap.example.com", 993),
            smtp: server("smtp.example.com", 465),
            folder: "INBOX".into(),
            allowed: vec![crate::channels::AllowedSender::Address("you@example.com".into())],
            authserv_id: Some("mx.example.com".into()),
            since_days: 3,
        }
        .to_table()
    });
    c.media.transcription = Some(crate::config::TranscriptionConfig {
        base_url: "https://api.openai.com/v1".into(),
        api_key: Some(Secret::new("k5")),
        language: "en".into(),
        ..Default::default()
    });
    c.agent.instructions = Some("be brief".into());
    c.triggers = vec![crate::config::TriggerConfig {
        name: "github".into(),
        secret: Secret::new("s"),
        signature: crate::config::SignatureKind::Github,
        default: crate::config::TriggerAction::Drop,
        target: Some("web:alerts".into()),
        conversation: Some("web:alice-github".parse().unwrap()),
        template: Some("{{text}}".into()),
        instructions: Some("summarise".into()),
        max_payload_chars: 8_000,
        rate_limit_per_minute: 60,
        classify: true,
        // `when` stays empty: its entries are field paths, not keys of the schema.
        rules: vec![crate::config::TriggerRule {
            when: Default::default(),
            action: crate::config::TriggerAction::Notify,
            target: Some("web:alerts".into()),
            conversation: Some("web:alerts".parse().unwrap()),
            template: Some("{{text}}".into()),
            instructions: Some("none".into()),
        }],
    }];
    c.access.groups = vec![crate::config::GroupConfig {
        conversation: "telegram:-1001234567890".parse().unwrap(),
        respond: crate::config::Respond::All,
        session: crate::config::GroupSession::Shared,
    }];
    c.permissions.contexts = vec![crate::config::PermissionContext {
        channel: Some("telegram".into()),
        kind: Some(crate::config::ContextKind::Group),
        role: Some("member".into()),
        mode: Some(crate::config::Mode::Plan),
        approvers: Some(vec!["role:owner".into()]),
        conversation: Some("slack:C024BE91L".parse().unwrap()),
    }];
    c.schedules = vec![crate::config::ScheduleConfig {
        name: "morning-brief".into(),
        cron: "0 8 * * 1-5".into(),
        tz: "Europe/Berlin".into(),
        prompt: "Brief me on my calendar and the news.".into(),
        target: "web:briefings".parse().unwrap(),
        owner: Some("telegram:123456789".parse().unwrap()),
        mode: crate::config::ScheduleMode::Heartbeat,
        missed: crate::config::Missed::Skip,
        grace_secs: 600,
    }];
    // Both `command` and `url` of an MCP server (a real one has one of them), `env` and
    // `headers` left empty: their keys are the user's.
    c.mcp.servers = vec![crate::config::McpServerConfig {
        name: "files".into(),
        command: Some("npx".into()),
        cwd: Some("/srv/notes".into()),
        url: Some("https://mcp.example.com/mcp".into()),
        ..Default::default()
    }];
    // Both `value` and `file` of a secret (a real one has one of them).
    c.secrets.insert(
        "github".into(),
        crate::config::SecretConfig {
            value: Some(Secret::new("ghp")),
            file: Some("/run/secrets/github".into()),
            hosts: vec!["api.github.com".into()],
            ..Default::default()
        },
    );
    // Both optional keys of a hook: `command` (type command) and `url` (type http).
    c.hooks = vec![crate::config::HookConfig {
        event: crate::config::HookEvent::PreToolUse,
        kind: crate::config::HookKind::Command,
        command: Some("/usr/local/bin/butler-guard".into()),
        url: Some("https://audit.example.com/butler/tool-calls".into()),
        matcher: "shell".into(),
        timeout_secs: 5,
        block_on_failure: true,
        sandbox: false,
        network: false,
    }];
    c
}

#[test]
fn example_parses_to_the_built_in_defaults() {
    let config = parse_str(EXAMPLE, ORIGIN, &env(&[])).unwrap();
    config.validate().unwrap();
    assert_eq!(config.to_masked_toml(), Config::default().to_masked_toml());
}

#[test]
fn example_with_its_optional_keys_uncommented_is_valid() {
    let text = uncommented();
    let config = parse_str(&text, ORIGIN, &referenced_env(EXAMPLE)).unwrap_or_else(|e| panic!("{e}\n{text}"));
    config.validate().unwrap();
    let mut p = crate::config::Problems::default();
    crate::config::ChannelChecks::check(&crate::channels::builtin(), &config.channels, &mut p);
    assert!(p.into_lines().is_empty(), "the channel sections are valid");
    assert!(config.redis.is_some());
    assert!(config.llm.base_url.is_some() && config.llm.api_key.is_some());
    assert_eq!(config.llm.fallback.len(), 1);
    assert_eq!(config.channels.web.token.as_ref().map(Secret::expose), Some("value-of-BUTLER_WEB_TOKEN"));
    assert_eq!(config.channels.web.tokens["alice"].expose(), "value-of-ALICE_WEB_TOKEN");
    assert!(config.agent.instructions.is_some());
    assert_eq!(config.triggers.len(), 1);
    assert_eq!(config.triggers[0].secret.expose(), "value-of-GITHUB_WEBHOOK_SECRET");
    assert_eq!(config.triggers[0].rules.len(), 2);
    assert_eq!(config.schedules.len(), 1);
    assert_eq!(config.schedules[0].cron, "0 8 * * 1-5");
}

#[test]
fn example_documents_every_key_and_its_env_override() {
    let (mut schema, mut arrays) = (BTreeSet::new(), BTreeSet::new());
    key_paths(&Value::try_from(full_config()).unwrap(), "", &mut schema, &mut arrays);
    let mut documented = BTreeSet::new();
    key_paths(&Value::Table(uncommented().parse().unwrap()), "", &mut documented, &mut BTreeSet::new());
    let missing: Vec<&String> = schema.difference(&documented).collect();
    assert!(missing.is_empty(), "keys missing from {ORIGIN}: {missing:?}");
    for path in &schema {
        if schema.iter().any(|p| p.starts_with(&format!("{path}."))) {
            continue; // a section
        }
        // Entries of an array of tables are overridden by number, at every level:
        // llm.fallback.0.model, triggers.0.rules.0.action.
        let (mut plain, mut indexed) = (String::new(), String::new());
        for seg in path.split('.') {
            if !plain.is_empty() {
                plain.push('.');
                indexed.push('.');
            }
            plain.push_str(seg);
            indexed.push_str(seg);
            if arrays.contains(&plain) {
                indexed.push_str(".0");
            }
        }
        let var = format!("BUTLER_{}", indexed.to_ascii_uppercase().replace('.', "__"));
        assert!(EXAMPLE.contains(&var), "{ORIGIN} does not name {var} for `{path}`");
    }
}

#[test]
fn example_explains_the_environment_and_the_common_llm_servers() {
    for fragment in [
        "${VAR}",
        "${VAR:-fallback}",
        "$${",
        "BUTLER_<SECTION>__<KEY>",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "BUTLER_MODEL",
        "gpt-4o-mini",
        "claude-sonnet-4-5",
        "https://api.openai.com/v1",
        "https://api.anthropic.com",
        "http://127.0.0.1:11434/v1",
        "http://127.0.0.1:8000/v1",
        "llama-server --port 8081",
        "https://openrouter.ai/api/v1",
        "tokens = { alice = \"${ALICE_WEB_TOKEN}\" }",
        "[[llm.fallback]]",
    ] {
        assert!(EXAMPLE.contains(fragment), "{ORIGIN} does not mention {fragment:?}");
    }
}
