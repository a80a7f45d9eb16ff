//! The config file `butler init` writes: the answers as TOML with a comment on each key, the
//! channels not set up as commented sections, and where the data lives.
//!
//! Values are quoted by the TOML library (never pasted into the text by hand); a secret is
//! written either as typed or as `${VAR}`, as the person chose. Writing never replaces a file
//! unless the caller was told yes.

use crate::config::ProviderKind;
use std::io::Write;
use std::path::Path;

/// Where a secret goes in the file.
#[derive(Clone, Debug)]
pub(super) enum Stored {
    /// Written as typed.
    Value(String),
    /// Written as `${VAR}`: read from the environment when Butler starts.
    Env(&'static str),
}

impl Stored {
    fn toml(&self) -> String {
        match self {
            Stored::Value(v) => quote(v),
            Stored::Env(var) => quote(&format!("${{{var}}}")),
        }
    }
}

/// What was asked and checked.
pub(super) struct Answers {
    pub provider: ProviderKind,
    /// `None`: the provider's public endpoint.
    pub base_url: Option<String>,
    pub api_key: Option<Stored>,
    pub model: String,
    /// The owner's IANA time zone (`[agent] timezone`, everyone's default).
    pub timezone: String,
    pub telegram: Option<Telegram>,
    /// `[memory.embeddings]`, when the person turned recall by meaning on.
    pub embeddings: Option<Embeddings>,
}

pub(super) struct Embeddings {
    pub base_url: String,
    pub model: String,
    pub api_key: Option<Stored>,
}

pub(super) struct Telegram {
    pub token: Stored,
    /// `None`: the public Bot API.
    pub api_url: Option<String>,
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The file's text.
pub(super) fn text(a: &Answers) -> String {
    let mut t = String::new();
    t.push_str(
        "# Butler's configuration, written by `butler init`.\n\
         # `butler config check` validates it; `butler doctor` checks the model and the channels live.\n\
         # Every key is explained in config/butler.example.toml; BUTLER_<SECTION>__<KEY> variables override it.\n\n",
    );
    t.push_str("[llm]\n");
    match a.provider {
        ProviderKind::Openai => t.push_str(
            "# openai: OpenAI's API and compatible servers (Ollama, vLLM, llama.cpp, OpenRouter).\nprovider = \"openai\"\n",
        ),
        ProviderKind::Anthropic => t.push_str("# anthropic: Anthropic's Messages API (Claude).\nprovider = \"anthropic\"\n"),
    }
    if let Some(base) = &a.base_url {
        t.push_str(&format!("# Where the model is served.\nbase_url = {}\n", quote(base)));
    }
    match &a.api_key {
        Some(key @ Stored::Env(var)) => t.push_str(&format!(
            "# Read from the environment: export {var} before starting Butler.\napi_key = {}\n",
            key.toml()
        )),
        Some(key) => t.push_str(&format!(
            "# Keep this file private (it is written readable by you only).\napi_key = {}\n",
            key.toml()
        )),
        None => t.push_str("# No API key: the server needs none.\n"),
    }
    t.push_str(&format!(
        "# The model Butler talks to (BUTLER_MODEL does not override a model set here).\nmodel = {}\n\n",
        quote(&a.model)
    ));

    t.push_str(&format!(
        "[agent]\n# Your time zone (an IANA name): the default for everyone; each person can set their own with\n\
         # /timezone.\ntimezone = {}\n\n",
        quote(&a.timezone)
    ));

    if let Some(e) = &a.embeddings {
        t.push_str(
            "[memory.embeddings]\n# Recall by meaning: each memory and chat message is sent to this embedding model.\n\
             # A new model re-embeds in the background; `butler memory reembed` shows the progress.\n",
        );
        t.push_str(&format!("base_url = {}\nmodel = {}\n", quote(&e.base_url), quote(&e.model)));
        if let Some(key) = &e.api_key {
            t.push_str(&format!("api_key = {}\n", key.toml()));
        }
        t.push('\n');
    }

    for (name, init) in crate::channels::builtin().init_sections() {
        match &a.telegram {
            // The one channel `init` asks about: its section filled in.
            Some(tg) if name == "telegram" => {
                t.push_str("[channels.telegram]\n# The bot's token from @BotFather. People who write to the bot pair with `butler pair`.\n");
                t.push_str(&format!("token = {}\n", tg.token.toml()));
                if let Some(url) = &tg.api_url {
                    t.push_str(&format!("# The Bot API server.\napi_url = {}\n", quote(url)));
                }
                t.push('\n');
            }
            _ => t.push_str(init),
        }
    }
    t.push_str(
        "# The database and the workspaces live in the data dir: $BUTLER_DATA_DIR, else\n\
         # $XDG_DATA_HOME/butler, else ~/.local/share/butler. For Postgres instead:\n\
         # [database]\n# url = \"postgres://butler:password@127.0.0.1:5432/butler\"\n",
    );
    t
}

/// Writes `text` to `path` (its folder created), readable by the owner only. `replace`: the
/// person said yes to replacing an existing file.
pub(super) fn write(path: &Path, text: &str, replace: bool) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if replace {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answers(key: Option<Stored>, telegram: bool) -> Answers {
        Answers {
            provider: ProviderKind::Openai,
            base_url: Some("http://127.0.0.1:11434/v1".into()),
            api_key: key,
            model: "llama\"3".into(),
            timezone: "Asia/Tokyo".into(),
            telegram: telegram.then_some(Telegram { token: Stored::Env("TELEGRAM_BOT_TOKEN"), api_url: None }),
            embeddings: None,
        }
    }

    #[test]
    fn the_written_file_parses_back_to_the_answers() {
        let env = crate::config::Env::from_pairs([("OPENAI_API_KEY", "sk-env"), ("TELEGRAM_BOT_TOKEN", "1:tg")]);
        let cases = [
            (answers(None, false), None, false),
            (answers(Some(Stored::Value("sk-\"odd\\key".into())), true), Some("sk-\"odd\\key"), true),
            (answers(Some(Stored::Env("OPENAI_API_KEY")), false), Some("sk-env"), false),
        ];
        for (a, key, telegram) in cases {
            let text = text(&a);
            let cfg = crate::config::parse_str(&text, "init", &env).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(cfg.llm.model, "llama\"3");
            assert_eq!(cfg.agent.timezone, "Asia/Tokyo");
            assert_eq!(cfg.llm.base_url.as_deref(), Some("http://127.0.0.1:11434/v1"));
            assert_eq!(cfg.llm.api_key.as_ref().map(|k| k.expose()), key, "{text}");
            assert_eq!(cfg.channels.platforms.contains_key("telegram"), telegram, "{text}");
            crate::app::check_config(&cfg).unwrap_or_else(|e| panic!("{e}\n{text}"));
        }
    }
}
