//! `butler init`: sets Butler up in the terminal. Asks for the model provider, its base URL and
//! key, the model (from the endpoint's own list when it has one) and the Telegram bot, checks
//! each answer live (the served models, one real model call, getMe), asks again with the reason
//! when a check fails, and writes a commented config file where Butler looks for it.
//!
//! It must never replace an existing file without a yes, never print a key or a token (they
//! are read with the echo off), and never write anything when input ends early.

mod ask;
mod check;
mod embed;
mod file;

use super::exit::fail;
use crate::config::{Env, LlmConfig, ProviderKind, Secret};
use ask::Ended;
use check::Redo;
use file::{Answers, Stored, Telegram};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The file written: `--config`, else `BUTLER_CONFIG`, else `./config/butler.toml` when it
/// exists, else the user's config file, else `./config/butler.toml`.
fn target(explicit: Option<&Path>, env: &Env) -> PathBuf {
    if let Some(p) = explicit {
        return p.to_path_buf();
    }
    if let Some(p) = env.non_empty("BUTLER_CONFIG") {
        return PathBuf::from(p);
    }
    let local = PathBuf::from(crate::config::DEFAULT_PATH);
    if local.is_file() {
        return local;
    }
    crate::config::user_config_file(env).unwrap_or(local)
}

pub async fn run(explicit: Option<&Path>) -> Result<ExitCode, ExitCode> {
    let env = Env::process();
    let path = target(explicit, &env);
    println!("Setting up Butler: this writes {}. Ctrl-D stops without writing anything.\n", path.display());
    match interview(&path, &env).await {
        Ok(Some(answers)) => {
            let replace = path.exists();
            file::write(&path, &file::text(&answers), replace)
                .map_err(|e| fail(1, format!("cannot write {}: {e}", path.display())))?;
            println!("\n✓ wrote {}", path.display());
            next_steps(&path, explicit.is_some(), &answers);
            if answers.telegram.is_some() {
                owner(&env).await;
            }
            Ok(ExitCode::SUCCESS)
        }
        Ok(None) => {
            println!("kept {} as it was; nothing written", path.display());
            Ok(ExitCode::from(1))
        }
        Err(Ended) => {
            println!();
            Err(fail(1, "input ended; nothing written"))
        }
    }
}

fn next_steps(path: &Path, explicit: bool, a: &Answers) {
    let flag = if explicit { format!(" --config {}", path.display()) } else { String::new() };
    let mut vars: Vec<&str> = Vec::new();
    if let Some(Stored::Env(v)) = &a.api_key {
        vars.push(v);
    }
    if let Some(Telegram { token: Stored::Env(v), .. }) = &a.telegram {
        vars.push(v);
    }
    if !vars.is_empty() {
        println!("  before starting Butler: export {}", vars.join(" "));
    }
    println!("  next: butler doctor{flag}   (checks everything)");
    println!("        butler chat{flag}     (talk to Butler here)");
    println!("        butler serve{flag}    (web chat and the channels)");
}

/// Makes the person running `init` the owner of the bot they just set up: a one-time code their
/// own account sends. The file `init` writes names no database, so the store is the default one
/// (the data dir, or `BUTLER_DATABASE__URL`): read without the file, whose `${VAR}`s may not be
/// exported yet. When the store cannot be opened, says how to get the code later.
async fn owner(env: &Env) {
    let made = async {
        let cfg = crate::config::parse_str("", "the defaults", env).map_err(|e| e.to_string())?;
        let store = crate::store::connect(cfg.database.url.expose(), 2).await.map_err(|e| e.to_string())?;
        store.migrate().await.map_err(|e| e.to_string())?;
        let printed = super::pair::print_owner_code((&*store, &*store), &cfg.agent.timezone).await;
        store.close().await;
        printed
    };
    if let Err(why) = made.await {
        println!("  to become the owner on your chat account, run `butler pair owner` once Butler can start ({why})");
    }
}

