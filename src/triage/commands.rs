//! Slash commands, the same on every channel: parsed here, answered by triage without the model.

use chrono::{TimeZone, Utc};
use chrono_tz::Tz;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    New,
    Stop,
    Status,
    WhoAmI,
    /// A slash word Butler does not know: it goes to the agent as text.
    Unknown,
}

pub const HELP: &str = "Commands:\n\
/help - this list\n\
/new - start a fresh conversation\n\
/stop - stop the reply being written\n\
/status - session, model, and today's usage\n\
/whoami - who Butler thinks you are";

/// Parses `/cmd`, `/cmd@botname` and `/cmd args`; `None` for ordinary text.
pub fn parse_command(text: &str) -> Option<Command> {
    let word = text.trim_start().strip_prefix('/')?.split_whitespace().next()?;
    let name = word.split('@').next().unwrap_or(word).to_ascii_lowercase();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    Some(match name.as_str() {
        "help" | "start" => Command::Help,
        "new" | "reset" => Command::New,
        "stop" => Command::Stop,
        "status" => Command::Status,
        "whoami" => Command::WhoAmI,
        _ => Command::Unknown,
    })
}

/// Midnight today in `zone`, as Unix milliseconds (UTC if the zone is unknown).
pub fn start_of_day_ms(zone: &str) -> i64 {
    let tz: Tz = zone.parse().unwrap_or(chrono_tz::UTC);
    let now = Utc::now().with_timezone(&tz);
    let midnight = now.date_naive().and_hms_opt(0, 0, 0).expect("midnight exists");
    tz.from_local_datetime(&midnight).earliest().map_or(now.timestamp_millis(), |t| t.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_table() {
        let cases = [
            ("/help", Some(Command::Help)),
            ("/start", Some(Command::Help)),
            ("  /new", Some(Command::New)),
            ("/stop@butler_bot", Some(Command::Stop)),
            ("/STATUS now", Some(Command::Status)),
            ("/whoami", Some(Command::WhoAmI)),
            ("/weather Paris", Some(Command::Unknown)),
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
