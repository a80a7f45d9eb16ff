//! Slash commands, the same on every channel: parsed here, answered by triage without the model.

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    New,
    Stop,
    Status,
    /// `/tools`: the tools the agent has, by source (built-in, each MCP server, skills).
    Tools,
    WhoAmI,
    /// `/pair`, `/pair list`, `/pair approve CODE`, `/pair deny CODE` (owners).
    Pair(PairCommand),
    /// `/link` asks for a code; `/link CODE` (from the other account) redeems it.
    Link(Option<String>),
    /// `/schedules`: the sender's scheduled jobs and their last runs.
    Schedules,
    /// `/memory`, `/memory search WORDS`, `/memory forget ID`.
    Memory(MemoryCommand),
    /// `/approve ID`, `/deny ID`: the text fallback for approval buttons.
    Approve(Option<String>),
    Deny(Option<String>),
    /// `/tasks`: the sender's background tasks.
    Tasks,
    /// `/cancel ID`: stop a background task (or a helper) by id.
    Cancel(Option<String>),
    /// `/timezone` shows the sender's time zone; `/timezone Europe/Berlin` sets it.
    Timezone(Option<String>),
    /// `/usage`: what the sender spent today, this week and this month, by model.
    Usage,
    /// `/compact`: fold the older part of the conversation into its summary now.
    Compact,
    /// `/sessions`: the sender's recent conversations on every channel, numbered.
    Sessions,
    /// `/resume N`: continue conversation N of `/sessions` in this chat (`None`: no number).
    Resume(Option<usize>),
    /// A slash word Butler does not know: it goes to the agent as text.
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryCommand {
    List,
    Search(String),
    Forget(i64),
    /// `/memory pin ID` (always known in new private sessions), `/memory unpin ID`.
    Pin(i64, bool),
    Usage,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PairCommand {
    List,
    Approve(String),
    Deny(String),
    /// Anything else: show how to use it.
    Usage,
}

pub const HELP: &str = "Commands:\n\
/help - this list\n\
/new - start a fresh conversation\n\
/compact - fold the older part of this conversation into its summary now\n\
/sessions - your recent conversations, on every channel\n\
/resume N - continue conversation N of /sessions in this chat\n\
/stop - stop the reply being written and this conversation's helpers and background tasks\n\
/status - session, model, and today's usage\n\
/usage - what you spent today, this week and this month, by model, and the limits\n\
/tools - the tools I can use: built-in, each MCP server (and its state), skills\n\
/whoami - who Butler thinks you are\n\
/schedules - your scheduled jobs and their last runs\n\
/memory - what I remember about you (`/memory search WORDS`, `/memory forget ID`, `/memory pin ID` to always know it)\n\
/link - link another chat account to this one (then send `/link CODE` from the other account)\n\
/pair - list, approve or deny pairing requests (owner)\n\
/approve ID, /deny ID - answer an approval request\n\
/tasks - your background tasks (and recent ones)\n\
/cancel ID - stop a background task (and the rest of its chain)\n\
/timezone ZONE - your time zone, e.g. `/timezone Europe/Berlin` (reminders and briefings use it)";

/// Parses `/cmd`, `/cmd@botname` and `/cmd args`; `None` for ordinary text.
pub fn parse_command(text: &str) -> Option<Command> {
    let mut words = text.trim_start().strip_prefix('/')?.split_whitespace();
    let word = words.next()?;
    let name = word.split('@').next().unwrap_or(word).to_ascii_lowercase();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let arg = words.next().map(str::to_string);
    Some(match name.as_str() {
        "help" | "start" => Command::Help,
        "new" | "reset" => Command::New,
        "stop" => Command::Stop,
        "status" => Command::Status,
        "tools" => Command::Tools,
        "whoami" => Command::WhoAmI,
        "schedules" => Command::Schedules,
        "memory" | "memories" => Command::Memory(match arg.as_deref() {
            None | Some("list") => MemoryCommand::List,
            Some("search") => {
                let rest: Vec<&str> = words.collect();
                if rest.is_empty() {
                    MemoryCommand::Usage
                } else {
                    MemoryCommand::Search(rest.join(" "))
                }
            }
            Some("forget") => match words.next().and_then(|w| w.parse().ok()) {
                Some(id) => MemoryCommand::Forget(id),
                None => MemoryCommand::Usage,
            },
            Some(verb @ ("pin" | "unpin")) => match words.next().and_then(|w| w.parse().ok()) {
                Some(id) => MemoryCommand::Pin(id, verb == "pin"),
                None => MemoryCommand::Usage,
            },
            _ => MemoryCommand::Usage,
        }),
        "link" => Command::Link(arg),
        "approve" => Command::Approve(arg),
        "deny" => Command::Deny(arg),
        "tasks" => Command::Tasks,
        "cancel" => Command::Cancel(arg),
        "timezone" | "tz" => Command::Timezone(arg),
        "usage" | "cost" | "costs" => Command::Usage,
        "compact" => Command::Compact,
        "sessions" | "conversations" => Command::Sessions,
        "resume" => Command::Resume(arg.and_then(|a| a.parse().ok())),
        "pair" => Command::Pair(match (arg.as_deref(), words.next()) {
            (None | Some("list"), _) => PairCommand::List,
            (Some("approve"), Some(code)) => PairCommand::Approve(code.to_string()),
            (Some("deny"), Some(code)) => PairCommand::Deny(code.to_string()),
            _ => PairCommand::Usage,
        }),
        _ => Command::Unknown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_table() {
        let some = |s: &str| Some(s.to_string());
        let cases = [
            ("/help", Some(Command::Help)),
            ("/start", Some(Command::Help)),
            ("  /new", Some(Command::New)),
            ("/compact", Some(Command::Compact)),
            ("/sessions", Some(Command::Sessions)),
            ("/conversations@butler_bot", Some(Command::Sessions)),
            ("/resume 2", Some(Command::Resume(Some(2)))),
            ("/RESUME 10 please", Some(Command::Resume(Some(10)))),
            ("/resume", Some(Command::Resume(None))),
            ("/resume two", Some(Command::Resume(None))),
            ("/resume -1", Some(Command::Resume(None))),
            ("/usage", Some(Command::Usage)),
            ("/cost", Some(Command::Usage)),
            ("/memory pin 12", Some(Command::Memory(MemoryCommand::Pin(12, true)))),
            ("/memory unpin 12", Some(Command::Memory(MemoryCommand::Pin(12, false)))),
            ("/memory pin twelve", Some(Command::Memory(MemoryCommand::Usage))),
            ("/stop@butler_bot", Some(Command::Stop)),
            ("/STATUS now", Some(Command::Status)),
            ("/whoami", Some(Command::WhoAmI)),
            ("/tools", Some(Command::Tools)),
            ("/link", Some(Command::Link(None))),
            ("/link@butler_bot K7QX-M2PD", Some(Command::Link(some("K7QX-M2PD")))),
            ("/pair", Some(Command::Pair(PairCommand::List))),
            ("/pair list", Some(Command::Pair(PairCommand::List))),
            ("/pair approve K7QX-M2PD", Some(Command::Pair(PairCommand::Approve("K7QX-M2PD".into())))),
            ("/pair deny abcd", Some(Command::Pair(PairCommand::Deny("abcd".into())))),
            ("/pair approve", Some(Command::Pair(PairCommand::Usage))),
            ("/pair dance", Some(Command::Pair(PairCommand::Usage))),
            ("/approve a1b2", Some(Command::Approve(some("a1b2")))),
            ("/deny", Some(Command::Deny(None))),
            ("/weather Paris", Some(Command::Unknown)),
            ("/memory", Some(Command::Memory(MemoryCommand::List))),
            ("/memory search green tea", Some(Command::Memory(MemoryCommand::Search("green tea".into())))),
            ("/memory forget 12", Some(Command::Memory(MemoryCommand::Forget(12)))),
            ("/memory forget twelve", Some(Command::Memory(MemoryCommand::Usage))),
            ("/memory search", Some(Command::Memory(MemoryCommand::Usage))),
            ("hello /stop", None),
            ("/", None),
            ("/path/to/file", None),
            ("// comment", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_command(input), want, "{input}");
        }
    }
}