/// All the questions; `None` when the person keeps the existing file.
async fn interview(path: &Path, env: &Env) -> Result<Option<Answers>, Ended> {
    if path.exists() && !ask::yes_no(&format!("{} already exists. Replace it?", path.display()), false)? {
        return Ok(None);
    }
    println!(
        "Which model provider?\n  1) OpenAI-compatible: OpenAI, Ollama, vLLM, llama.cpp, OpenRouter\n  2) Anthropic"
    );
    let provider = match ask::choice("Provider [1]: ", &["openai", "anthropic"])? {
        "anthropic" => ProviderKind::Anthropic,
        _ => ProviderKind::Openai,
    };
    let (llm, key) = model(provider, env).await?;
    let timezone = timezone(env)?;
    let embeddings = embed::ask(&llm, key.as_ref()).await?;
    let telegram = telegram(env).await?;
    println!("\nSlack and Discord are written as commented sections to fill in (README, Slack and Discord).");
    Ok(Some(Answers {
        provider,
        base_url: llm.base_url.clone(),
        api_key: key,
        model: llm.model.clone(),
        timezone,
        telegram,
        embeddings,
    }))
}

/// The owner's time zone, suggesting this machine's; asked again until it is an IANA name.
fn timezone(env: &Env) -> Result<String, Ended> {
    let suggested = machine_zone(env);
    loop {
        let answer = ask::line(&format!("Your time zone [{suggested}]: "))?;
        let answer = answer.trim();
        let zone = if answer.is_empty() { suggested.as_str() } else { answer };
        match zone.parse::<chrono_tz::Tz>() {
            Ok(tz) => return Ok(tz.name().to_string()),
            Err(_) => println!("  `{zone}` is not a time zone name; use one like Europe/Berlin or America/New_York"),
        }
    }
}

/// This machine's IANA zone: `TZ`, else `/etc/timezone`, else where `/etc/localtime` points;
/// `UTC` when none of them names one.
fn machine_zone(env: &Env) -> String {
    let from_tz = env.non_empty("TZ").map(|z| z.trim_start_matches(':').to_string());
    let from_file = || std::fs::read_to_string("/etc/timezone").ok().map(|z| z.trim().to_string());
    let from_link = || {
        let target = std::fs::read_link("/etc/localtime").ok()?;
        let target = target.to_string_lossy();
        target.split_once("zoneinfo/").map(|(_, zone)| zone.to_string())
    };
    [from_tz, from_file(), from_link()]
        .into_iter()
        .flatten()
        .find(|z| z.parse::<chrono_tz::Tz>().is_ok())
        .unwrap_or_else(|| "UTC".to_string())
}

/// The provider's defaults: public base URL, key variable, suggested model.
fn defaults(provider: ProviderKind) -> (&'static str, &'static str, &'static str) {
    let (key_var, model) = match provider {
        ProviderKind::Openai => ("OPENAI_API_KEY", crate::config::DEFAULT_OPENAI_MODEL),
        ProviderKind::Anthropic => ("ANTHROPIC_API_KEY", crate::config::DEFAULT_ANTHROPIC_MODEL),
    };
    (crate::llm::default_base_url(provider), key_var, model)
}

/// Base URL, key and model, asked until one real model call answers.
async fn model(provider: ProviderKind, env: &Env) -> Result<(LlmConfig, Option<Stored>), Ended> {
    let (public, key_var, suggested) = defaults(provider);
    let mut llm = LlmConfig { provider, max_retries: 0, ..LlmConfig::default() };
    let mut key_from_env = false;
    let (mut ask_base, mut ask_key, mut ask_model) = (true, true, true);
    loop {
        if ask_base {
            let hint = match provider {
                ProviderKind::Openai => " (Ollama: http://127.0.0.1:11434/v1)",
                ProviderKind::Anthropic => "",
            };
            let base = ask::line(&format!("Base URL [{public}]{hint}: "))?;
            llm.base_url = (!base.is_empty() && base.trim_end_matches('/') != public).then_some(base);
        }
        let official = llm.base_url.is_none();
        while ask_key {
            let from_env = env.non_empty(key_var);
            let question = match from_env {
                Some(_) => format!("API key (hidden; Enter uses ${key_var} from the environment): "),
                None if official => "API key (hidden): ".to_string(),
                None => "API key (hidden; Enter for none, as local servers need none): ".to_string(),
            };
            let typed = ask::secret(&question)?;
            key_from_env = typed.is_empty() && from_env.is_some();
            let key = if key_from_env { from_env.map(str::to_string) } else { Some(typed) };
            llm.api_key = key.filter(|k| !k.is_empty()).map(Secret::new);
            if official && llm.api_key.is_none() {
                println!("  {public} needs a key");
                continue;
            }
            ask_key = false;
        }
        let models = match check::models(&llm).await {
            Ok(models) => models,
            Err((why, redo)) => {
                println!("✗ {why}");
                (ask_base, ask_key) = (redo == Redo::BaseUrl, redo == Redo::Key);
                continue;
            }
        };
        if ask_model {
            llm.model = pick_model(&models, official.then_some(suggested))?;
        }
        match check::model_call(&llm).await {
            Ok(took) => {
                println!("✓ {} answered a test request ({} ms)", llm.model, took.as_millis());
                // Costs need prices: say what the model costs, or that nobody knows.
                if let Some(e) = crate::llm::PriceBook::from_config(&llm).endpoints().first() {
                    let mark = if e.priced.source == crate::llm::PriceSource::Unknown { "!" } else { "✓" };
                    println!("{mark} price: {}", e.describe());
                }
                break;
            }
            Err((why, redo)) => {
                println!("✗ {why}");
                (ask_base, ask_key, ask_model) = (redo == Redo::BaseUrl, redo == Redo::Key, redo == Redo::Model);
            }
        }
    }
    let stored = match &llm.api_key {
        None => None,
        Some(_) if key_from_env => Some(Stored::Env(key_var)),
        Some(key) => Some(keep(key.expose(), key_var)?),
    };
    Ok((llm, stored))
}

/// Where a typed secret goes: into the file, or as `${VAR}`.
fn keep(secret: &str, var: &'static str) -> Result<Stored, Ended> {
    let question = format!("Write it into the file (f), or as ${{{var}}} read from the environment (e)? [F/e]: ");
    loop {
        match ask::line(&question)?.to_ascii_lowercase().as_str() {
            "" | "f" | "file" => return Ok(Stored::Value(secret.to_string())),
            "e" | "env" => return Ok(Stored::Env(var)),
            _ => println!("  please answer f or e"),
        }
    }
}

/// The model: from the served list by number or name, or typed.
fn pick_model(models: &[String], suggested: Option<&str>) -> Result<String, Ended> {
    if models.is_empty() {
        let question = match suggested {
            Some(s) => format!("Model name [{s}]: "),
            None => "Model name (the endpoint lists none; e.g. llama3.1): ".to_string(),
        };
        loop {
            let answer = ask::line(&question)?;
            match (answer.is_empty(), suggested) {
                (false, _) => return Ok(answer),
                (true, Some(s)) => return Ok(s.to_string()),
                (true, None) => println!("  a model name is needed"),
            }
        }
    }
    const SHOWN: usize = 30;
    println!("Models this endpoint serves:");
    for (i, m) in models.iter().take(SHOWN).enumerate() {
        println!("  {:>2}) {m}", i + 1);
    }
    if models.len() > SHOWN {
        println!("  ... and {} more (type a name)", models.len() - SHOWN);
    }
    let default = suggested.and_then(|s| models.iter().position(|m| m == s)).unwrap_or(0);
    let answer = ask::line(&format!("Model [{}]: ", default + 1))?;
    Ok(match answer.parse::<usize>() {
        Ok(n) if (1..=models.len()).contains(&n) => models[n - 1].clone(),
        _ if answer.is_empty() => models[default].clone(),
        _ => answer,
    })
}

/// The Telegram bot, if wanted: a token that getMe accepts.
async fn telegram(env: &Env) -> Result<Option<Telegram>, Ended> {
    const VAR: &str = "TELEGRAM_BOT_TOKEN";
    if !ask::yes_no("\nSet up Telegram?", false)? {
        return Ok(None);
    }
    let custom = env.non_empty("BUTLER_CHANNELS__TELEGRAM__API_URL").map(str::to_string);
    let api_url = custom.clone().unwrap_or_else(|| "https://api.telegram.org".to_string());
    loop {
        let from_env = env.non_empty(VAR);
        let question = match from_env {
            Some(_) => format!("Bot token (hidden; Enter uses ${VAR}; `skip` to skip): "),
            None => "Bot token from @BotFather (hidden; Enter to skip): ".to_string(),
        };
        let typed = ask::secret(&question)?;
        let token = match (typed.as_str(), from_env) {
            ("skip", _) | ("", None) => return Ok(None),
            ("", Some(t)) => t.to_string(),
            (t, _) => t.to_string(),
        };
        match check::telegram(&api_url, &token).await {
            Ok(name) => {
                println!("✓ Telegram bot {name}");
                let stored = if typed.is_empty() { Stored::Env(VAR) } else { keep(&token, VAR)? };
                return Ok(Some(Telegram { token: stored, api_url: custom }));
            }
            Err(why) => println!("✗ {why}"),
        }
    }
}
